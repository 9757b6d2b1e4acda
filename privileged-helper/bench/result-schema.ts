// The benchmark's result, as written to bench/results/*.json and printed by
// `grove bench --json`: the one definition of its shape. The TypeScript types
// are inferred from it, the bench validates what it writes with it, and a
// script comparing runs can validate what it reads with it.
//
// Times are milliseconds, memory MiB (2^20 bytes), read latency microseconds.
// A value that could not be measured (every sample failed) is null.
import { z } from 'zod';
import { ForkReport } from '../src/protocol/entities.js';

/** 3: the computer-use section and `sections`; 4: the cage section (caged vs uncaged); 5: the profile section; 6: own work; 7: the disk quota's cost; 8: the CLI's calls; 9: merge and export. */
export const RESULT_SCHEMA = 'grove-bench@9' as const;

const Ms = z.number().nonnegative();
const MaybeMs = Ms.nullable();

export const Percentiles = z.strictObject({ p50: MaybeMs, p95: MaybeMs });
export type Percentiles = z.infer<typeof Percentiles>;

/** One fork's milliseconds per stage (the stage names differ between the sides). */
export const StageTimings = z.record(z.string(), z.number());
export type StageTimings = z.infer<typeof StageTimings>;

export const FanoutPoint = z.strictObject({
  copies: z.number().int().positive(),
  /** From the start of the fan-out to the last copy's first frame. */
  totalMs: Ms,
  /**
   * From the start of the fan-out to the first copy's first frame: when a
   * person has the first one on screen (absent in results from before it
   * was measured).
   */
  firstMs: Ms.optional(),
  /**
   * PSS summed over every process of every copy (each copy is its own pid
   * namespace), right after the last first frame.
   */
  pssMiB: z.number(),
  /** The same, settleMs later (on Grove's side KSM merges pages in between). */
  pssMiBSettled: z.number(),
  /** MemAvailable before the fan-out minus MemAvailable right after the last first frame. */
  memAvailableDropMiB: z.number(),
  memAvailableDropMiBSettled: z.number(),
  /** Processes counted (those that vanished while being read are not). */
  processes: z.number().int().nonnegative(),
  processesSettled: z.number().int().nonnegative(),
  settleMs: Ms,
  timings: StageTimings,
});
export type FanoutPoint = z.infer<typeof FanoutPoint>;

export const SkippedFanout = z.strictObject({ copies: z.number().int().positive(), reason: z.string() });
export type SkippedFanout = z.infer<typeof SkippedFanout>;

export const ReadLayout = z.enum(['grove', 'naive-overlay']);
export type ReadLayout = z.infer<typeof ReadLayout>;

export const ReadLatency = z.strictObject({
  layout: ReadLayout,
  /** Fork generations between the file's origin and the reader. */
  depth: z.number().int().nonnegative(),
  /** Microseconds per open+read+close of one small inherited file (warm cache). */
  us: z.number(),
  smallFiles: z.number().int(),
  smallReads: z.number().int(),
  bigFile: z.string(),
  bigFileMiB: z.number(),
  bigFileMapped: z.boolean(),
  /** Cold-ish sequential read of the big file: total ms and MiB/s. */
  bigReadMs: z.number(),
  bigReadMiBps: z.number(),
});
export type ReadLatency = z.infer<typeof ReadLatency>;

export const Side = z.strictObject({
  forkToFirstFrameMs: Percentiles,
  sourceFrozenMs: Percentiles,
  stages: z.record(z.string(), Percentiles),
  samples: z.array(StageTimings),
  /** Forks that failed (not in the samples). */
  errors: z.array(z.string()),
  fanout: z.array(FanoutPoint),
  fanoutSkipped: z.array(SkippedFanout),
  readLatency: z.array(ReadLatency),
});
export type Side = z.infer<typeof Side>;

