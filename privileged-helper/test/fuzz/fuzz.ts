// Runs one fuzz target: `tsx privileged-helper/test/fuzz/fuzz.ts <target> [seconds]`.
// Exits 1 when an input fails (it is saved in the target's corpus folder), 0
// when nothing did. GROVE_FUZZ_SEED sets fast-check's seed; what is drawn also
// depends on what the code reached, so a failure is replayed from its saved
// file, not its seed. See docs/fuzzing.md.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fuzz, type FuzzTarget } from './engine.js';
import { addressTarget } from './targets/address.js';
import { gateHttpTarget } from './targets/gate-http.js';
import { gateIpcTarget } from './targets/gate-ipc.js';
import { rfbTarget } from './targets/rfb.js';

const TARGETS: Record<string, FuzzTarget> = {
  [rfbTarget.name]: rfbTarget,
  [gateHttpTarget.name]: gateHttpTarget,
  [addressTarget.name]: addressTarget,
  [gateIpcTarget.name]: gateIpcTarget,
};

const [name, seconds = '60'] = process.argv.slice(2);
const target = name ? TARGETS[name] : undefined;
if (!target || !(Number(seconds) > 0)) {
  console.error(`usage: fuzz.ts <${Object.keys(TARGETS).join('|')}> [seconds]`);
  process.exit(2);
}
const corpus = path.join(path.dirname(fileURLToPath(import.meta.url)), 'corpus', target.name);
const seed = process.env.GROVE_FUZZ_SEED ? Number(process.env.GROVE_FUZZ_SEED) : Date.now() % 2 ** 31;
const ok = await fuzz(target, { seconds: Number(seconds), corpus, seed, log: (line) => console.log(line) });
process.exit(ok ? 0 : 1);
