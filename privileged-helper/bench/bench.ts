// The benchmark of issues 6 and 10 (`grove bench`, `npm run bench`), on the standard
// desktop workspace (Chromium with its start page, xterm, editor), as root,
// on its own helper instance and subnet (purged at the end, also on failure
// and on Ctrl-C), Grove and plain CRIU side by side in one run:
//   1. fork → child's first frame, per stage, and the source's frozen time:
//      Grove's branch.fork of 1 copy and plain CRIU (baseline.ts), alternating
//      so both see the same background load; each child is removed after it
//      is measured.
//   2. fan-out to 1, 4, 8, 16 copies in one go, time and memory (fanout.ts).
//   3. read latency of an inherited file at fork depth 0, 10, 50: in real
//      Grove branches (a chain of forks, each parent discarded once its child
//      is up) and through naively stacked overlays (naive-overlay.ts).
//   4. computer use: screenshot latency and key press → changed frame
//      (computer-use.ts), measured first, on the untouched source.
//   5. the cage's cost: the same forks in caged branches and in uncaged ones
//      of a second helper instance (GROVE_BENCH_UNCAGED=1), side by side
//      (cage.ts).
//   6. a profile: where a fork's time goes, with CRIU's own stats (profile.ts).
//   7. your own work: an image pulled, a project copied in, a branch of an
//      image of your own forked, each against what one would do without Grove
//      (own-work.ts).
//   8. the disk quota's cost: a fork's, a checkpoint's and a discard's disk
//      work on scratch pools with simple quotas, none and full qgroups, side
//      by side (quota.ts).
//   9. the CLI: a call of grove as a person or a script makes it, from start
//      to exit (cli-calls.ts).
//  10. the agent loop: a scripted agent's desktop tasks with decision points,
//      under fork-and-pick and try-and-rollback with Grove and with plain
//      CRIU, and under cold restarts (agent-loop.ts).
//  11. merge and export: two branches' changes merged into a third, live, and
//      the result exported as a git commit, against git merge (merge.ts).
// `only` runs one section (e.g. computer-use: a check in a minute).
// It writes JSON (result-schema.ts) and an SVG (plots.ts) to bench/results/
// (which git ignores; latest.json there is the run the docs quote),
// and prints a table with each target next to the measured value; with
// `json` the JSON goes to stdout instead. Nothing here asserts on time.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { HelperClient } from '../../main/src/helper-client/client.js';
import { loadConfig } from '../src/config.js';
import { pidNamespace } from '../src/host/proc.js';
import { firstFrame } from '../src/desktop/rfb-probe.js';
import type { Workspace } from '../src/protocol/entities.js';
import { groveFile } from '../src/protocol/grove-files.js';
import { GroveError } from '../src/protocol/wire.js';
import { purge, startHelper, tail, testInstance, type TestInstance } from '../test/system/helper-process.js';
import { leftovers } from '../test/system/leftovers.js';
import { measureCage } from './cage.js';
import { measureProfile } from './profile.js';
import { measureOwnWork } from './own-work.js';
import { measureComputerUse } from './computer-use.js';
import { measureAgentLoop } from './agent-loop.js';
import { measureCliCalls } from './cli-calls.js';
import { measureMerge } from './merge.js';
import { QuotaPools } from './quota.js';
import { BaselineFork, readBaselineSource, type BaselineSetting, type BaselineSource } from './baseline.js';
import { criuFanout, fits, groveFanout, measureFanout, type FanoutRun } from './fanout.js';
import { pssOfPidNamespaces } from './memory.js';
import { NaiveOverlay } from './naive-overlay.js';
import { benchSvg } from './plots.js';
import { IMAGE_FILES, inBranch, measureReadLatency } from './read-latency.js';
import { reportTable } from './report-table.js';
import {
  BenchResult,
  BenchSection,
  RESULT_SCHEMA,
  type FanoutPoint,
  type HostInfo,
  type ReadLatency,
  type Side,
  type SkippedFanout,
  type StageTimings,
} from './result-schema.js';
import { round, roundAll, speedup, summarizeByKey, type Summary } from './stats.js';
import { checkTargets } from './targets.js';

