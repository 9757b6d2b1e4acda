// What every branch's network looks like from inside, the same in each (so a
// restored fork child needs nothing rewritten in its processes): Grove's gate
// at a fixed address and name, which the branch's firewall DNATs to its own
// veth peer (netns.ts), and the proxy variables that point apps at it.

/** Inside every branch, the gate answers on this fixed address (DNAT'ed to the branch's own veth peer). */
export const GATE_ADDRESS = '169.254.77.1';
export const GATE_PORT = 3128;
/** The name apps inside a branch use for the gate (written to the branch's /etc/hosts). */
export const GATE_NAME = 'grove-gate';
export const GATE_URL = `http://${GATE_NAME}:${GATE_PORT}`;

const NO_PROXY = 'localhost,127.0.0.1,::1';

/** The proxy variables of every process in a branch (oci-spec.ts's BASE_ENV carries them). */
export const PROXY_ENV: readonly string[] = [
  `http_proxy=${GATE_URL}`,
  `https_proxy=${GATE_URL}`,
  `HTTP_PROXY=${GATE_URL}`,
  `HTTPS_PROXY=${GATE_URL}`,
  `no_proxy=${NO_PROXY}`,
  `NO_PROXY=${NO_PROXY}`,
];
