// A branch's resource limits, with the cgroup v1 controllers this host has
// (memory, pids, cpu, devices, and the freezer for standbys; its cgroup2
// hierarchy is empty and Debian's crun cannot manage cgroups here, see crun.ts). Each branch has one group per
// controller, /sys/fs/cgroup/CONTROLLER/grove-INSTANCE/BRANCH: its init joins
// them before it starts (crun and `criu restore` are launched inside them by
// native/grove-enter.c), and so does every command exec'd into it, so nothing
// a branch runs escapes its limits. A runaway branch (a memory hog, a fork
// bomb) hits its own ceiling: the kernel's OOM killer picks inside the branch,
// forks fail with EAGAIN, and the counters below say what happened.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { readFile, readdir, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { whenAbsent } from './absent.js';
import type { BranchLimits } from '../protocol/entities.js';
import { GroveError } from '../protocol/wire.js';

export const CGROUP_ROOT = '/sys/fs/cgroup';
export const CONTROLLERS = ['memory', 'pids', 'cpu', 'devices'] as const;
export type Controller = (typeof CONTROLLERS)[number];

/**
 * What lets 16 desktops at rest share this machine's memory, with room for
 * an agent's build; and a disk limit (not a cgroup's: the pool's
 * quota, host/disk-quota.ts) that leaves a 40 GiB pool to several branches.
 * The registry gives branches older than disk limits the same one (db.ts).
 */
export const DEFAULT_LIMITS: BranchLimits = { memoryBytes: 2 * 2 ** 30, pids: 2048, cpuWeight: 100, diskBytes: 10 * 2 ** 30 };

/**
 * The devices a branch may open (c = character device, major:minor): the
 * usual pseudo devices and terminals. Nothing else, whatever device nodes a
 * root filesystem or a restored process holds (no block device of the host,
 * the pool's loop device included).
 */
export const ALLOWED_DEVICES = [
  'c 1:3 rwm', // null
  'c 1:5 rwm', // zero
  'c 1:7 rwm', // full
  'c 1:8 rwm', // random
  'c 1:9 rwm', // urandom
  'c 5:0 rwm', // tty
  'c 5:1 rwm', // console
  'c 5:2 rwm', // ptmx
  'c 136:* rwm', // the branch's own pseudo terminals
];

/** The name shared by a branch's groups under every controller: grove-INSTANCE/BRANCH. */
export function cgroupName(instance: string, branchId: string): string {
  return `grove-${instance}/${branchId}`;
}

export function cgroupDirs(name: string): string[] {
  return CONTROLLERS.map((c) => path.join(CGROUP_ROOT, c, name));
}

const dir = (c: Controller | typeof FREEZER, name: string) => path.join(CGROUP_ROOT, c, name);

/**
 * The v1 freezer, which only a standby has a group under (branches/standby.ts):
 * made beside its other groups and removed with them (removeCgroups).
 */
const FREEZER = 'freezer';
const FREEZE_WAIT_MS = 10_000;

/** Makes the branch's freezer group (idempotent); its processes join it by being restored into it. */
export function createFreezer(name: string): string {
  mkdirSync(dir(FREEZER, name), { recursive: true });
  return dir(FREEZER, name);
}

/** Stops every process of the group where it is, and resolves once the kernel says all are stopped. */
export async function freeze(name: string): Promise<void> {
  const state = path.join(dir(FREEZER, name), 'freezer.state');
  await writeFile(state, 'FROZEN');
  for (const deadline = Date.now() + FREEZE_WAIT_MS; (await readOr(state, '')) !== 'FROZEN';) {
    if (Date.now() > deadline) throw new GroveError('E_HOST', `cgroup ${name} did not freeze within ${FREEZE_WAIT_MS / 1000} s`);
    await sleep(10);
  }
}

/** Lets the group's processes run again; a group without a freezer, or gone, has nothing to thaw. */
export async function thaw(name: string): Promise<void> {
  await writeFile(path.join(dir(FREEZER, name), 'freezer.state'), 'THAWED').catch(whenAbsent(undefined));
}

