// Fan-out: one source into N live copies in one go, for both sides —
//   Grove: one branch.fork call with copies N;
//   plain CRIU: one dump + N eager restores in parallel (BaselineFork).
// Time is to the first and to the last copy's first frame. Memory is measured right then and
// again settleMs later (on Grove's side ksmd, paced by the helper, merges
// pages in between): PSS summed over every process of the N copies' pid
// namespaces, and the drop of the host's MemAvailable since just before the
// fan-out. The caller removes the copies after each size (remove()).
import { setTimeout as sleep } from 'node:timers/promises';
import type { HelperClient } from '../../main/src/helper-client/client.js';
import { pidNamespace } from '../src/host/proc.js';
import { BaselineFork, type BaselineSetting, type BaselineSource } from './baseline.js';
import { memAvailableMiB, pssOfPidNamespaces } from './memory.js';
import type { FanoutPoint, StageTimings } from './result-schema.js';
import { round, roundAll } from './stats.js';

/** Copies made by one fan-out: their stage timings, when the first was on screen, and their inits' host pids. */
export interface Fanned {
  timings: StageTimings & { total: number };
  firstMs: number;
  initPids: number[];
}

/** A fan-out of one size, on one side; remove() runs whether or not make() succeeded. */
export interface FanoutRun {
  make(): Promise<Fanned>;
  remove(): Promise<string[]>;
}

export function groveFanout(client: HelperClient, source: string, copies: number): FanoutRun {
  let children: string[] = [];
  return {
    async make() {
      const names = Array.from({ length: copies }, (_, i) => `bench-f${copies}-${i + 1}`);
      const report = await client.request('branch.fork', { workspace: source, copies, names });
      children = report.children.map((c) => c.id);
      return {
        timings: { ...report.timings },
        firstMs: Math.min(...report.readyMs),
        initPids: report.children.flatMap((c) => (c.pid === null ? [] : [c.pid])),
      };
    },
    async remove() {
      const failed: string[] = [];
      for (const id of children) {
        await client.request('workspace.delete', { workspace: id }).catch((err: Error) => failed.push(`branch ${id}: ${err.message}`));
      }
      return failed;
    },
  };
}

/** `track` holds the BaselineFork while it exists, so an interrupted run can still remove it. */
export function criuFanout(setting: BaselineSetting, source: BaselineSource, copies: number, track: Set<BaselineFork>): FanoutRun {
  const fork = new BaselineFork(setting, source, `f${copies}`, copies);
  track.add(fork);
  return {
    async make() {
      const timings = await fork.run();
      return { timings, firstMs: Math.min(...fork.readyMs), initPids: [...fork.restoredPids] };
    },
    async remove() {
      const failed = await fork.cleanup();
      track.delete(fork);
      return failed;
    },
  };
}

/** Runs one fan-out and measures it; the copies are still alive when this returns. */
export async function measureFanout(copies: number, run: FanoutRun, settleMs: number): Promise<FanoutPoint> {
  const before = await memAvailableMiB();
  const fanned = await run.make();
  const namespaces = new Set((await Promise.all(fanned.initPids.map(pidNamespace))).filter((ns): ns is string => ns !== null));
  if (namespaces.size !== copies) throw new Error(`found ${namespaces.size} pid namespaces for ${copies} copies`);
  const atFirstFrame = await memoryNow(namespaces, before);
  await sleep(settleMs);
  const settled = await memoryNow(namespaces, before);
  return {
    copies,
    totalMs: round(fanned.timings.total),
    firstMs: round(fanned.firstMs),
    pssMiB: atFirstFrame.pssMiB,
    pssMiBSettled: settled.pssMiB,
    memAvailableDropMiB: atFirstFrame.dropMiB,
    memAvailableDropMiBSettled: settled.dropMiB,
    processes: atFirstFrame.processes,
    processesSettled: settled.processes,
    settleMs,
    timings: roundAll(fanned.timings),
  };
}

async function memoryNow(namespaces: ReadonlySet<string>, availableBeforeMiB: number) {
  const pss = await pssOfPidNamespaces(namespaces);
  const available = await memAvailableMiB();
  return { pssMiB: round(pss.pssMiB), dropMiB: round(availableBeforeMiB - available), processes: pss.processes };
}

/**
 * Whether `copies` more copies fit: each estimated at perCopyMiB (the most a
 * copy cost so far), with headroom for the estimate and for the host itself.
 */
export async function fits(copies: number, perCopyMiB: number): Promise<{ ok: boolean; reason: string }> {
  const availableMiB = await memAvailableMiB();
  const needMiB = copies * perCopyMiB * 1.5 + 2048;
  const reason = `needs ~${Math.round(needMiB)} MiB (${copies} × ${Math.round(perCopyMiB)} MiB × 1.5 + 2 GiB reserve), MemAvailable is ${Math.round(availableMiB)} MiB`;
  return { ok: needMiB <= availableMiB, reason };
}
