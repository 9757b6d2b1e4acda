// The helper outlives whoever started it. From ./start.sh it runs in a session
// of its own (setsid), but it would still sit in the starter's cgroups: a
// terminal's or a login's, whose end (or whose memory limit) takes everything
// in them along. So, unless systemd runs it (its unit's cgroup is its own),
// it moves itself at start into cgroups of its own in every cgroup v1
// hierarchy where it is not at the top: grove-helper-INSTANCE, beside (not
// under) the instance's branch groups, which start-up reconciliation sweeps.
// In the cpu hierarchy it always has that group, under systemd too, weighted
// far above the branches (preferHelperCpu).
import { mkdir, readdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CGROUP_ROOT } from './cgroups.js';
import { whenAbsent } from './absent.js';
import { programStarter } from './run.js';

export function helperCgroupName(instance: string): string {
  return `grove-helper-${instance}`;
}

/** A cgroup v1 hierarchy's line in /proc/PID/cgroup: its mount directory and the process's path in it. */
interface Membership {
  hierarchy: string;
  path: string;
}

/** The v1 hierarchies of /proc/self/cgroup (v2's '0::' line is left to systemd), by their directory under /sys/fs/cgroup. */
export function parseMemberships(procCgroup: string): Membership[] {
  return procCgroup
    .split('\n')
    .map((line) => /^\d+:([^:]+):(.*)$/.exec(line.trim()))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ hierarchy: m[1]!.replace(/^name=/, ''), path: m[2]! }));
}

/** The v1 hierarchies where the helper is neither at the top nor in its own group: its starter's (none under systemd, whose unit is its own). */
async function starterMemberships(instance: string): Promise<Membership[]> {
  if (process.env.INVOCATION_ID) return [];
  const own = `/${helperCgroupName(instance)}`;
  return parseMemberships(await readFile('/proc/self/cgroup', 'utf8')).filter((m) => m.path !== '/' && m.path !== own);
}

export async function detachFromStarter(instance: string, log: (line: string) => void): Promise<void> {
  for (const m of await starterMemberships(instance)) {
    const dir = path.join(CGROUP_ROOT, m.hierarchy, helperCgroupName(instance));
    try {
      await mkdir(dir, { recursive: true });
      await joinCgroup(dir);
    } catch (err) {
      log(`could not leave the starter's ${m.hierarchy} cgroup ${m.path}: ${(err as Error).message}`);
    }
  }
}

/**
 * The helper's cpu weight (cgroup v1 cpu.shares) against the instance's
 * branches, whose parent group has the default 1024. What the helper runs is
 * what a person waits for: a fork's CRIU dump and restores and the dozens of
 * short programs around them (its action program, tar, nsenter, nft, btrfs).
 * With a branch keeping both cores busy, each of those programs waited for
 * the CPU as one equal against all the branches, and a fork took many times
 * as long (docs/fork-profile.md, "A fork under full CPU load"). The
 * helper works only when asked, so the branches lose nothing while it idles,
 * and unlike a branch parent marked cpu.idle, they still get their share
 * against the rest of the host.
 */
export const HELPER_CPU_SHARES = 16384;

/** Moves the helper into its own cpu group at HELPER_CPU_SHARES; what it starts from then on inherits it. */
export async function preferHelperCpu(instance: string, log: (line: string) => void): Promise<void> {
  const dir = path.join(CGROUP_ROOT, 'cpu', helperCgroupName(instance));
  try {
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'cpu.shares'), String(HELPER_CPU_SHARES));
    await joinCgroup(dir);
  } catch (err) {
    log(`could not give the helper its own cpu group ${dir}: ${(err as Error).message}; a busy branch will slow its forks`);
  }
}

/** Moves the helper into DIR, and grove-spawn, which starts its programs (host/run.ts), if it runs already. */
async function joinCgroup(dir: string): Promise<void> {
  for (const pid of [process.pid, programStarter().pid]) if (pid !== null) await writeFile(path.join(dir, 'cgroup.procs'), String(pid));
}

/** Removes the (stopped) helper's own groups: purge. */
export async function removeHelperCgroups(instance: string): Promise<void> {
  // No cgroup file system mounted: the helper made no groups.
  for (const hierarchy of await readdir(CGROUP_ROOT).catch(() => [] as string[])) {
    await rmdir(path.join(CGROUP_ROOT, hierarchy, helperCgroupName(instance))).catch(whenAbsent(undefined));
  }
}

/** For grove doctor: is the helper its own session and in no one else's cgroups? */
export async function starterTies(instance: string): Promise<string[]> {
  const ties: string[] = [];
  const stat = await readFile('/proc/self/stat', 'utf8');
  const session = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[3]);
  if (session !== process.pid) ties.push(`it shares session ${session} with whoever started it`);
  for (const m of await starterMemberships(instance)) ties.push(`it is in its starter's ${m.hierarchy} cgroup ${m.path}`);
  return ties;
}