/**
 * Thaws the freezer group a process is in, if it is one of Grove's: a
 * frozen process does not act on SIGKILL until it is thawed.
 */
export async function thawGroupOf(pid: number): Promise<void> {
  const groups = await readOr(`/proc/${pid}/cgroup`, '');
  const group = /^\d+:freezer:\/(grove-[^\n]+)$/m.exec(groups)?.[1];
  if (group) await thaw(group);
}

/**
 * Where a restore runs while CRIU builds the tree: the branch's groups but its
 * cpu group, so CRIU works as the helper's own program does; the tree joins
 * the cpu group just before it resumes (native/grove-action.c, pre-resume).
 * Inside it, a restore competed with its source's busy loops as one branch
 * against another (docs/fork-profile.md, "A fork under full CPU load").
 */
export function restorePlacement(dirs: readonly string[]): { whileRestoring: string[]; cpu: string | undefined } {
  const isCpu = (d: string) => path.relative(CGROUP_ROOT, d).split(path.sep)[0] === 'cpu';
  return { whileRestoring: dirs.filter((d) => !isCpu(d)), cpu: dirs.find(isCpu) };
}

/**
 * Makes the branch's groups (idempotent) with its limits and the device allow
 * list. Synchronously, on purpose: a few writes to the kernel's own files, quick
 * in all, on the way of every child a fan-out makes at its turn; done
 * asynchronously, each waited for a core in libuv's pool while restores held
 * both. Nothing is charged to a new group yet, so no
 * write here waits on the kernel reclaiming memory.
 */
export function createCgroups(name: string, limits: BranchLimits): void {
  for (const c of CONTROLLERS) mkdirSync(dir(c, name), { recursive: true });
  writeFileSync(path.join(dir('devices', name), 'devices.deny'), 'a');
  for (const rule of ALLOWED_DEVICES) writeFileSync(path.join(dir('devices', name), 'devices.allow'), rule);
  const current = Number(readFileSync(memoryLimitFile(name), 'utf8'));
  for (const [file, value] of limitWrites(name, limits, existsSync(memswFile(name)), current)) {
    try {
      writeFileSync(file, value);
    } catch (err) {
      throw limitError(file, value, err);
    }
  }
}

/**
 * Sets the limits, live: a running branch gets them at once. Asynchronously:
 * a memory limit below what the branch uses makes the kernel reclaim before it
 * answers.
 */
export async function applyLimits(name: string, limits: BranchLimits): Promise<void> {
  const memsw = await exists(memswFile(name));
  const current = Number(await readOr(memoryLimitFile(name), '0'));
  for (const [file, value] of limitWrites(name, limits, memsw, current)) {
    try {
      await writeFile(file, value);
    } catch (err) {
      throw limitError(file, value, err);
    }
  }
}

const memoryLimitFile = (name: string) => path.join(dir('memory', name), 'memory.limit_in_bytes');
const memswFile = (name: string) => path.join(dir('memory', name), 'memory.memsw.limit_in_bytes');

/** The files and values that set the limits, in an order the kernel takes from a group whose memory limit is `currentMemoryBytes`. */
function limitWrites(name: string, limits: BranchLimits, hasMemsw: boolean, currentMemoryBytes: number): [string, string][] {
  const bytes = String(limits.memoryBytes);
  const writes: [string, string][] = [[memoryLimitFile(name), bytes]];
  // memsw (memory + swap) may never be below the memory limit: raise it first, lower it last.
  if (hasMemsw) writes[limits.memoryBytes > currentMemoryBytes ? 'unshift' : 'push']([memswFile(name), bytes]);
  writes.push([path.join(dir('pids', name), 'pids.max'), String(limits.pids)]);
  writes.push([path.join(dir('cpu', name), 'cpu.shares'), String(Math.max(2, Math.round((limits.cpuWeight * 1024) / 100)))]);
  return writes;
}

function limitError(file: string, value: string, err: unknown): GroveError {
  const e = err as NodeJS.ErrnoException;
  const why = e.code === 'EBUSY' ? 'the branch uses more than that now and cannot give it back' : e.message;
  return new GroveError('E_CONFLICT', `cannot set ${path.basename(file)} to ${value}: ${why}`);
}