export const RESULTS_DIR = groveFile('privileged-helper/bench/results');
/** Not the dev helper's (10.213/10.214) nor the system tests' (10.215) range. */
const BENCH_SUBNET = '10.217.0.0/16';
/** The uncaged comparison instance's range (cage section). */
const UNCAGED_SUBNET = '10.216.0.0/16';
// The helper's own tools (GROVE_CRIU, GROVE_MOUNT, GROVE_NETLOCK, GROVE_ACTION, as the helper reads them).
const { criu: CRIU, groveMount: GROVE_MOUNT, groveNetlock: GROVE_NETLOCK, groveAction: GROVE_ACTION, groveQuota: GROVE_QUOTA } = loadConfig();

export interface BenchOptions {
  quick: boolean;
  /** JSON on stdout instead of the table. */
  json: boolean;
  /** Where the JSON goes (default: results/bench-<time>.json); the SVG goes next to it. */
  out?: string;
  /** Only this section (the others are left empty in the result). */
  only?: BenchSection;
}

/** How much a run measures: --quick is a check in minutes, the full run the issue's numbers. */
function plan(quick: boolean) {
  return {
    forks: quick ? 3 : 15,
    fanoutSizes: quick ? [1, 4, 8] : [1, 4, 8, 16],
    depths: quick ? [0, 10] : [0, 10, 50],
    readRounds: quick ? 200 : 1000,
    settleMs: 30_000,
    computerUseSamples: quick ? 20 : 50,
    cliCalls: quick ? 10 : 30,
    ownWorkRounds: quick ? 1 : 3,
    quotaRounds: quick ? 10 : 30,
    agentLoopTasks: quick ? 2 : 10,
    mergeRounds: quick ? 1 : 5,
  };
}
type Plan = ReturnType<typeof plan>;

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

/** Everything one run made that must go at the end, whatever happens. */
class Session {
  readonly t: TestInstance = testInstance(`b${randomBytes(2).toString('hex').slice(0, 3)}`);
  readonly baselines = new Set<BaselineFork>();
  readonly naive = new NaiveOverlay(path.join(this.t.stateDir, 'naive-overlay'));
  client: HelperClient | null = null;
  /** The uncaged comparison helper (cage section), once started. */
  uncaged: { t: TestInstance; client: HelperClient | null } | null = null;
  /** The scratch pools of the quota section, once made. */
  quotaPools: QuotaPools | null = null;
  /** Set on SIGINT/SIGTERM/SIGHUP: the measurement stops at its next step while finish() removes everything. */
  interrupted = false;
  private finished: Promise<string[]> | null = null;

  constructor() {
    this.t.env.GROVE_SUBNET = BENCH_SUBNET;
  }

  /** A plain-CRIU setting whose /30s count down from the top of the subnet (the helper hands out from the bottom). */
  baselineSetting(): BaselineSetting {
    return {
      criuBinary: CRIU,
      netlock: GROVE_NETLOCK,
      action: GROVE_ACTION,
      groveMount: GROVE_MOUNT,
      instance: this.t.instance,
      subnet: BENCH_SUBNET,
      netIndex: 16383,
      subvolumeDir: path.join(this.t.stateDir, 'pool/workspaces'),
      scratchDir: path.join(this.t.runDir, 'scratch'),
      firstFrameTimeoutMs: 120_000,
      failedLogsDir: `/var/tmp/grove-bench-${this.t.instance}-criu-logs`,
      reachableDir: `${this.t.runDir}-roots`,
    };
  }

  /** Called before each step that makes something: nothing new is made once the run was interrupted. */
  proceed(): void {
    if (this.interrupted) throw new Error('interrupted');
  }

  /** Removes everything (idempotent); returns what could not be removed. */
  finish(): Promise<string[]> {
    this.finished ??= (async () => {
      this.client?.close();
      const problems: string[] = [];
      for (const b of this.baselines) problems.push(...(await b.cleanup()));
      problems.push(...(await this.naive.cleanup()));
      if (this.quotaPools) problems.push(...(await this.quotaPools.cleanup()));
      this.uncaged?.client?.close();
      for (const t of [this.t, ...(this.uncaged ? [this.uncaged.t] : [])]) problems.push(...(await removeInstance(t)));
      return problems;
    })();
    return this.finished;
  }
}

