// Where a fork's time goes (`grove bench --only profile`; docs/fork-profile.md
// reads its numbers): what the standard desktop holds (processes, threads,
// VMAs, fds), then forks of one copy with CRIU's own stats next to the
// helper's stage timings, alternating with and without CRIU's kernel-probe
// cache (host/criu/kdat-cache.ts; "without" is the state a killed CRIU or a
// /run that is no tmpfs leaves), then one fork each into 1, 2 and 4 copies:
// what restoring in parallel on this machine's cores costs each child.
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { HelperClient } from '../../main/src/helper-client/client.js';
import { ensureKdatCache, KDAT_CACHE } from '../src/host/criu/kdat-cache.js';
import { pidNamespace, pidsByNamespace } from '../src/host/proc.js';
import type { ForkReport, Workspace } from '../src/protocol/entities.js';
import type { DesktopCounts, Profile, ProfileFork } from './result-schema.js';

const PARALLEL = [1, 2, 4];

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
  return { desktop, sequence, parallel, errors };
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