/** Computer use on the standard desktop, through the helper's socket like an agent (computer-use.ts). */
export const ComputerUse = z.strictObject({
  /** desktop.screenshot of the whole screen: request to decoded reply, PNG (base64) included. */
  screenshotMs: Percentiles,
  screenshotKiB: z.number().nonnegative(),
  /**
   * From sending desktop.key (one character into the start page's note) until
   * a second VNC client receives the frame with the page's new colour.
   */
  actionToFrameMs: Percentiles,
  /** Encoding one full-screen PNG in this process (no socket, no VNC). */
  pngEncodeMs: Percentiles,
  /** The round trip of one MCP screenshot call (measured once the MCP server is benchmarked). */
  mcpScreenshotMs: Percentiles.optional(),
  /** The computer tool's zoom through grove mcp: 640x400 of the screen at twice its resolution. */
  mcpZoomMs: Percentiles.optional(),
  /** The windows tool through grove mcp (X asked inside the branch). */
  mcpWindowsMs: Percentiles.optional(),
  screen: z.strictObject({ width: z.number().int().positive(), height: z.number().int().positive() }),
  /** Samples per measurement. */
  samples: z.number().int().nonnegative(),
  errors: z.array(z.string()),
});
export type ComputerUse = z.infer<typeof ComputerUse>;

/** Calls of the grove CLI as a person or a script makes them (cli-calls.ts): main/bin/grove whoami against the bench's helper, from start to exit. */
export const CliCalls = z.strictObject({
  whoamiMs: Percentiles,
  samples: z.number().int().nonnegative(),
  errors: z.array(z.string()),
});
export type CliCalls = z.infer<typeof CliCalls>;

/** One side of the cage comparison (cage.ts): forks of one source into one child each. */
export const CageSide = z.strictObject({
  /** The helper's fork report: fork → the child's first frame. */
  forkToFirstFrameMs: Percentiles,
  /** PSS of the child's processes right after its first frame. */
  childPssMiB: Percentiles,
  /** PSS of the source's processes before the first fork. */
  sourcePssMiB: z.number().nullable(),
  errors: z.array(z.string()),
});
export type CageSide = z.infer<typeof CageSide>;

/** What the cage costs: the same forks in caged branches and in uncaged ones, alternating. */
export const CageCost = z.strictObject({ forks: z.number().int().nonnegative(), caged: CageSide, uncaged: CageSide });
export type CageCost = z.infer<typeof CageCost>;

/** One pool of the disk quota comparison (quota.ts): the disk work of a fork, a checkpoint and a discard there. */
export const QuotaSide = z.strictObject({ forkMs: Percentiles, checkpointMs: Percentiles, discardMs: Percentiles, errors: z.array(z.string()) });
export type QuotaSide = z.infer<typeof QuotaSide>;

/** What the disk quota costs: the same disk work on pools with simple quotas (Grove's), none, and full qgroups, alternating. */
export const QuotaCost = z.strictObject({
  rounds: z.number().int().nonnegative(),
  /** The files in each pool: the bench desktop's, and an agent's work. */
  filesMiB: z.number().nonnegative(),
  simple: QuotaSide,
  off: QuotaSide,
  full: QuotaSide,
});
export type QuotaCost = z.infer<typeof QuotaCost>;

/** What the standard desktop holds, summed over its pid namespace (profile.ts). */
export const DesktopCounts = z.strictObject({
  processes: z.number().int().nonnegative(),
  threads: z.number().int().nonnegative(),
  vmas: z.number().int().nonnegative(),
  fds: z.number().int().nonnegative(),
});
export type DesktopCounts = z.infer<typeof DesktopCounts>;

/** One profiled fork: the helper's stage timings and CRIU's own stats (ForkReport.criu). */
export const ProfileFork = z.strictObject({
  copies: z.number().int().positive(),
  /** Whether CRIU found its kernel-probe cache (host/criu/kdat-cache.ts); false = blocked, as a killed run or a /run that is no tmpfs leaves it. */
  kdatCache: z.boolean(),
  timings: StageTimings,
  criu: ForkReport.shape.criu,
});
export type ProfileFork = z.infer<typeof ProfileFork>;

