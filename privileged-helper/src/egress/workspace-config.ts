// Points a branch's apps at the gate, written into its root before it starts
// (next to its identity: /etc/hostname, /etc/machine-id, /etc/hosts):
//   /etc/hosts                    grove-gate → the fixed gate address (the same in every branch:
//                                 the branch's firewall DNATs it to its own veth peer, so a
//                                 restored fork child needs nothing rewritten in its processes)
//   /etc/environment              http_proxy… for PAM sessions
//   /etc/profile.d/grove-proxy.sh http_proxy… for login shells
//   /etc/chromium.d/grove-proxy   --proxy-server for Debian's chromium wrapper (it sources /etc/chromium.d/*)
// The files are written without following symlinks a branch may have planted.
import { readInside, writeInside, type FileOwner } from '../host/rootfs-files.js';
import { GATE_ADDRESS, GATE_NAME, GATE_URL, PROXY_ENV } from '../host/branch-network.js';

const MARK = '# grove-egress';

export function proxyFiles(hostsBefore: string, environmentBefore: string): Record<string, string> {
  const withoutOurs = (text: string) =>
    text
      .split('\n')
      .filter((l) => !l.includes(MARK) && l !== '')
      .join('\n');
  const hosts = `${withoutOurs(hostsBefore)}\n${GATE_ADDRESS}\t${GATE_NAME}\t${MARK}\n`.replace(/^\n/, '');
  const environment = `${withoutOurs(environmentBefore)}\n${PROXY_ENV.map((v) => `${v} ${MARK}`).join('\n')}\n`.replace(/^\n/, '');
  return {
    'etc/hosts': hosts,
    'etc/environment': environment,
    'etc/profile.d/grove-proxy.sh': `${MARK}: every connection out of this branch goes through Grove's gate.\n${PROXY_ENV.map((v) => `export ${v}`).join('\n')}\n`,
    'etc/chromium.d/grove-proxy': `${MARK}: sourced by /usr/bin/chromium.\nCHROMIUM_FLAGS="$CHROMIUM_FLAGS --proxy-server=${GATE_URL}"\n`,
  };
}

/** Writes the proxy configuration into a (not running) branch root; call it after writeIdentity. */
export async function writeProxyConfig(rootfs: string, owner: FileOwner): Promise<void> {
  const hostsBefore = await readInside(rootfs, 'etc/hosts');
  const envBefore = await readInside(rootfs, 'etc/environment');
  for (const [rel, text] of Object.entries(proxyFiles(hostsBefore, envBefore))) await writeInside(rootfs, rel, text, owner);
}

/** For tests and diagnostics: is the branch root configured? */
export async function hasProxyConfig(rootfs: string): Promise<boolean> {
  const text = await readInside(rootfs, 'etc/chromium.d/grove-proxy');
  return text.includes(GATE_URL);
}