/** Purges one helper instance and checks it left nothing; its files go when it did not. */
async function removeInstance(t: TestInstance): Promise<string[]> {
  const problems: string[] = [];
  try {
    await purge(t);
  } catch (err) {
    problems.push(`purge of ${t.instance}: ${(err as Error).message}`);
  }
  problems.push(...(await leftovers(t)));
  for (const f of [t.pidFile, t.pidNsFile]) await execa('rm', ['-f', '--', f], { reject: false });
  if (problems.length === 0) await execa('rm', ['-f', '--', t.logFile], { reject: false });
  return problems;
}

/** The section `--only` names; a clear error for anything else. */
export function benchSection(text: string): BenchSection {
  const parsed = BenchSection.safeParse(text);
  if (!parsed.success) throw new Error(`--only takes one of: ${BenchSection.options.join(', ')}`);
  return parsed.data;
}

export async function runBench(opts: BenchOptions): Promise<number> {
  if (process.getuid?.() !== 0) throw new GroveError('E_PRECONDITION', 'the benchmark runs as root (it starts its own helper and runs CRIU)');
  const p = plan(opts.quick);
  const s = new Session();
  // Handled on every signal, not once: with no handler left, a second signal
  // (another Ctrl-C, or one relayed again by npm or grove) would end the process
  // halfway through the removal.
  const onSignal = (sig: NodeJS.Signals) => {
    if (s.interrupted) return log(`${sig}: still removing what the benchmark made, please wait`);
    log(`${sig}: removing everything the benchmark made (instance ${s.t.instance})…`);
    s.interrupted = true;
    void s.finish().then((problems) => {
      for (const pr of problems) log(`left behind: ${pr}`);
      process.exit(130);
    });
  };
  const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
  for (const sig of signals) process.on(sig, onSignal);
  const code = await measureAndReport(s, p, opts);
  log(`removing instance ${s.t.instance}`);
  const problems = await s.finish();
  for (const pr of problems) log(`left behind: ${pr}`);
  for (const sig of signals) process.off(sig, onSignal);
  return problems.length > 0 && code === 0 ? 1 : code;
}

/** Measures, writes the JSON and SVG and prints the table; the exit code (130 when interrupted). */
async function measureAndReport(s: Session, p: Plan, opts: BenchOptions): Promise<number> {
  try {
    const result = await measure(s, p, opts.quick, opts.only ? [opts.only] : BenchSection.options);
    const out = opts.out ? path.resolve(opts.out) : path.join(RESULTS_DIR, `bench-${result.startedAt.replace(/[:.]/g, '-')}.json`);
    await mkdir(path.dirname(out), { recursive: true });
    await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
    await writeFile(out.replace(/\.json$/, '') + '.svg', benchSvg(result));
    process.stdout.write(opts.json ? `${JSON.stringify(result, null, 2)}\n` : reportTable(result));
    log(`results written to ${out} (+ .svg)`);
    return 0;
  } catch (err) {
    if (s.interrupted) return 130;
    log(`failed: ${(err as Error).stack ?? String(err)}`);
    log(`helper log tail:\n${tail(s.t.logFile)}`);
    return 1;
  }
}

