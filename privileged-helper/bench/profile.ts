// Where a fork's time goes (`grove bench --only profile`; docs/fork-profile.md
// reads its numbers): what the standard desktop holds (processes, threads,
// VMAs, fds), then forks of one copy with CRIU's own stats next to the
// helper's stage timings, alternating with and without CRIU's kernel-probe
// cache (host/criu/kdat-cache.ts; "without" is the state a killed CRIU or a
// /run that is no tmpfs leaves), then one fork each into 1, 2 and 4 copies:
// what restoring in parallel on this machine's cores costs each child; forks
// of the source while one of its processes holds a 1 GiB heap; last,
// checkpoints: when the call returns and when the version is saved.
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HelperClient } from '../../main/src/helper-client/client.js';
import { ensureKdatCache, KDAT_CACHE } from '../src/host/criu/kdat-cache.js';
import { pidNamespace, pidsByNamespace } from '../src/host/proc.js';
import type { ForkReport, Workspace } from '../src/protocol/entities.js';
import type { DesktopCounts, Profile, ProfileCheckpoint, ProfileFork } from './result-schema.js';

const PARALLEL = [1, 2, 4];
/** The big-memory case: a branch holding a 1 GiB heap. */
const HEAP_MIB = 1024;
const HEAP_FORKS = 3;

export async function measureProfile(c: HelperClient, criu: string, source: Workspace, forks: number, log: (m: string) => void): Promise<Profile> {
  const desktop = await desktopCounts(source);
  log(`profile: the desktop holds ${desktop.processes} processes, ${desktop.threads} threads, ${desktop.vmas} VMAs, ${desktop.fds} fds`);
  const sequence: ProfileFork[] = [];
  const errors: string[] = [];
  for (let i = 0; i < 2 * forks; i++) {
    const kdatCache = i % 2 === 0;
    try {
      sequence.push(await profiledFork(c, criu, source, 1, kdatCache, `prof-${i}`));
      log(`profile fork ${i + 1}/${2 * forks} (kdat cache ${kdatCache ? 'on' : 'off'}): ${describe(sequence.at(-1)!)}`);
    } catch (err) {
      errors.push((err as Error).message);
    }
    await sleep(1000);
  }
  const parallel: ProfileFork[] = [];
  for (const copies of PARALLEL) {
    try {
      parallel.push(await profiledFork(c, criu, source, copies, true, `par${copies}`));
      log(`profile: into ${copies}: ${describe(parallel.at(-1)!)}`);
    } catch (err) {
      errors.push((err as Error).message);
    }
    await sleep(1000);
  }
  const heap = await withHeld(c, source, HEAP_MIB, async () => {
    const forksOfHeap: ProfileFork[] = [];
    for (let i = 0; i < HEAP_FORKS; i++) {
      try {
        forksOfHeap.push(await profiledFork(c, criu, source, 1, true, `heap-${i}`));
        log(`profile: with a ${HEAP_MIB} MiB heap: ${describe(forksOfHeap.at(-1)!)}`);
      } catch (err) {
        errors.push((err as Error).message);
      }
      await sleep(1000);
    }
    return forksOfHeap;
  });
  const checkpoints: ProfileCheckpoint[] = [];
  for (let i = 0; i < forks; i++) {
    try {
      checkpoints.push(await profiledCheckpoint(c, source, `prof-${i}`));
      log(
        `profile checkpoint ${i + 1}/${forks}: returned after ${Math.round(checkpoints.at(-1)!.returnMs)} ms, saved after ${Math.round(checkpoints.at(-1)!.savedMs)} ms`,
      );
    } catch (err) {
      errors.push((err as Error).message);
    }
    await sleep(1000);
  }
  return { desktop, sequence, parallel, heap, checkpoints, errors };
}

