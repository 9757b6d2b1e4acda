// Fuzz target: the gate's address literal parser (egress/address.ts) and the
// refusal built on it (egress/policy.ts forbiddenReason). An input is one
// literal as a branch may write it in a CONNECT or a URL. Properties:
// - nothing throws;
// - normalization is idempotent, and a literal is judged as its normal form is;
// - a literal that Node's URL parser reads as an address is read as the same
//   address (oracle.ts), and when that address reaches loopback, this host,
//   Grove's subnet, link-local or multicast, the gate refuses it before anyone
//   is asked.
import { canonicalAddress, formatAddress, parseAddress } from '../../../src/egress/address.js';
import { groveRanges } from '../../../src/egress/gate-proxy.js';
import { forbiddenReason } from '../../../src/egress/policy.js';
import { addressLiteral, FUZZ_SUBNET } from '../grammar/addresses.js';
import type { FuzzTarget } from '../engine.js';
import { namedAddress, reachesRefused, refusedAddresses } from '../oracle.js';

const grove = groveRanges(FUZZ_SUBNET);
const refused = refusedAddresses(FUZZ_SUBNET);

export const addressTarget: FuzzTarget = {
  name: 'address',
  steers: (url) => /\/privileged-helper\/src\/egress\/(address|policy)\.ts$/.test(url),
  maxBytes: 256,
  grammar: addressLiteral.map((text) => Buffer.from(text, 'latin1')),
  tokens: [
    '.',
    ':',
    '::',
    '0x',
    '0X',
    '0',
    '00',
    'ffff',
    'FFFF',
    '64:ff9b',
    '2002',
    '%',
    '%eth0',
    '[',
    ']',
    ' ',
    '255',
    '256',
    '4294967295',
    '4294967296',
    '127',
    '1',
  ].map((t) => Buffer.from(t, 'latin1')),
  setUp: async () => undefined,
  tearDown: async () => undefined,
  run: async (input) => {
    const text = input.toString('latin1');
    const parsed = parseAddress(text);
    const canonical = canonicalAddress(text);
    const why = forbiddenReason(text, grove);
    if ((parsed === null) !== (canonical === null))
      throw new Error(`${show(text)}: parsed ${parsed ? 'as an address' : 'as a name'} but its canonical text is ${canonical}`);
    if (canonical !== null) {
      const again = canonicalAddress(canonical);
      if (again !== canonical) throw new Error(`normalization is not idempotent: ${show(text)} → ${canonical} → ${again}`);
      const whyCanonical = forbiddenReason(canonical, grove);
      if ((why === null) !== (whyCanonical === null)) {
        throw new Error(`${show(text)} is judged "${why ?? 'allowed'}" but its canonical form ${canonical} "${whyCanonical ?? 'allowed'}"`);
      }
    }
    const named = namedAddress(text);
    if (!named) return;
    if (!parsed) throw new Error(`${show(text)} names ${named.text} (Node's URL parser), but the gate takes it for a host name`);
    const read = formatAddress(parsed);
    const readAs = new URL(`http://${parsed.family === 6 ? `[${read}]` : read}/`).hostname.replace(/^\[(.*)\]$/, '$1');
    if (readAs !== named.text) throw new Error(`${show(text)} names ${named.text} (Node's URL parser), but the gate reads ${read}`);
    if (reachesRefused(named, refused) && why === null)
      throw new Error(`${show(text)} reaches ${named.text}, which the gate must refuse, but it would ask a person`);
  },
};

function show(text: string): string {
  return JSON.stringify(text);
}
