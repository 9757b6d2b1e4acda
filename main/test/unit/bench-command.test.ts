// `grove bench` runs the bench as a program of its own: what it is given
// reaches the bench, and what the bench says and its exit code come back.
// grove runs unprivileged here (as nobody when the tests run as root), so
// the bench refuses before it measures anything (it needs root), even if an
// option were lost on the way.
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';

const GROVE = path.resolve(import.meta.dirname, '../../bin/grove');
const AS_NOBODY = ['--reuid=65534', '--regid=65534', '--clear-groups'];

function groveUnprivileged(args: string[]) {
  const [file, argv] = process.getuid?.() === 0 ? ['setpriv', [...AS_NOBODY, GROVE, ...args]] : [GROVE, args];
  return execa(file, argv, { reject: false, timeout: 60_000 });
}

describe('grove bench', () => {
  it("passes its options to the bench program and returns the bench's words and exit code", async () => {
    const [refused, notRoot] = await Promise.all([
      groveUnprivileged(['bench', '--quick', '--only', 'no-such-section']),
      groveUnprivileged(['bench', '--quick']),
    ]);
    expect([refused.exitCode, refused.stdout, refused.stderr]).toEqual([
      2,
      '',
      '--only takes one of: fork, fanout, read-latency, computer-use, cli, cage, profile, own-work, quota, agent-loop, merge',
    ]);
    expect(notRoot.exitCode).toBe(1);
    expect(notRoot.stderr).toMatch(/the benchmark runs as root/);
  }, 60_000);
});
