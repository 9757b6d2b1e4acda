// npm run bench -- [--quick] [--json] [--out FILE]: the benchmark (bench.ts),
// without the grove CLI around it.
import { parseArgs } from 'node:util';
import { runBench } from './bench.js';

const { values } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, json: { type: 'boolean', default: false }, out: { type: 'string' } },
  strict: true,
});
process.exitCode = await runBench({ quick: values.quick!, json: values.json!, out: values.out });