/** Runs `work` while a process in the source holds `mib` MiB of filled heap; the process ends after. */
async function withHeld<T>(c: HelperClient, source: Workspace, mib: number, work: () => Promise<T>): Promise<T> {
  const hold = `import time; b = bytearray(b'\\x5a') * (${mib} << 20); open('/tmp/heap.ready', 'w').close(); time.sleep(86400)`;
  await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', `rm -f /tmp/heap.ready; setsid python3 -c "${hold}" </dev/null >/dev/null 2>&1 &`] });
  const ready = async () => (await c.request('exec.run', { workspace: source.id, argv: ['test', '-e', '/tmp/heap.ready'] })).exitCode === 0;
  for (let i = 0; i < 120 && !(await ready()); i++) await sleep(500);
  try {
    return await work();
  } finally {
    await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', 'pkill -f "time.sleep.86400"; rm -f /tmp/heap.ready'] });
  }
}

/** A checkpoint: when the call returns (its point in time fixed) and when the version is saved; then it is deleted. */
async function profiledCheckpoint(c: HelperClient, source: Workspace, label: string): Promise<ProfileCheckpoint> {
  let id: string | null = null;
  let savedAt: number | null = null;
  const saved = new Promise<void>((resolve) => {
    const off = c.on('version.changed', (e) => {
      if (!e.version.saved || (id !== null && e.version.id !== id)) return;
      savedAt = performance.now();
      off();
      resolve();
    });
  });
  await c.subscribe(['version.changed']);
  const t0 = performance.now();
  const v = await c.request('branch.checkpoint', { workspace: source.id, label });
  const returnMs = performance.now() - t0;
  id = v.id;
  if (!v.saved) await saved;
  await c.request('version.delete', { version: v.id });
  return { returnMs, savedMs: (savedAt ?? performance.now()) - t0 };
}

/** One fork, measured and undone; "no kdat cache" blocks CRIU from keeping one, as a killed run's leftover does. */
async function profiledFork(c: HelperClient, criu: string, source: Workspace, copies: number, kdatCache: boolean, name: string): Promise<ProfileFork> {
  if (kdatCache) await ensureKdatCache(criu);
  else await blockKdatCache();
  let report: ForkReport;
  try {
    const names = Array.from({ length: copies }, (_, k) => `${name}-${k + 1}`);
    report = await c.request('branch.fork', { workspace: source.id, copies, names });
  } finally {
    if (!kdatCache) await rm(`${KDAT_CACHE}.tmp`, { force: true });
  }
  for (const child of report.children) await c.request('workspace.delete', { workspace: child.id });
  return { copies, kdatCache, timings: { ...report.timings }, criu: report.criu };
}

async function blockKdatCache(): Promise<void> {
  await rm(KDAT_CACHE, { force: true });
  await writeFile(`${KDAT_CACHE}.tmp`, '');
}

function describe(f: ProfileFork): string {
  const d = f.criu.dump;
  const restores = f.criu.restores.map((r) => (r ? `${r.restoreMs}` : '?')).join('/');
  return `total ${Math.round(f.timings.total ?? 0)} ms, dump ${Math.round(f.timings.dump ?? 0)} (frozen ${d?.sourceFrozenMs ?? '?'}, memdump ${d?.memdumpMs ?? '?'}, memwrite ${d?.memwriteMs ?? '?'}), restore ${Math.round(f.timings.restore ?? 0)} (criu ${restores}), first frame ${Math.round(f.timings.firstFrame ?? 0)}`;
}

/** Processes, threads, VMAs and open fds of every process in the branch's pid namespace. */
async function desktopCounts(ws: Workspace): Promise<DesktopCounts> {
  const ns = await pidNamespace(ws.pid!);
  if (!ns) throw new Error(`the source's init (pid ${ws.pid}) is gone`);
  const pids = (await pidsByNamespace(new Set([ns]))).get(ns) ?? [];
  const counts = { processes: 0, threads: 0, vmas: 0, fds: 0 };
  for (const pid of pids) {
    try {
      const [tasks, maps, fds] = await Promise.all([readdir(`/proc/${pid}/task`), readFile(`/proc/${pid}/maps`, 'utf8'), readdir(`/proc/${pid}/fd`)]);
      counts.processes++;
      counts.threads += tasks.length;
      counts.vmas += maps.split('\n').filter(Boolean).length;
      counts.fds += fds.length;
    } catch {
      // it exited while we read: left out
    }
  }
  return counts;
}
