// Removing what a benchmark made right after the processes that used it were
// killed: the kernel releases a dead tree's mount namespace a little later, so
// a subvolume or mount can stay busy for a moment. These retry for up to ~5 s.
import { setTimeout as sleep } from 'node:timers/promises';
import { deleteSubvolume } from '../src/host/btrfs.js';
import { isMounted } from '../src/host/mounts.js';
import { run } from '../src/host/run.js';

const ATTEMPTS = 10;
const PAUSE_MS = 500;

export async function deleteWithRetry(subvolume: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await deleteSubvolume(subvolume);
      return;
    } catch (err) {
      if (attempt >= ATTEMPTS) throw err;
      await sleep(PAUSE_MS);
    }
  }
}

export async function unmountWithRetry(where: string): Promise<void> {
  for (let attempt = 1; await isMounted(where); attempt++) {
    const res = await run('umount', ['--', where], { allowFailure: true });
    if (res.exitCode === 0) return;
    if (attempt >= ATTEMPTS) throw new Error(`umount ${where}: ${res.stderr.trim()}`);
    await sleep(PAUSE_MS);
  }
}
