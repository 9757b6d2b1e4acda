// The cage's cost (issue 11): the same fork of the same standard desktop in a
// caged branch (the bench's own helper) and in an uncaged one (a second helper
// instance started with GROVE_BENCH_UNCAGED=1: Docker's default capabilities,
// no no_new_privs, no seccomp, no cgroups), alternating so both see the same
// background load. Per fork: fork → the child's first frame (the helper's
// report) and the child's PSS right after it (its pid namespace). The source's
// own PSS is read once per side, before the first fork.
import { setTimeout as sleep } from 'node:timers/promises';
import type { HelperClient } from '../../main/src/helper-client/client.js';
import { pidNamespace } from '../src/host/proc.js';
import type { Workspace } from '../src/protocol/entities.js';
import { pssOfPidNamespaces } from './memory.js';
import type { CageCost, CageSide } from './result-schema.js';
import { round, summarize } from './stats.js';

export interface CageSubject {
  client: HelperClient;
  source: Workspace;
}

type Samples = { forkMs: number[]; childPssMiB: number[]; errors: string[]; sourcePssMiB: number | null };

export async function measureCage(
  subjects: { caged: CageSubject; uncaged: CageSubject },
  forks: number,
  proceed: () => void,
  log: (msg: string) => void,
): Promise<CageCost> {
  const samples = { caged: await start(subjects.caged), uncaged: await start(subjects.uncaged) };
  for (let i = 0; i < forks; i++) {
    for (const name of ['caged', 'uncaged'] as const) {
      proceed();
      const { client, source } = subjects[name];
      try {
        const { ms, pss, stages } = await forkOnce(client, source, `bench-${name}-${i}`);
        samples[name].forkMs.push(ms);
        samples[name].childPssMiB.push(pss);
        log(`${name.padEnd(7)} fork ${i + 1}/${forks}: ${Math.round(ms)} ms to the first frame (${stages}), child PSS ${Math.round(pss)} MiB`);
      } catch (err) {
        samples[name].errors.push((err as Error).message);
        log(`${name} fork ${i + 1}/${forks} FAILED: ${(err as Error).message}`);
      }
      await sleep(1000);
    }
  }
  return { forks, caged: summary(samples.caged), uncaged: summary(samples.uncaged) };
}

async function start(subject: CageSubject): Promise<Samples> {
  const ns = await pidNamespace(subject.source.pid!);
  const sourcePssMiB = ns ? (await pssOfPidNamespaces(new Set([ns]))).pssMiB : null;
  return { forkMs: [], childPssMiB: [], errors: [], sourcePssMiB };
}

/** One fork into one child, measured, and the child removed again. */
async function forkOnce(c: HelperClient, source: Workspace, name: string): Promise<{ ms: number; pss: number; stages: string }> {
  const report = await c.request('branch.fork', { workspace: source.id, copies: 1, names: [name] });
  const child = report.children[0]!;
  try {
    const ns = child.pid === null ? null : await pidNamespace(child.pid);
    if (!ns) throw new Error(`the child ${child.name} is not running`);
    const total = report.timings.total;
    if (total === undefined) throw new Error('the fork report has no total time');
    const stages = Object.entries(report.timings)
      .filter(([k]) => k !== 'total')
      .map(([k, v]) => `${k} ${Math.round(v)}`)
      .join(', ');
    return { ms: total, pss: (await pssOfPidNamespaces(new Set([ns]))).pssMiB, stages };
  } finally {
    await c.request('workspace.delete', { workspace: child.id });
  }
}

function summary(s: Samples): CageSide {
  const pick = (xs: number[]) => {
    if (xs.length === 0) return { p50: null, p95: null };
    const x = summarize(xs);
    return { p50: round(x.p50), p95: round(x.p95) };
  };
  return {
    forkToFirstFrameMs: pick(s.forkMs),
    childPssMiB: pick(s.childPssMiB),
    sourcePssMiB: s.sourcePssMiB === null ? null : round(s.sourcePssMiB),
    errors: s.errors,
  };
}