async function measure(s: Session, p: Plan, quick: boolean, sections: BenchSection[]): Promise<BenchResult> {
  const startedAt = new Date().toISOString();
  const loadavgStart = os.loadavg();
  log(`instance ${s.t.instance}: starting a helper (log ${s.t.logFile})`);
  await startHelper(s.t);
  const c = (s.client = await HelperClient.connect({ socketPath: s.t.socketPath, name: 'bench', kind: 'test' }));
  await c.subscribe(['progress']);
  c.on('progress', (ev) => log(`[${ev.stage}] ${ev.message}`));
  await c.request('image.build', { name: 'desktop' });
  log('creating the standard desktop workspace');
  const source = await c.request('workspace.create', { name: 'bench' });
  await desktopUp(c, source);
  const baseSource = await baselineSource(s, source);

  const runs = (section: BenchSection) => sections.includes(section);
  const computerUse = runs('computer-use') ? await measureComputerUse(c, source, p.computerUseSamples, log) : null;
  const cli = runs('cli') ? await measureCliCalls(s.t.socketPath, p.cliCalls, log) : null;
  const forks = runs('fork') ? await forkLatency(s, p, source, baseSource) : { grove: [], criu: [], groveErrors: [], criuErrors: [] };
  const noFanout = { points: [], skipped: [] };
  const fan = runs('fanout') ? await fanouts(s, p, source, baseSource) : { grove: noFanout, criu: noFanout };
  const naiveReads = runs('read-latency') ? await naiveReadLatency(s, p) : [];
  const chain = runs('read-latency') ? await groveReadLatency(s, p, source) : { reads: [], depthForks: [], errors: [] };
  const cage = runs('cage') ? await cageCost(s, p) : null;
  const profile = runs('profile') ? await measureProfile(c, CRIU, source, p.forks, log) : null;
  const quota = runs('quota') ? await quotaCost(s, p, baseSource) : null;
  const ownWork = runs('own-work')
    ? await measureOwnWork({
        client: c,
        desktop: source,
        poolDir: path.join(s.t.stateDir, 'pool'),
        workDir: '/var/tmp',
        rounds: p.ownWorkRounds,
        proceed: () => s.proceed(),
        log,
        desktopUp: (ws) => desktopUp(c, ws),
      })
    : null;

  const agentLoop = runs('agent-loop')
    ? await measureAgentLoop(
        {
          client: c,
          baselineSetting: () => s.baselineSetting(),
          asBaselineSource: (ws) => baselineSource(s, ws),
          baselines: s.baselines,
          proceed: () => s.proceed(),
          log,
        },
        p.agentLoopTasks,
      )
    : null;

  const merge = runs('merge')
    ? await measureMerge({ client: c, workDir: '/var/tmp', rounds: p.mergeRounds, proceed: () => s.proceed(), log, desktopUp: (ws) => desktopUp(c, ws) })
    : null;

  const grove: Side = {
    ...side(forks.grove),
    errors: [...forks.groveErrors, ...chain.errors],
    fanout: fan.grove.points,
    fanoutSkipped: fan.grove.skipped,
    readLatency: chain.reads,
  };
  const criu: Side = { ...side(forks.criu), errors: forks.criuErrors, fanout: fan.criu.points, fanoutSkipped: fan.criu.skipped, readLatency: naiveReads };
  const ratio = speedup(criu.forkToFirstFrameMs.p50 ?? Number.NaN, grove.forkToFirstFrameMs.p50 ?? Number.NaN);
  const measured = {
    schema: RESULT_SCHEMA,
    startedAt,
    finishedAt: new Date().toISOString(),
    quick,
    sections,
    forks: runs('fork') ? p.forks : 0,
    host: await hostInfo(loadavgStart),
    layout: baseSource.overlay ? ('overlay' as const) : ('subvolume' as const),
    grove,
    criu,
    ratio: ratio === null ? null : round(ratio, 3),
    depthForks: chain.depthForks,
    computerUse,
    cli,
    cage,
    profile,
    ownWork,
    quota,
    agentLoop,
    merge,
    notes: NOTES,
  };
  return BenchResult.parse({ ...measured, targets: checkTargets(measured) });
}

