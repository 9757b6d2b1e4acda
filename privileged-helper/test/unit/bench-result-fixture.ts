// A benchmark result that passes BenchResult, for the bench's unit tests;
// `with` overrides parts of it.
import { BenchResult, type Side } from '../../bench/result-schema.js';

function side(total: number, layout: 'grove' | 'naive-overlay', perCopyMiB: number): Side {
  const stage = (p50: number) => ({ p50, p95: p50 * 1.2 });
  return {
    forkToFirstFrameMs: stage(total),
    sourceFrozenMs: stage(total / 10),
    stages: { prepare: stage(total / 10), dump: stage(total / 3), sourceFrozen: stage(total / 10), restore: stage(total / 2), total: stage(total) },
    samples: [{ prepare: total / 10, dump: total / 3, sourceFrozen: total / 10, restore: total / 2, total }],
    errors: [],
    fanout: [1, 4, 8, 16].map((copies) => ({
      copies,
      totalMs: total * (1 + copies / 4),
      firstMs: total * 1.5,
      pssMiB: copies * perCopyMiB,
      pssMiBSettled: copies * perCopyMiB * 0.5,
      memAvailableDropMiB: copies * perCopyMiB,
      memAvailableDropMiBSettled: copies * perCopyMiB * 0.5,
      processes: copies * 40,
      processesSettled: copies * 40,
      settleMs: 30_000,
      timings: { total: total * (1 + copies / 4) },
    })),
    fanoutSkipped: [],
    readLatency: [0, 10, 50].map((depth) => ({
      layout,
      depth,
      us: 10 + depth / 10,
      smallFiles: 64,
      smallReads: 64_000,
      bigFile: '/usr/lib/big',
      bigFileMiB: 20,
      bigFileMapped: false,
      bigReadMs: 40,
      bigReadMiBps: 500,
    })),
  };
}

export function sampleResult(): BenchResult {
  return BenchResult.parse({
    schema: 'grove-bench@9',
    startedAt: '2026-11-30T12:00:00.000Z',
    finishedAt: '2026-11-30T12:20:00.000Z',
    quick: false,
    sections: ['fork', 'fanout', 'read-latency', 'computer-use', 'cli', 'cage', 'profile'],
    forks: 5,
    host: { kernel: '6.18', cpus: 2, memTotalMiB: 24_000, loadavgStart: [0.5, 0.4, 0.3], loadavgEnd: [1, 1, 1], criu: 'Version: 4.2.1' },
    layout: 'overlay',
    grove: side(400, 'grove', 100),
    criu: side(3000, 'naive-overlay', 500),
    ratio: 7.5,
    depthForks: [{ depth: 1, total: 400 }],
    computerUse: {
      screenshotMs: { p50: 30, p95: 60 },
      screenshotKiB: 50,
      actionToFrameMs: { p50: 40, p95: 90 },
      pngEncodeMs: { p50: 8, p95: 12 },
      screen: { width: 1280, height: 800 },
      samples: 50,
      errors: [],
    },
    cli: { whoamiMs: { p50: 120, p95: 160 }, samples: 30, errors: [] },
    cage: {
      forks: 5,
      caged: { forkToFirstFrameMs: { p50: 1050, p95: 1200 }, childPssMiB: { p50: 420, p95: 440 }, sourcePssMiB: 600, errors: [] },
      uncaged: { forkToFirstFrameMs: { p50: 1000, p95: 1150 }, childPssMiB: { p50: 410, p95: 430 }, sourcePssMiB: 590, errors: [] },
    },
    profile: {
      desktop: { processes: 20, threads: 180, vmas: 4000, fds: 600 },
      sequence: [profiled(1, true, 300, 180), profiled(1, false, 620, 190), profiled(1, true, 320, 170), profiled(1, false, 600, 200)],
      parallel: [profiled(1, true, 310, 180), profiled(2, true, 330, 260)],
      heap: [profiled(1, true, 900, 1800), profiled(1, true, 1000, 2000)],
      checkpoints: [
        { returnMs: 300, savedMs: 900 },
        { returnMs: 340, savedMs: 1000 },
        { returnMs: 320, savedMs: 950 },
      ],
      errors: [],
    },
    ownWork: {
      pull: { imageMiB: 500, groveMs: [11_000, 12_000, 13_000], otherMs: [10_000, 10_500, 11_000], groveP50: 12_000, otherP50: 10_500, ratio: 1.143 },
      project: { files: 20_000, mib: 300, groveMs: [2000, 2100, 2200], otherMs: [1800, 1800, 1900], groveP50: 2100, otherP50: 1800, ratio: 1.167 },
      fork: { groveMs: [390, 400, 410], otherMs: [380, 390, 400], groveP50: 400, otherP50: 390, ratio: 1.026 },
      errors: [],
    },
    quota: {
      rounds: 30,
      filesMiB: 42,
      simple: { forkMs: { p50: 31.2, p95: 48 }, checkpointMs: { p50: 12.5, p95: 20 }, discardMs: { p50: 14, p95: 25 }, errors: [] },
      off: { forkMs: { p50: 28.4, p95: 45 }, checkpointMs: { p50: 12, p95: 19 }, discardMs: { p50: 13, p95: 24 }, errors: [] },
      full: { forkMs: { p50: 120, p95: 230 }, checkpointMs: { p50: 95, p95: 180 }, discardMs: { p50: 20, p95: 40 }, errors: ['one failed'] },
    },
    agentLoop: {
      tasks: ['edit and save a document (0)', 'rename files (1)'],
      decisionPoints: 3,
      alternatives: 3,
      thinkMs: 300,
      strategies: [
        loopStrategy('grove-fork-and-pick', 9000, 3000),
        loopStrategy('grove-try-and-rollback', 11_000, 5000),
        loopStrategy('criu-fork-and-pick', 14_000, 7500),
        loopStrategy('criu-try-and-rollback', 15_000, 8000),
        loopStrategy('cold-restart', 30_000, 24_000),
      ],
    },
    merge: {
      files: 20_000,
      changedPerSource: 200,
      dryRunMs: [300, 320, 310],
      mergeMs: [600, 640, 620],
      totalMs: [900, 960, 930],
      checkpointMs: [450, 470, 460],
      gitMergeMs: [400, 420, 410],
      exportMs: [700, 720, 1100],
      totalP50: 930,
      gitMergeP50: 410,
      ratio: 2.268,
      exportP50: 720,
      errors: [],
    },
    targets: [],
    notes: [],
  });
}

function loopStrategy(strategy: string, totalMs: number, waitMs: number) {
  const stepMs = strategy === 'grove-try-and-rollback' ? { checkpoint: { p50: 160, p95: 210 }, 'rollback → first frame': { p50: 820, p95: 990 } } : {};
  return { strategy, tasksDone: 2, totalMs, waitMs, peakPssMiB: 900, taskMs: [totalMs / 2, totalMs / 2], stepMs, errors: [] };
}

function profiled(copies: number, kdatCache: boolean, dump: number, restoreMs: number) {
  const restore = { forkingMs: 40, restoreMs, pagesRestored: 50_000 };
  return {
    copies,
    kdatCache,
    timings: { dump, restore: restoreMs + 100, firstFrame: 90, total: dump + restoreMs + 250 },
    criu: {
      dump: { sourceFrozenMs: 200, freezingMs: 30, memdumpMs: 60, memwriteMs: 40, pagesScanned: 100_000, pagesWritten: 60_000 },
      restores: Array.from({ length: copies }, () => restore),
    },
  };
}
