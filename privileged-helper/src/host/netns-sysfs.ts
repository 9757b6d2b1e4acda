// A sysfs of a branch's own network namespace, mounted on the host: what a
// branch in a user namespace sees as /sys (crun binds it there, and a restore
// binds it again). A sysfs lists the network devices of the namespace it was
// mounted from, and only the owner of that namespace (the host, which made
// it) may mount one: the branch sees its lo and eth0, not the host's devices
// nor the other branches' veths. Under the roots directory, which a
// restore's user namespace can reach.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { isMounted } from './mounts.js';
import { run } from './run.js';

/** Where the sysfs of the network namespace at `netnsPath` (/run/netns/NAME) is mounted, in `dir`. */
export function netnsSysfsPath(dir: string, netnsPath: string): string {
  return path.join(dir, `${path.basename(netnsPath)}.sys`);
}

/**
 * Mounts the namespace's sysfs at `target` (read-only, private: nothing
 * propagates to or from it; a fresh sysfs has no submounts, so a restore in
 * a user namespace may bind it), unless something is mounted there already.
 * nsenter enters the network namespace only: the mount lands in the helper's.
 */
export async function mountNetnsSysfs(netnsPath: string, target: string): Promise<void> {
  if (await isMounted(target)) return;
  await mkdir(target, { recursive: true, mode: 0o755 });
  await run('nsenter', [`--net=${netnsPath}`, '--', 'mount', '-t', 'sysfs', '-o', 'ro,nosuid,nodev,noexec,private', '--', 'sysfs', target]);
}
