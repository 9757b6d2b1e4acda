// npm run bench -- [--quick] [--json] [--out FILE]
//
// Fork benchmark on the standard desktop workspace (Chromium with its start
// page, xterm, editor), as root, on its own helper instance (purged at the
// end, also on failure and on Ctrl-C):
//   - Grove: branch.fork of 1 copy, N times from one source (each child is
//     discarded after it is measured); fork → child's first frame is the
//     fork report's total, which includes waiting for the child's first VNC frame.
//   - plain CRIU, in the same run and on the same source, interleaved with
//     Grove's forks so both see the same background load: dump
//     --leave-running (same flags) + eager restore into a plain btrfs snapshot
//     in a fresh netns, to the child's first frame (see baseline.ts).
//   - read latency of inherited files at depth 0 and in a fork of a fork of
//     a fork (depth 3), measured inside each branch (see read-latency.ts).
// It prints a table and writes JSON to privileged-helper/bench/results/
// (the JSON shape is the one issue 6 extends: fanout goes next to these).
// Nothing here asserts on time: the numbers are printed, not judged.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { execa } from 'execa';
import { HelperClient } from '../../main/src/helper-client/client.js';
import { firstFrame } from '../src/host/rfb-probe.js';
import type { ForkReport, Workspace } from '../src/protocol/entities.js';
import { purge, startHelper, tail, testInstance } from '../test/system/helper-process.js';
import { leftovers } from '../test/system/leftovers.js';
import { BaselineFork, sourceLayout, type BaselineSetting, type BaselineSource } from './baseline.js';
import { measureReadLatency, type ReadLatency } from './read-latency.js';
import { round, speedup, summarizeByKey, type Summary } from './stats.js';

const RESULTS_DIR = path.join(import.meta.dirname, 'results');
/** Not the dev helper's (10.213/10.214) nor the system tests' (10.215) range. */
const BENCH_SUBNET = '10.217.0.0/16';
const DEPTH = 3;

interface Side {
  forkToFirstFrameMs: { p50: number; p95: number };
  sourceFrozenMs: { p50: number; p95: number };
  stages: Record<string, { p50: number; p95: number }>;
  samples: Record<string, number>[];
  /** Forks that failed (not in the samples). */
  errors?: string[];
}

export interface ForkBenchResult {
  schema: 'grove-bench/fork@1';
  startedAt: string;
  finishedAt: string;
  quick: boolean;
  forks: number;
  host: { kernel: string; cpus: number; memTotalMiB: number; loadavgStart: number[]; loadavgEnd: number[]; criu: string };
  /** The source's file layout: its own subvolume, or an overlay (image lower + subvolume upper). */
  layout: 'subvolume' | 'overlay';
  grove: Side;
  criu: Side;
  /** criu.forkToFirstFrameMs.p50 / grove.forkToFirstFrameMs.p50: how many times faster Grove is. */
  ratio: number | null;
  readLatency: ReadLatency[];
  /** Timings of the forks that built the depth chain (fork of fork of fork). */
  depthForks: Record<string, number>[];
  notes: string[];
}