const NOTES = [
  'grove.* is measured inside the helper (branch.fork report); its total includes waiting for the child’s first VNC frame.',
  'criu.* is plain CRIU on the same source: dump --leave-running (same flags) + eager restore into a plain btrfs snapshot in a fresh netns, to the first frame (baseline.ts). Its stages: prepare = netns+veth+firewall; dump includes the post-dump read-only snapshot; restore includes the writable snapshot; there is no thaw or expose stage.',
  'fanout: Grove = one branch.fork call with N copies; criu = one dump + N eager restores in parallel. firstMs = the first copy on screen (its first frame), totalMs = the last; each copy is probed once its own restore is done. pssMiB = PSS summed over every process in the N copies’ pid namespaces right after the last first frame; *Settled = the same settleMs later. memAvailableDropMiB = MemAvailable just before the fan-out minus MemAvailable then: host-wide, so other work on the machine shows in it (even as a negative drop), which PSS is immune to. The copies are removed before the next run, and each run starts 20 s after (FANOUT_COOLDOWN_MS): this VM takes back memory the guest freed within seconds and gives it again at ~250 MiB/s on first touch, so without the pause the side that ran second restored into memory the first had just freed. criu’s MemAvailable drop includes its dump images on tmpfs (kept until its copies are removed).',
  'Plain CRIU restores keep the source’s VM_MERGEABLE marks, so ksmd (paced by the helper: fast for a while after each Grove fork) can merge their pages too.',
  'grove.readLatency: real Grove branches, a chain of forks (each parent discarded once its child is up), read inside the branch. criu.readLatency: layout naive-overlay = an overlay with depth+1 stacked lowerdirs (one per fork generation) plus a private upper, built on the host; the file comes from the bottom layer, read through the top mount by the same script.',
  'readLatency.us = µs per open+read+close of a small inherited file (warm); bigRead* = one sequential read after POSIX_FADV_DONTNEED on that file.',
  "computerUse: through the helper's socket like an agent. screenshotMs = desktop.screenshot of the whole screen, request to reply (PNG, base64); actionToFrameMs = from sending desktop.key (a letter into the start page's note) until a second VNC client (the bench's own) receives the frame with the page's new colour; pngEncodeMs = the helper's PNG encoder on one full-screen frame, in process.",
  "cli: whoamiMs = main/bin/grove --socket (the bench helper's) whoami, from spawn to exit, the launcher's check that dist/ is fresh included; after one untimed call.",
  'cage: caged = a fresh desktop of this run’s helper; uncaged = a second helper instance with GROVE_BENCH_UNCAGED=1 (Docker’s default capabilities, no no_new_privs, no seccomp, no cgroups) and a desktop of its own from the same image; one fork each in turn. forkToFirstFrameMs is the helper’s fork report total; childPssMiB sums PSS over the child’s pid namespace right after its first frame.',
  "ownWork: pull = image.pull of a ~500 MiB image (Debian shared libraries, FROM scratch) from a docker-registry on loopback with TLS and basic auth, against skopeo copy to an OCI layout + umoci unpack of it into the pool; project = file.copyIn (the path a --project copy takes) of 20,000 files, 300 MiB (random, so incompressible) into the running desktop, against cp -a of it into the pool, after a sync each; fork = the report's fork → first frame of a branch of an image built FROM grove/desktop against the desktop, alternating.",
  "quota: three scratch pools made as the helper makes its pool (4 GiB sparse loop file, compress=zstd:1, noatime), each with the same files: simple quotas enabled as the helper does (grove-quota), none, full qgroups (btrfs quota enable). The files: the desktop's files subvolume (btrfs send/receive) and an agent's work copied into its upper (5,000 files of 4-64 KiB and a 200 MiB file, random). Per round and pool, in turn: 1 MiB written into the files (untimed); fork = grove-action post-dump's writable snapshot + the child's limit (grove-quota limit; none on the no-quota pool) beside a bind mount of the child's home (grove-mount), as the helper sets it beside the child's mounts + a 4 KiB write in the child + btrfs filesystem sync; checkpoint = the read-only snapshot + sync; discard = btrfs subvolume delete of both + sync. The fork and checkpoint sections above run on the bench helper's own pool, which has simple quotas.",
  "agentLoop: each strategy runs the same tasks (agent-tasks.ts), each from a fresh desktop workspace made before its clock starts (first frame, Chromium running, 5 s more). waitMs = forks, checkpoints, rollbacks, plain-CRIU dumps and restores (to the copy's first frame), and for cold-restart a new workspace (to its first frame, Chromium running and the screen still for 0.5 s: desktop.wait) plus the replay of the steps so far. Grove's fork-and-pick discards the losers as it goes on; plain CRIU's keeps a fork's three copies until the next fork has picked its winner (one dump, removed whole), so its peak holds two forks' copies. Plain CRIU's rollback restores into a fresh netns, and stops the task's Grove workspace, untimed, in place of a kill.",
  "merge: a desktop workspace whose project (/root/work) is a git repository of 20,000 text files of 40 lines is forked into three each round: two sources each change line 7 of 200 files (different ones); branch.merge with dryRun and then branch.merge of both into the third, live (the merge checkpoints it first, to saved), timed from the client; a checkpoint of the target alone is timed before, to show what of the merge is its checkpoint. git: the same two changes as one commit each on two branches of a plain clone on the same disk (/var/tmp), git merge --no-ff of both into the trunk (one octopus merge), reset between rounds, untimed. export: branch.export of the merged target (both sources' 400 files) as a commit on a new branch of the project's repository.",
  'Percentiles interpolate linearly between ranks; with 3-5 samples p95 is close to the maximum.',
];