export interface CgroupUsage {
  memoryBytes: number;
  /** What a dump of the branch writes out: its anonymous and shared memory (memory.stat total_rss + total_shmem). */
  dumpableBytes: number;
  /** Times the branch reached its memory limit. */
  memoryLimitHits: number;
  /** Processes the kernel's OOM killer ended inside the branch. */
  oomKills: number;
  pids: number;
  /** Forks refused because the branch reached its pids limit. */
  pidsRefused: number;
}

export async function readUsage(name: string): Promise<CgroupUsage> {
  const memory = dir('memory', name);
  const pids = dir('pids', name);
  const [usage, stat, failcnt, oom, current, events] = await Promise.all([
    readOr(path.join(memory, 'memory.usage_in_bytes'), '0'),
    readOr(path.join(memory, 'memory.stat'), ''),
    readOr(path.join(memory, 'memory.failcnt'), '0'),
    readOr(path.join(memory, 'memory.oom_control'), ''),
    readOr(path.join(pids, 'pids.current'), '0'),
    readOr(path.join(pids, 'pids.events'), ''),
  ]);
  const counter = (key: string) => Number(new RegExp(`^${key} (\\d+)$`, 'm').exec(stat)?.[1] ?? 0);
  return {
    memoryBytes: Number(usage),
    dumpableBytes: counter('total_rss') + counter('total_shmem'),
    memoryLimitHits: Number(failcnt),
    oomKills: Number(/^oom_kill (\d+)$/m.exec(oom)?.[1] ?? 0),
    pids: Number(current),
    pidsRefused: Number(/^max (\d+)$/m.exec(events)?.[1] ?? 0),
  };
}

/** The processes in the branch's memory group (none once it is gone). */
export async function groupPids(name: string): Promise<number[]> {
  return (await readOr(path.join(dir('memory', name), 'cgroup.procs'), '')).split('\n').filter(Boolean).map(Number);
}

/**
 * Removes the branch's groups. Its processes are gone by then (the ledger ends
 * them first); a straggler still counted in a group is killed, then the group
 * is removed. Missing is fine.
 */
export async function removeCgroups(name: string): Promise<void> {
  await thaw(name); // a frozen straggler would outlive its SIGKILL below
  for (const c of [...CONTROLLERS, FREEZER] as const) {
    const d = dir(c, name);
    for (let attempt = 0; ; attempt++) {
      try {
        await rmdir(d);
        break;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') break;
        if (code !== 'EBUSY' || attempt >= 50) throw new GroveError('E_HOST', `cannot remove cgroup ${d}: ${(err as Error).message}`);
        for (const pid of (await readOr(path.join(d, 'cgroup.procs'), '')).split('\n').filter(Boolean)) {
          try {
            process.kill(Number(pid), 'SIGKILL');
          } catch {
            // gone already
          }
        }
        await sleep(100);
      }
    }
  }
}

/** Branch ids that have a group of this instance under any controller (for the clean-up at start). */
export async function cgroupsOfInstance(instance: string): Promise<string[]> {
  const ids = new Set<string>();
  // A controller this instance made no group under has no folder for it.
  for (const c of [...CONTROLLERS, FREEZER] as const) for (const id of await readdir(dir(c, `grove-${instance}`)).catch(() => [] as string[])) ids.add(id);
  return [...ids].filter((id) => /^[0-9a-f]{8}$/.test(id));
}

/** Removes the instance's parent groups once they are empty (purge). */
export async function removeInstanceCgroups(instance: string): Promise<void> {
  for (const id of await cgroupsOfInstance(instance)) await removeCgroups(cgroupName(instance, id));
  for (const c of [...CONTROLLERS, FREEZER] as const) await rmdir(dir(c, `grove-${instance}`)).catch(whenAbsent(undefined));
}

/** A group's file, or `fallback` where this kernel's controller has no such file or the group is gone. */
async function readOr(file: string, fallback: string): Promise<string> {
  return (await readFile(file, 'utf8').catch(() => fallback)).trim();
}

async function exists(file: string): Promise<boolean> {
  return readFile(file).then(
    () => true,
    () => false,
  );
}