const log = (msg: string) => process.stderr.write(`[bench] ${msg}\n`);

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: { quick: { type: 'boolean', default: false }, json: { type: 'boolean', default: false }, out: { type: 'string' } },
    strict: true,
  });
  if (process.getuid?.() !== 0) throw new Error('the benchmark runs as root (it starts its own helper and runs CRIU)');
  const quick = values.quick!;
  const forks = quick ? 3 : 5;
  const readRounds = quick ? 200 : 1000;

  const t = testInstance(`b${randomBytes(2).toString('hex').slice(0, 3)}`);
  t.env.GROVE_SUBNET = BENCH_SUBNET;
  const baselines = new Set<BaselineFork>();
  let client: HelperClient | null = null;

  let finished: Promise<string[]> | null = null;
  const finish = (): Promise<string[]> =>
    (finished ??= (async () => {
      client?.close();
      const problems: string[] = [];
      for (const b of baselines) problems.push(...(await b.cleanup()));
      try {
        await purge(t);
      } catch (err) {
        problems.push(`purge: ${(err as Error).message}`);
      }
      problems.push(...(await leftovers(t)));
      for (const f of [t.pidFile, t.pidNsFile]) await execa('rm', ['-f', '--', f], { reject: false });
      if (problems.length === 0) await execa('rm', ['-f', '--', t.logFile], { reject: false });
      return problems;
    })());
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      log(`${sig}: removing everything the benchmark made (instance ${t.instance})…`);
      void finish().then((problems) => {
        for (const p of problems) log(`left behind: ${p}`);
        process.exit(130);
      });
    });
  }

  const startedAt = new Date().toISOString();
  const loadavgStart = os.loadavg();
  try {
    log(`instance ${t.instance}: starting a helper (log ${t.logFile})`);
    await startHelper(t);
    client = await HelperClient.connect({ socketPath: t.socketPath, name: 'fork-bench', kind: 'test' });
    const c = client;
    await c.subscribe(['progress']);
    c.on('progress', (p) => log(`[${p.stage}] ${p.message}`));
    await c.request('image.build', { name: 'desktop' });

    log('creating the standard desktop workspace');
    const source = await c.request('workspace.create', { name: 'bench' });
    await desktopUp(c, source);

    const setting = (index: number): BaselineSetting => ({
      criuBinary: process.env.GROVE_CRIU ?? '/var/cache/grove/criu/sbin/criu',
      instance: t.instance,
      subnet: BENCH_SUBNET,
      netIndex: 16383 - index, // the helper hands out /30s from the bottom
      subvolumeDir: path.join(t.stateDir, 'pool/workspaces'),
      scratchDir: path.join(t.runDir, 'scratch'),
      firstFrameTimeoutMs: 60_000,
      failedLogsDir: `/var/tmp/grove-bench-${t.instance}-criu-logs`,
    });
    const baseSource: BaselineSource = {
      pid: source.pid!,
      subvolume: path.join(t.stateDir, 'pool/workspaces', source.id),
      overlay: await sourceLayout(path.join(t.runDir, 'roots', source.id)),
      netns: `grove-${t.instance}-${source.id}`,
    };
    if (!existsSync(baseSource.subvolume) || !existsSync(`/run/netns/${baseSource.netns}`)) {
      throw new Error(`cannot find the source's subvolume ${baseSource.subvolume} or netns ${baseSource.netns}`);
    }
    log(`source layout: ${baseSource.overlay ? `overlay over ${baseSource.overlay.lowerdir} (${baseSource.overlay.options})` : 'plain btrfs subvolume root'}`);

    const grove: Record<string, number>[] = [];
    const criu: Record<string, number>[] = [];
    const groveErrors: string[] = [];
    const criuErrors: string[] = [];
    for (let i = 0; i < forks; i++) {
      // Grove first, then plain CRIU, alternating: both see the same background load.
      // A failed fork is recorded and the run goes on (the helper undoes a failed fork itself).
      try {
        const report: ForkReport = await c.request('branch.fork', { workspace: source.id, copies: 1, names: [`bench-g${i}`] });
        grove.push({ ...report.timings });
        log(`grove fork ${i + 1}/${forks}: ${fmtTimings(report.timings)}`);
        for (const child of report.children) await c.request('workspace.delete', { workspace: child.id });
      } catch (err) {
        groveErrors.push((err as Error).message);
        log(`grove fork ${i + 1}/${forks} FAILED: ${(err as Error).message}`);
      }
      await sleep(1000);

      const b = new BaselineFork(setting(i), baseSource, String(i));
      baselines.add(b);
      let timings: Record<string, number> | null = null;
      try {
        timings = await b.run();
      } catch (err) {
        criuErrors.push((err as Error).message);
        log(`criu  fork ${i + 1}/${forks} FAILED: ${(err as Error).message}`);
      }
      const problems = await b.cleanup();
      baselines.delete(b);
      if (problems.length > 0) throw new Error(`the baseline fork left objects behind: ${problems.join('; ')}`);
      if (timings) {
        criu.push(timings);
        log(`criu  fork ${i + 1}/${forks}: ${fmtTimings(timings)}`);
      }
      await sleep(1000);
      const still = await c.request('workspace.get', { workspace: source.id });
      if (still.state !== 'running' || still.pid !== source.pid) throw new Error(`the source is no longer running (${still.state})`);
    }

    log(`building a chain of ${DEPTH} forks (fork of fork of fork)`);
    const chain: Workspace[] = [source];
    const depthForks: Record<string, number>[] = [];
    try {
      try {
        for (let d = 1; d <= DEPTH; d++) {
          const report = await c.request('branch.fork', { workspace: chain[d - 1]!.id, copies: 1, names: [`bench-d${d}`] });
          chain.push(report.children[0]!);
          depthForks.push({ depth: d, ...report.timings });
          log(`depth ${d}: ${fmtTimings(report.timings)}`);
        }
      } catch (err) {
        groveErrors.push(`depth ${chain.length}: ${(err as Error).message}`);
        log(`fork at depth ${chain.length} FAILED: ${(err as Error).message}`);
      }
      const readLatency: ReadLatency[] = [];
      for (let d = 0; d < chain.length; d++) {
        const r = await measureReadLatency(c, chain[d]!.id, d, readRounds);
        readLatency.push(r);
        log(`read at depth ${d}: ${r.us.toFixed(1)} µs/read (${r.smallFiles} files), ${r.bigFile} ${r.bigReadMiBps.toFixed(0)} MiB/s`);
      }

      const result: ForkBenchResult = {
        schema: 'grove-bench/fork@1',
        startedAt,
        finishedAt: new Date().toISOString(),
        quick,
        forks,
        host: await hostInfo(loadavgStart, setting(0).criuBinary),
        layout: baseSource.overlay ? 'overlay' : 'subvolume',
        grove: { ...side(grove), errors: groveErrors },
        criu: { ...side(criu), errors: criuErrors },
        ratio: null,
        readLatency,
        depthForks,
        notes: [
          "Grove's fork is today itself CRIU dump --leave-running + eager restore into a btrfs snapshot, so a ratio near 1 is expected.",
          'grove.total is measured inside the helper (branch.fork report); it includes waiting for the child’s first VNC frame.',
          'criu stages: prepare = netns+veth+firewall; dump includes the post-dump read-only snapshot; restore includes the writable snapshot; there is no thaw or expose stage.',
          'Percentiles interpolate linearly between ranks; with 3-5 samples p95 is close to the maximum.',
          'readLatency.us = µs per open+read+close of a small inherited file (warm); bigRead* = one sequential read after POSIX_FADV_DONTNEED on that file.',
        ],
      };
      const ratio = speedup(result.criu.forkToFirstFrameMs.p50, result.grove.forkToFirstFrameMs.p50);
      result.ratio = ratio === null ? null : round(ratio, 3);

      const out = values.out ? path.resolve(values.out) : path.join(RESULTS_DIR, `fork-${startedAt.replace(/[:.]/g, '-')}.json`);
      await mkdir(path.dirname(out), { recursive: true });
      await writeFile(out, `${JSON.stringify(result, null, 2)}\n`);
      if (values.json) process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
      else process.stdout.write(table(result));
      log(`results written to ${out}`);
    } finally {
      for (const ws of chain.slice(1).reverse()) await c.request('workspace.delete', { workspace: ws.id }).catch(() => undefined);
    }
    return 0;
  } catch (err) {
    log(`failed: ${(err as Error).stack ?? String(err)}`);
    log(`helper log tail:\n${tail(t.logFile)}`);
    return 1;
  } finally {
    log(`removing instance ${t.instance}`);
    const problems = await finish();
    for (const p of problems) log(`left behind: ${p}`);
    if (problems.length > 0) process.exitCode = 1;
  }
}