/** Where the baseline finds the source on the host. */
async function baselineSource(s: Session, source: Workspace): Promise<BaselineSource> {
  const b = await readBaselineSource({
    pid: source.pid!,
    subvolume: path.join(s.t.stateDir, 'pool/workspaces', source.id),
    rootfs: path.join(`${s.t.runDir}-roots`, source.id, 'root'),
    netns: `grove-${s.t.instance}-${source.id}`,
  });
  if (!existsSync(b.subvolume) || !existsSync(`/run/netns/${b.netns}`)) {
    throw new Error(`cannot find the source's subvolume ${b.subvolume} or netns ${b.netns}`);
  }
  log(`source layout: ${b.overlay ? `overlay over ${b.overlay.lower}` : 'plain btrfs subvolume root'}`);
  return b;
}

/** Grove first, then plain CRIU, alternating; a failed fork is recorded and the run goes on. */
async function forkLatency(s: Session, p: Plan, source: Workspace, baseSource: BaselineSource) {
  const c = s.client!;
  const out = { grove: [] as StageTimings[], criu: [] as StageTimings[], groveErrors: [] as string[], criuErrors: [] as string[] };
  for (let i = 0; i < p.forks; i++) {
    s.proceed();
    try {
      const report = await c.request('branch.fork', { workspace: source.id, copies: 1, names: [`bench-g${i}`] });
      out.grove.push({ ...report.timings });
      log(`grove fork ${i + 1}/${p.forks}: ${fmtTimings(report.timings)}`);
      for (const child of report.children) await c.request('workspace.delete', { workspace: child.id });
    } catch (err) {
      out.groveErrors.push((err as Error).message);
      log(`grove fork ${i + 1}/${p.forks} FAILED: ${(err as Error).message}`);
    }
    await sleep(1000);
    s.proceed();
    const b = new BaselineFork(s.baselineSetting(), baseSource, String(i));
    s.baselines.add(b);
    try {
      const timings = await b.run();
      out.criu.push(timings);
      log(`criu  fork ${i + 1}/${p.forks}: ${fmtTimings(timings)}`);
    } catch (err) {
      out.criuErrors.push((err as Error).message);
      log(`criu  fork ${i + 1}/${p.forks} FAILED: ${(err as Error).message}`);
    }
    await removeOrThrow(`baseline fork ${i}`, () => b.cleanup());
    s.baselines.delete(b);
    await sleep(1000);
    await sourceStillRunning(c, source);
  }
  return out;
}

/**
 * This VM gives the guest memory it has not used lately at ~250 MiB/s on
 * first touch, against ~2 GiB/s for memory it used in the last seconds (its
 * balloon reports free memory to the host, which takes it back: a few GiB
 * within 3 s, down to a baseline of ~3 GiB within 20 s; docs/fork-profile.md).
 * With a short pause, the side that ran second restored into the memory the
 * first had just freed. After this long, both start from the baseline.
 */
const FANOUT_COOLDOWN_MS = 20_000;

/** For each size: Grove, then plain CRIU; a size that would not fit in memory is skipped and says why. */
async function fanouts(s: Session, p: Plan, source: Workspace, baseSource: BaselineSource) {
  const c = s.client!;
  const sides = {
    grove: { points: [] as FanoutPoint[], skipped: [] as SkippedFanout[] },
    criu: { points: [] as FanoutPoint[], skipped: [] as SkippedFanout[] },
  };
  const sourceNs = await pidNamespace(source.pid!);
  let perCopyMiB = sourceNs ? (await pssOfPidNamespaces(new Set([sourceNs]))).pssMiB : 1024;
  log(`source PSS ${Math.round(perCopyMiB)} MiB`);
  for (const copies of p.fanoutSizes) {
    for (const name of ['grove', 'criu'] as const) {
      s.proceed();
      const room = await fits(copies, perCopyMiB);
      if (!room.ok) {
        sides[name].skipped.push({ copies, reason: `not enough memory: ${room.reason}` });
        log(`${name} fan-out ${copies}: SKIPPED, ${room.reason}`);
        continue;
      }
      // What ran before (the last side's copies included) has returned its memory, and this VM has taken it back.
      await sleep(FANOUT_COOLDOWN_MS);
      log(`${name} fan-out to ${copies} cop${copies === 1 ? 'y' : 'ies'} (then ${p.settleMs / 1000} s to settle)`);
      const run: FanoutRun = name === 'grove' ? groveFanout(c, source.id, copies) : criuFanout(s.baselineSetting(), baseSource, copies, s.baselines);
      try {
        const point = await measureFanout(copies, run, p.settleMs);
        sides[name].points.push(point);
        perCopyMiB = Math.max(perCopyMiB, point.pssMiB / copies);
        log(
          `${name} fan-out ${copies}: first on screen after ${Math.round(point.firstMs ?? Number.NaN)} ms, the last after ${Math.round(point.totalMs)} ms, PSS ${point.pssMiB} → ${point.pssMiBSettled} MiB, MemAvailable drop ${point.memAvailableDropMiB} → ${point.memAvailableDropMiBSettled} MiB`,
        );
      } catch (err) {
        sides[name].skipped.push({ copies, reason: `failed: ${(err as Error).message}` });
        log(`${name} fan-out ${copies} FAILED: ${(err as Error).message}`);
      } finally {
        await removeOrThrow(`${name} fan-out ${copies}`, () => run.remove());
      }
      await sourceStillRunning(c, source);
    }
  }
  return sides;
}

