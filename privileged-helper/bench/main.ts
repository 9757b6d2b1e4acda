// npm run bench -- [--quick] [--json] [--out FILE] [--only SECTION]: the
// benchmark (bench.ts), without the grove CLI around it.
import { parseArgs } from 'node:util';
import { benchSection, runBench } from './bench.js';

const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, json: { type: 'boolean', default: false }, out: { type: 'string' }, only: { type: 'string' } },
  strict: true,
});
let only;
try {
  only = values.only === undefined ? undefined : benchSection(values.only);
} catch (err) {
  process.stderr.write(`${(err as Error).message}\n`);
  process.exit(2);
}
process.exitCode = await runBench({ quick: values.quick!, json: values.json!, out: values.out, only });
