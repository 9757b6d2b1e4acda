// perf.get: the fork history the registry keeps, and memory as the kernel
// accounts it for every running branch (all processes of its pid namespace)
// and for the host.
//
// Cost: a call reads smaps_rollup of every process of every running branch,
// and most of its CPU is the kernel walking page tables for it, so it grows
// with the number of browser processes. It is polled only while the app's
// panel is open, and callers that overlap share one read.
import { pageBytes, readHostMemory, readKsmd, readProcess } from '../host/memory-stats.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { StandbyService } from '../branches/standby.js';
import { isSameProcess, pidNamespace, pidsByNamespace } from '../host/proc.js';
import type { BranchMemory, PerfReport, PoolSpace } from '../protocol/entities.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';

export const FORK_HISTORY = 100;

export class PerfService {
  private inFlight: Promise<PerfReport> | null = null;

  constructor(
    private readonly registry: Registry,
    /** Each branch's limits and what its cgroups counted. */
    private readonly cgroups: Pick<BranchRuntime, 'limits' | 'usage' | 'prepared'>,
    private readonly poolSpace: () => Promise<PoolSpace>,
    private readonly standbys: Pick<StandbyService, 'list'>,
  ) {}

  /** Callers that ask while a read is under way (several app windows polling) share it. */
  report(): Promise<PerfReport> {
    this.inFlight ??= this.read().finally(() => (this.inFlight = null));
    return this.inFlight;
  }

  private async read(): Promise<PerfReport> {
    const page = await pageBytes();
    const [branches, total, ksm, pool, standbys] = await Promise.all([
      this.branches(page),
      readHostMemory(),
      readKsmd(),
      this.poolSpace(),
      this.standbys.list(),
    ]);
    const prepared = this.cgroups.prepared();
    return {
      forks: this.registry.recentForks(FORK_HISTORY),
      branches,
      host: { ...total, pageBytes: page, ksm },
      pool,
      prepared,
      standbys,
      at: new Date().toISOString(),
    };
  }

  /** Memory of each running branch whose init is still the process the registry knows. */
  private async branches(page: number): Promise<BranchMemory[]> {
    const running = this.registry.listWorkspaces().filter((w) => w.state === 'running' && w.pid !== null && w.pidStart !== null);
    const withNs = await Promise.all(running.map(async (w) => ((await isSameProcess(w.pid!, w.pidStart!)) ? { w, ns: await pidNamespace(w.pid!) } : null)));
    const live = withNs.filter((x): x is { w: WorkspaceRecord; ns: string } => x !== null && x.ns !== null);
    const pids = await pidsByNamespace(new Set(live.map((x) => x.ns)));
    const memory = await readProcesses([...pids.values()].flat());
    return Promise.all(
      live.map(async ({ w, ns }) => {
        const { memoryBytes, ...counted } = await this.cgroups.usage(w);
        return { ...branchMemory(w, pids.get(ns) ?? [], memory, page), cgroup: { limits: this.cgroups.limits(w), memoryBytes, ...counted } };
      }),
    );
  }
}

type Memory = Awaited<ReturnType<typeof readProcess>>;

/**
 * Reads the processes one at a time (each is two files at once): smaps_rollup
 * walks page tables and takes milliseconds for a browser, and libuv's four
 * threads are shared with all of the helper's file work, which must not queue
 * behind a whole poll.
 */
async function readProcesses(pids: number[]): Promise<Map<number, Memory>> {
  const read = new Map<number, Memory>();
  for (const pid of pids) read.set(pid, await readProcess(pid));
  return read;
}

function branchMemory(w: WorkspaceRecord, pids: number[], memory: Map<number, Memory>, page: number): Omit<BranchMemory, 'cgroup'> {
  const sum: Omit<BranchMemory, 'cgroup'> = {
    workspace: w.id,
    name: w.name,
    processes: 0,
    pssBytes: 0,
    rssBytes: 0,
    swapBytes: 0,
    ksm: { mergingPages: 0, sharedBytes: 0, profitBytes: 0, mergeAny: false },
  };
  for (const pid of pids) {
    const mem = memory.get(pid);
    if (!mem) continue; // exited while we read
    sum.processes++;
    sum.pssBytes += mem.pssBytes;
    sum.rssBytes += mem.rssBytes;
    sum.swapBytes += mem.swapBytes;
    sum.ksm.mergingPages += mem.mergingPages;
    sum.ksm.profitBytes += mem.profitBytes;
    // The init's setting is what every process the branch starts inherits (commands
    // entered from outside, like a terminal's shell, do not).
    if (pid === w.pid) sum.ksm.mergeAny = mem.mergeAny;
  }
  sum.ksm.sharedBytes = sum.ksm.mergingPages * page;
  return sum;
}