/** The desktop serves frames, and Chromium has had a few seconds to draw its start page. */
async function desktopUp(c: HelperClient, ws: Workspace): Promise<void> {
  const vnc = ws.ports.find((p) => p.containerPort === 5900);
  if (!vnc) throw new Error('the workspace maps no VNC port');
  await firstFrame('127.0.0.1', vnc.hostPort, { timeoutMs: 120_000 });
  const deadline = Date.now() + 120_000;
  for (;;) {
    const res = await c.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', 'pgrep -x chromium >/dev/null || pgrep -f /usr/lib/chromium/chromium >/dev/null'] });
    if (res.exitCode === 0) break;
    if (Date.now() > deadline) throw new Error('Chromium did not start in the workspace within 120 s');
    await sleep(1000);
  }
  await sleep(8000);
  log('desktop is up (first frame, Chromium running + 8 s)');
}

function side(samples: Record<string, number>[]): Side {
  if (samples.length === 0) return { forkToFirstFrameMs: { p50: Number.NaN, p95: Number.NaN }, sourceFrozenMs: { p50: Number.NaN, p95: Number.NaN }, stages: {}, samples: [] };
  const by = summarizeByKey(samples);
  const pick = (s: Summary | undefined) => ({ p50: round(s?.p50 ?? Number.NaN), p95: round(s?.p95 ?? Number.NaN) });
  const stages: Side['stages'] = {};
  for (const [k, s] of Object.entries(by)) stages[k] = pick(s);
  return { forkToFirstFrameMs: pick(by.total), sourceFrozenMs: pick(by.sourceFrozen), stages, samples: samples.map(roundAll) };
}