async function naiveReadLatency(s: Session, p: Plan): Promise<ReadLatency[]> {
  const reads: ReadLatency[] = [];
  for (const depth of p.depths) {
    s.proceed();
    const r = await s.naive.measure(depth, p.readRounds);
    reads.push(r);
    log(`naive overlay read at depth ${depth}: ${r.us.toFixed(2)} µs/read`);
  }
  await removeOrThrow('naive overlays', () => s.naive.cleanup());
  return reads;
}

/**
 * A chain of real forks down to the deepest depth: each child is forked from
 * the previous one, which is then discarded (the source excepted), so only
 * the source and the newest branch are alive at any time.
 */
async function groveReadLatency(s: Session, p: Plan, source: Workspace) {
  const c = s.client!;
  const reads: ReadLatency[] = [];
  const depthForks: StageTimings[] = [];
  const errors: string[] = [];
  const readAt = async (ws: Workspace, depth: number) => {
    if (!p.depths.includes(depth)) return;
    const r = await measureReadLatency(inBranch(c, ws.id), { layout: 'grove', depth, files: IMAGE_FILES }, p.readRounds);
    reads.push(r);
    log(`grove read at depth ${depth}: ${r.us.toFixed(2)} µs/read (${r.smallFiles} files), ${r.bigFile} ${r.bigReadMiBps.toFixed(0)} MiB/s`);
  };
  await readAt(source, 0);
  let newest = source;
  try {
    for (let depth = 1; depth <= Math.max(...p.depths); depth++) {
      s.proceed();
      const report = await c.request('branch.fork', { workspace: newest.id, copies: 1, names: [`bench-d${depth}`] });
      const parent = newest;
      newest = report.children[0]!;
      depthForks.push({ depth, ...report.timings });
      log(`depth ${depth}: ${fmtTimings(report.timings)}`);
      if (parent !== source) await c.request('workspace.delete', { workspace: parent.id });
      await readAt(newest, depth);
    }
  } catch (err) {
    errors.push(`fork chain at depth ${depthForks.length + 1}: ${(err as Error).message}`);
    log(`fork chain FAILED at depth ${depthForks.length + 1}: ${(err as Error).message}`);
  } finally {
    if (newest !== source) await c.request('workspace.delete', { workspace: newest.id }).catch(() => undefined);
  }
  return { reads, depthForks, errors };
}

/**
 * Starts the uncaged comparison helper, gives each side a fresh desktop of its
 * own, then forks both sides alternately. The caged side is not the run's
 * source: by then that one has been typed into, forked and fanned out, and
 * its children carried ~18 MiB more and took ~10 % longer than a fresh
 * desktop's, which this figure counted as the cage's (+13.3 % in
 * the full run of 2026-12-02 16:29; +4.9 % with both sides fresh in the
 * cage section run alone that day: docs/bench-history.md). Both desktops are removed afterwards, so the
 * profile runs beside nothing new.
 */
