// The CLI section of the benchmark (issue 43): how long a call of the grove
// CLI takes, as a person or a script makes it. main/bin/grove, its check
// that the compiled CLI is fresh included, asks the bench's helper who the
// caller is (whoami: one small request, so nearly all the time is the
// CLI's own), timed from the spawn to the exit. One call first, untimed: a person who calls grove
// finds its files in the page cache.
import { execa } from 'execa';
import { groveFile } from '../src/protocol/grove-files.js';
import type { CliCalls } from './result-schema.js';
import { percentiles } from './stats.js';

const GROVE = groveFile('main/bin/grove');

export async function measureCliCalls(socketPath: string, samples: number, log: (msg: string) => void): Promise<CliCalls> {
  const whoami = () => execa(GROVE, ['--socket', socketPath, 'whoami']);
  await whoami();
  const times: number[] = [];
  const errors: string[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    try {
      await whoami();
      times.push(performance.now() - t0);
    } catch (err) {
      errors.push((err as Error).message);
    }
  }
  const whoamiMs = percentiles(times);
  log(`grove whoami: p50 ${whoamiMs.p50} ms, p95 ${whoamiMs.p95} ms (${errors.length} failed)`);
  return { whoamiMs, samples, errors };
}