function roundAll(r: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v)]));
}

function fmtTimings(timings: Record<string, number>): string {
  return Object.entries(timings)
    .map(([k, v]) => `${k} ${Math.round(v)}`)
    .join(', ');
}

async function hostInfo(loadavgStart: number[], criuBinary: string): Promise<ForkBenchResult['host']> {
  const version = await execa(criuBinary, ['--version'], { reject: false });
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

function table(r: ForkBenchResult): string {
  const lines: string[] = [];
  const n = (x: number | undefined) => (x === undefined || Number.isNaN(x) ? '—' : String(Math.round(x)));
  const pad = (cells: string[]) => cells.map((s, i) => (i === 0 ? s.padEnd(16) : s.padStart(10))).join(' ');
  lines.push('', `Fork of the standard desktop (${r.layout} layout), 1 copy, ${r.forks} forks each (ms; load ${r.host.loadavgStart.join(' ')} → ${r.host.loadavgEnd.join(' ')}, ${r.host.cpus} CPUs)`);
  lines.push(pad(['stage', 'grove p50', 'grove p95', 'criu p50', 'criu p95']));
  const stages = ['prepare', 'dump', 'sourceFrozen', 'thaw', 'restore', 'expose', 'firstFrame', 'total'];
  for (const s of stages) {
    lines.push(pad([s === 'total' ? 'fork→1st frame' : s, n(r.grove.stages[s]?.p50), n(r.grove.stages[s]?.p95), n(r.criu.stages[s]?.p50), n(r.criu.stages[s]?.p95)]));
  }
  for (const [name, sd] of [['grove', r.grove], ['criu', r.criu]] as const) {
    if (sd.errors?.length) lines.push(`${name}: ${sd.errors.length} fork(s) failed, first: ${sd.errors[0]!.slice(0, 300)}`);
  }
  lines.push(
    '',
    `ratio (criu p50 / grove p50, fork → first frame): ${r.ratio === null ? '—' : r.ratio.toFixed(2)}×` +
      '  (Grove’s fork is itself CRIU dump + eager restore today, so ≈1 is expected)',
    '',
    'Read latency of inherited files (inside the branch)',
    ['depth', 'µs/read', 'files', 'cold big read'].map((s, i) => (i === 0 ? s.padEnd(8) : s.padStart(10))).join(' '),
  );
  for (const x of r.readLatency) {
    lines.push(
      `${String(x.depth).padEnd(8)} ${x.us.toFixed(1).padStart(10)} ${String(x.smallFiles).padStart(10)}   ` +
        `${x.bigReadMiBps.toFixed(0)} MiB/s (${x.bigFile}, ${x.bigFileMiB.toFixed(0)} MiB${x.bigFileMapped ? ', mapped by a process' : ''})`,
    );
  }
  return `${lines.join('\n')}\n`;
}

process.exitCode = await main();