/** A checkpoint of the source: ms until the call returned (point in time fixed) and until the version was saved. */
export const ProfileCheckpoint = z.strictObject({ returnMs: Ms, savedMs: Ms });
export type ProfileCheckpoint = z.infer<typeof ProfileCheckpoint>;

/** Where a fork's time goes (profile.ts, docs/fork-profile.md). */
export const Profile = z.strictObject({
  desktop: DesktopCounts,
  /** Forks of one copy, alternating with and without the kdat cache. */
  sequence: z.array(ProfileFork),
  /** One fork each into 1, 2 and 4 copies: parallel restores on this machine's cores. */
  parallel: z.array(ProfileFork),
  /** Forks of one copy while a process of the source holds a 1 GiB heap. */
  heap: z.array(ProfileFork),
  checkpoints: z.array(ProfileCheckpoint),
  errors: z.array(z.string()),
});
export type Profile = z.infer<typeof Profile>;

/** Grove against what a person would do without it, one sample each in turn (own-work.ts): `ratio` = Grove's p50 / the other's. */
export const OwnWorkPair = z.strictObject({
  groveMs: z.array(Ms),
  otherMs: z.array(Ms),
  groveP50: MaybeMs,
  otherP50: MaybeMs,
  ratio: z.number().nullable(),
});
export type OwnWorkPair = z.infer<typeof OwnWorkPair>;

/** Your own work in a workspace (issue 41): pulling an image, copying a project in, forking a branch of your own image. */
export const OwnWork = z.strictObject({
  /** image.pull against skopeo copy + umoci unpack of the same image from the same registry. */
  pull: OwnWorkPair.extend({
    imageMiB: z.number(),
    /**
     * Each round's time per stage: Grove's by the helper's progress stages
     * (fetch, check = the count of what the layers unpack to, unpack into the
     * storage, adopt = the image's snapshot and checks); the other's skopeo
     * copy and umoci unpack. Absent in results from before it was measured.
     */
    stagesMs: z.strictObject({ grove: z.record(z.string(), z.array(Ms)), other: z.record(z.string(), z.array(Ms)) }).optional(),
  }),
  /** A copy into a running branch against cp -a of the same folder. */
  project: OwnWorkPair.extend({ files: z.number().int(), mib: z.number() }),
  /** Fork → first frame of a branch of an image built FROM grove/desktop (grove*) against the desktop's (other*). */
  fork: OwnWorkPair,
  errors: z.array(z.string()),
});
export type OwnWork = z.infer<typeof OwnWork>;

/** A merge of two sources into a live branch and an export of the result (merge.ts), against git merge of the same changes. */
export const MergeBench = z.strictObject({
  /** The project's files, and how many of them each source changed (different ones). */
  files: z.number().int().positive(),
  changedPerSource: z.number().int().positive(),
  /** Per round: branch.merge with dryRun, then branch.merge (its checkpoint of the target included), and both. */
  dryRunMs: z.array(Ms),
  mergeMs: z.array(Ms),
  totalMs: z.array(Ms),
  /** A checkpoint of the target alone, to saved, as the merge takes one first: how much of mergeMs is not the merge's own work. */
  checkpointMs: z.array(Ms),
  /** git merge --no-ff of both sources' commits into their trunk in a plain clone on the same disk. */
  gitMergeMs: z.array(Ms),
  /** branch.export of the merged target (both sources' changes) as a commit on a new branch of the project's repository. */
  exportMs: z.array(Ms),
  totalP50: MaybeMs,
  gitMergeP50: MaybeMs,
  /** totalP50 / gitMergeP50. */
  ratio: z.number().nullable(),
  exportP50: MaybeMs,
  errors: z.array(z.string()),
});
export type MergeBench = z.infer<typeof MergeBench>;

