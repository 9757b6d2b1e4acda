// The host's /sys without its submounts (cgroups, debugfs, …): what a branch
// in a user namespace gets as /sys (crun binds the host's, read-only) and what
// a restore of such a branch binds there again. One per helper run directory,
// kept while the helper runs; a bind that still has submounts (a recursive
// one) cannot be restored in a user namespace.
import { mkdir } from 'node:fs/promises';
import { isMounted } from './mounts.js';
import { run } from './run.js';

export async function ensureSysView(target: string): Promise<void> {
  if (await isMounted(target)) return;
  await mkdir(target, { recursive: true, mode: 0o755 });
  await run('mount', ['--bind', '--', '/sys', target]);
  await run('mount', ['--make-private', '--', target]);
}
