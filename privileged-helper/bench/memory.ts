// What a set of branches costs in memory: PSS summed over every process of
// their pid namespaces (each branch, Grove's or a plain CRIU restore, is its
// own pid namespace), and the host's MemAvailable. The /proc readers and
// parsers are the helper's (host/memory-stats.ts, host/proc.ts: perf.get).
//
// PSS, not RSS: a page shared by k processes counts 1/k in each, so the sum
// over all branches counts every page once — what N copies really cost,
// including what KSM merged. Processes exit while we read (a branch's shell
// commands, Chromium's helpers): a vanished one is left out, not an error.
import { readHostMemory, readProcess } from '../src/host/memory-stats.js';
import { pidsByNamespace } from '../src/host/proc.js';

const MIB = 1 << 20;

export interface PssTotal {
  pssMiB: number;
  /** Processes counted. */
  processes: number;
}

/** PSS of every process whose pid namespace is one of `namespaces` ('pid:[…]', see pidNamespace). */
export async function pssOfPidNamespaces(namespaces: ReadonlySet<string>): Promise<PssTotal> {
  const pids = [...(await pidsByNamespace(namespaces)).values()].flat();
  const found = (await Promise.all(pids.map(readProcess))).filter((p) => p !== null);
  return { pssMiB: found.reduce((sum, p) => sum + p.pssBytes, 0) / MIB, processes: found.length };
}

export async function memAvailableMiB(): Promise<number> {
  return (await readHostMemory()).availableBytes / MIB;
}