/** One strategy of the agent loop (agent-loop.ts) over all its tasks. */
export const AgentLoopStrategy = z.strictObject({
  strategy: z.string(),
  tasksDone: z.number().int().nonnegative(),
  /** Sum of the done tasks' times, setup to the last decision point. */
  totalMs: Ms,
  /** Of that, waiting on the workspace: forks, checkpoints, rollbacks, restores, new workspaces and their replays. */
  waitMs: Ms,
  /** The highest PSS of all the strategy's workspaces at once, sampled. */
  peakPssMiB: z.number(),
  taskMs: z.array(Ms),
  /** Each kind of wait (fork into 3, checkpoint, rollback → first frame, new workspace + replay), its percentiles. */
  stepMs: z.record(z.string(), Percentiles),
  errors: z.array(z.string()),
});
export type AgentLoopStrategy = z.infer<typeof AgentLoopStrategy>;

/** A scripted agent's desktop tasks under each strategy (issue 49). */
export const AgentLoop = z.strictObject({
  tasks: z.array(z.string()),
  decisionPoints: z.number().int(),
  alternatives: z.number().int(),
  thinkMs: Ms,
  strategies: z.array(AgentLoopStrategy),
});
export type AgentLoop = z.infer<typeof AgentLoop>;

/** The parts of the benchmark a run can measure (`--only` picks one). */
export const BenchSection = z.enum(['fork', 'fanout', 'read-latency', 'computer-use', 'cli', 'cage', 'profile', 'own-work', 'quota', 'agent-loop', 'merge']);
export type BenchSection = z.infer<typeof BenchSection>;

/** A target (issue 6, 10 or 11) next to what this run measured; met is null when nothing was measured. */
export const TargetCheck = z.strictObject({
  name: z.string(),
  target: z.string(),
  measured: z.string(),
  met: z.boolean().nullable(),
});
export type TargetCheck = z.infer<typeof TargetCheck>;

export const HostInfo = z.strictObject({
  kernel: z.string(),
  cpus: z.number().int(),
  memTotalMiB: z.number(),
  loadavgStart: z.array(z.number()),
  loadavgEnd: z.array(z.number()),
  criu: z.string(),
});
export type HostInfo = z.infer<typeof HostInfo>;

export const BenchResult = z.strictObject({
  schema: z.literal(RESULT_SCHEMA),
  startedAt: z.string(),
  finishedAt: z.string(),
  quick: z.boolean(),
  /** What this run measured: every section, or the one `--only` asked for (the others are empty). */
  sections: z.array(BenchSection),
  /** Forks per side for the fork → first frame percentiles. */
  forks: z.number().int().nonnegative(),
  host: HostInfo,
  /** The source's file layout: its own subvolume, or an overlay (image lower + subvolume upper). */
  layout: z.enum(['subvolume', 'overlay']),
  grove: Side,
  criu: Side,
  /** criu.forkToFirstFrameMs.p50 / grove.forkToFirstFrameMs.p50: how many times faster Grove is. */
  ratio: z.number().nullable(),
  /** Timings of the forks that built the depth chain (fork of fork of …). */
  depthForks: z.array(StageTimings),
  /** Null when the run left the section out. */
  computerUse: ComputerUse.nullable(),
  /** Null when the run left the section out (and in results from before it). */
  cli: CliCalls.nullable().default(null),
  /** Null when the run left the section out. */
  cage: CageCost.nullable(),
  /** Null when the run left the section out. */
  profile: Profile.nullable(),
  /** Null when the run left the section out (and in results from before it). */
  ownWork: OwnWork.nullable().default(null),
  /** Null when the run left the section out (and in results from before it). */
  quota: QuotaCost.nullable().default(null),
  /** Null when the run left the section out (and in results from before it). */
  agentLoop: AgentLoop.nullable().default(null),
  /** Null when the run left the section out (and in results from before it). */
  merge: MergeBench.nullable().default(null),
  targets: z.array(TargetCheck),
  notes: z.array(z.string()),
});
export type BenchResult = z.infer<typeof BenchResult>;
