// vitest's global set-up for the projects whose tests run Grove's compiled
// programs (main/bin/grove, build/host/start-helper.sh): compiles them first,
// when a source changed (build/compile.sh). The programs would compile on
// their own, but not where a test runs them as an unprivileged user (who may
// not write dist/), and a test's time-out would count the compile.
import { execa } from 'execa';
import { groveFile } from '../src/protocol/grove-files.js';

export async function setup(): Promise<void> {
  await execa(groveFile('build/compile.sh'), { stdio: 'inherit' });
}