async function cageCost(s: Session, p: Plan) {
  s.proceed();
  const t = testInstance(`u${s.t.instance.slice(1)}`);
  t.env.GROVE_SUBNET = UNCAGED_SUBNET;
  t.env.GROVE_BENCH_UNCAGED = '1';
  s.uncaged = { t, client: null };
  log(`cage: starting the uncaged comparison helper ${t.instance} (log ${t.logFile})`);
  await startHelper(t);
  const uc = (s.uncaged.client = await HelperClient.connect({ socketPath: t.socketPath, name: 'bench-uncaged', kind: 'test' }));
  await uc.request('image.build', { name: 'desktop' });
  const caged = { client: s.client!, source: await s.client!.request('workspace.create', { name: 'bench-caged' }) };
  const uncaged = { client: uc, source: await uc.request('workspace.create', { name: 'bench-uncaged' }) };
  try {
    await Promise.all([caged, uncaged].map((side) => desktopUp(side.client, side.source)));
    return await measureCage({ caged, uncaged }, p.forks, () => s.proceed(), log);
  } finally {
    for (const side of [caged, uncaged]) await side.client.request('workspace.delete', { workspace: side.source.id }).catch(() => undefined);
  }
}

/** The quota section's scratch pools: made, measured, removed. */
async function quotaCost(s: Session, p: Plan, source: BaselineSource) {
  s.proceed();
  const pools = (s.quotaPools = new QuotaPools({
    groveAction: GROVE_ACTION,
    groveQuota: GROVE_QUOTA,
    groveMount: GROVE_MOUNT,
    dir: path.join(s.t.stateDir, 'quota-pools'),
    source: source.subvolume,
    sourcePoolDir: s.baselineSetting().subvolumeDir,
  }));
  try {
    return await pools.measure(p.quotaRounds, () => s.proceed(), log);
  } finally {
    await removeOrThrow("the quota section's scratch pools", () => pools.cleanup());
    s.quotaPools = null;
  }
}

async function removeOrThrow(what: string, remove: () => Promise<string[]>): Promise<void> {
  const problems = await remove();
  if (problems.length > 0) throw new Error(`${what} left objects behind: ${problems.join('; ')}`);
}

async function sourceStillRunning(c: HelperClient, source: Workspace): Promise<void> {
  const still = await c.request('workspace.get', { workspace: source.id });
  if (still.state !== 'running' || still.pid !== source.pid) throw new Error(`the source is no longer running (${still.state})`);
}

/** The desktop serves frames, and Chromium has had a few seconds to draw its start page. */
async function desktopUp(c: HelperClient, ws: Workspace): Promise<void> {
  if (!ws.vncSocket) throw new Error(`the workspace serves no desktop (it is ${ws.state})`);
  await firstFrame({ path: ws.vncSocket }, { timeoutMs: 120_000 });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await c.request('exec.run', {
      workspace: ws.id,
      argv: ['sh', '-c', 'pgrep -x chromium >/dev/null || pgrep -f /usr/lib/chromium/chromium >/dev/null'],
    });
    if (res.exitCode === 0) break;
    if (Date.now() > deadline) throw new Error('Chromium did not start in the workspace within 120 s');
    await sleep(1000);
  }
  await sleep(8000);
  log('desktop is up (first frame, Chromium running + 8 s)');
}

/** Percentiles of one side's fork samples (fan-out and read latency are added by the caller). */
function side(samples: StageTimings[]): Pick<Side, 'forkToFirstFrameMs' | 'sourceFrozenMs' | 'stages' | 'samples'> {
  const by = summarizeByKey(samples);
  const pick = (x: Summary | undefined) => ({ p50: x ? round(x.p50) : null, p95: x ? round(x.p95) : null });
  const stages: Side['stages'] = {};
  for (const [k, x] of Object.entries(by)) stages[k] = pick(x);
  return { forkToFirstFrameMs: pick(by.total), sourceFrozenMs: pick(by.sourceFrozen), stages, samples: samples.map((x) => roundAll(x)) };
}

function fmtTimings(timings: StageTimings): string {
  return Object.entries(timings)
    .map(([k, v]) => `${k} ${Math.round(v)}`)
    .join(', ');
}

async function hostInfo(loadavgStart: number[]): Promise<HostInfo> {
  const version = await execa(CRIU, ['--version'], { reject: false });
  const mem = /MemTotal:\s+(\d+)/.exec(await readFile('/proc/meminfo', 'utf8'))?.[1];
  return {
    kernel: os.release(),
    cpus: os.cpus().length,
    memTotalMiB: Math.round(Number(mem ?? 0) / 1024),
    loadavgStart: loadavgStart.map((x) => round(x, 2)),
    loadavgEnd: os.loadavg().map((x) => round(x, 2)),
    criu: String(version.stdout).split('\n')[0] ?? 'unknown',
  };
}
