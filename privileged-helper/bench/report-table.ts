// The benchmark's printout for people: the same numbers as the JSON, side by
// side, with each of the targets (issues 6 and 10) next to what was measured.
import type { BenchResult, BenchSection, OwnWorkPair, ProfileCheckpoint, ProfileFork, QuotaSide, Side } from './result-schema.js';
import { median } from './stats.js';

const STAGES = ['prepare', 'dump', 'sourceFrozen', 'thaw', 'restore', 'expose', 'firstFrame', 'total'];

export function reportTable(r: BenchResult): string {
  const only = (section: BenchSection, lines: () => string[]) => (r.sections.includes(section) ? lines() : []);
  return [
    ...only('fork', () => forkSection(r)),
    ...only('fanout', () => fanoutSection(r)),
    ...only('read-latency', () => readSection(r)),
    ...computerUseSection(r),
    ...cliSection(r),
    ...cageSection(r),
    ...profileSection(r),
    ...ownWorkSection(r),
    ...quotaSection(r),
    ...agentLoopSection(r),
    ...mergeSection(r),
    ...targetSection(r),
    '',
  ].join('\n');
}

const num = (x: number | null | undefined) => (x === null || x === undefined || Number.isNaN(x) ? '—' : String(Math.round(x)));
const row = (cells: string[], first = 16) => cells.map((s, i) => (i === 0 ? s.padEnd(first) : s.padStart(11))).join(' ');

function forkSection(r: BenchResult): string[] {
  const lines = [
    '',
    `Fork of the standard desktop (${r.layout} layout), 1 copy, ${r.forks} forks each (ms; load ${r.host.loadavgStart.join(' ')} → ${r.host.loadavgEnd.join(' ')}, ${r.host.cpus} CPUs)`,
    row(['stage', 'grove p50', 'grove p95', 'criu p50', 'criu p95']),
  ];
  for (const s of STAGES) {
    const g = r.grove.stages[s];
    const c = r.criu.stages[s];
    lines.push(row([s === 'total' ? 'fork→1st frame' : s, num(g?.p50), num(g?.p95), num(c?.p50), num(c?.p95)]));
  }
  for (const [name, side] of [
    ['grove', r.grove],
    ['criu', r.criu],
  ] as const) {
    if (side.errors.length) lines.push(`${name}: ${side.errors.length} failure(s), first: ${side.errors[0]!.slice(0, 300)}`);
  }
  lines.push(`ratio (criu p50 / grove p50, fork → first frame): ${r.ratio === null ? '—' : r.ratio.toFixed(2)}×`);
  return lines;
}

function fanoutSection(r: BenchResult): string[] {
  const lines = ['', 'Fan-out: N copies in one go (time to the first and to the last first frame; memory summed over all copies, then settled)'];
  lines.push(row(['side / copies', 'first ms', 'total ms', 'PSS MiB', 'settled', 'MemAvail↓', 'settled'], 16));
  const sideRows = (name: string, side: Side) => {
    for (const f of side.fanout) {
      lines.push(
        row([
          `${name} ${f.copies}`,
          num(f.firstMs),
          num(f.totalMs),
          num(f.pssMiB),
          num(f.pssMiBSettled),
          num(f.memAvailableDropMiB),
          num(f.memAvailableDropMiBSettled),
        ]),
      );
    }
    for (const s of side.fanoutSkipped) lines.push(`${name} ${s.copies}: skipped — ${s.reason}`);
  };
  sideRows('grove', r.grove);
  sideRows('criu', r.criu);
  return lines;
}

function readSection(r: BenchResult): string[] {
  const lines = ['', 'Read latency of an inherited small file (µs per open+read+close, warm) and a cold big read'];
  lines.push(row(['layout', 'depth', 'µs/read', 'MiB/s cold'], 16));
  for (const x of [...r.grove.readLatency, ...r.criu.readLatency]) {
    lines.push(row([x.layout, String(x.depth), x.us.toFixed(2), x.bigReadMiBps.toFixed(0)], 16));
  }
  return lines;
}

function computerUseSection(r: BenchResult): string[] {
  const u = r.computerUse;
  if (!u) return [];
  const lines = ['', `Computer use through the helper (${u.screen.width}x${u.screen.height} desktop, ${u.samples} samples each; ms)`];
  lines.push(row(['measure', 'p50', 'p95'], 26));
  lines.push(row(['screenshot (whole screen)', num(u.screenshotMs.p50), num(u.screenshotMs.p95)], 26) + `   ${u.screenshotKiB} KiB PNG`);
  lines.push(row(['key press → changed frame', num(u.actionToFrameMs.p50), num(u.actionToFrameMs.p95)], 26));
  lines.push(row(['PNG encode (in process)', num(u.pngEncodeMs.p50), num(u.pngEncodeMs.p95)], 26));
  if (u.mcpScreenshotMs) lines.push(row(['MCP screenshot call', num(u.mcpScreenshotMs.p50), num(u.mcpScreenshotMs.p95)], 26));
  if (u.mcpZoomMs) lines.push(row(['MCP zoom call (2x)', num(u.mcpZoomMs.p50), num(u.mcpZoomMs.p95)], 26));
  if (u.mcpWindowsMs) lines.push(row(['MCP windows call', num(u.mcpWindowsMs.p50), num(u.mcpWindowsMs.p95)], 26));
  if (u.errors.length) lines.push(`${u.errors.length} failure(s), first: ${u.errors[0]!.slice(0, 300)}`);
  return lines;
}

function cliSection(r: BenchResult): string[] {
  const c = r.cli;
  if (!c) return [];
  const lines = ['', `The CLI, start to exit (${c.samples} calls; ms)`];
  lines.push(row(['measure', 'p50', 'p95'], 26));
  lines.push(row(['grove whoami', num(c.whoamiMs.p50), num(c.whoamiMs.p95)], 26));
  if (c.errors.length) lines.push(`${c.errors.length} failure(s), first: ${c.errors[0]!.slice(0, 300)}`);
  return lines;
}

function cageSection(r: BenchResult): string[] {
  const c = r.cage;
  if (!c) return [];
  const lines = ['', `The cage's cost: the same fork, caged and uncaged, alternating (${c.forks} forks each; ms, MiB)`];
  lines.push(row(['measure', 'caged p50', 'caged p95', 'uncaged p50', 'uncaged p95'], 26));
  lines.push(
    row(
      [
        'fork → first frame',
        num(c.caged.forkToFirstFrameMs.p50),
        num(c.caged.forkToFirstFrameMs.p95),
        num(c.uncaged.forkToFirstFrameMs.p50),
        num(c.uncaged.forkToFirstFrameMs.p95),
      ],
      26,
    ),
  );
  lines.push(
    row(['child PSS', num(c.caged.childPssMiB.p50), num(c.caged.childPssMiB.p95), num(c.uncaged.childPssMiB.p50), num(c.uncaged.childPssMiB.p95)], 26),
  );
  lines.push(row(['source PSS', num(c.caged.sourcePssMiB), '', num(c.uncaged.sourcePssMiB), ''], 26));
  for (const [name, side] of [
    ['caged', c.caged],
    ['uncaged', c.uncaged],
  ] as const) {
    if (side.errors.length) lines.push(`${name}: ${side.errors.length} failure(s), first: ${side.errors[0]!.slice(0, 300)}`);
  }
  return lines;
}

/** p50 of each measure over forks of one copy, with and without the kdat cache; then 1/2/4 copies. */
function agentLoopSection(r: BenchResult): string[] {
  const a = r.agentLoop;
  if (!a) return [];
  const lines = [
    '',
    `Agent loop: ${a.tasks.length} tasks, ${a.decisionPoints} decision points of ${a.alternatives} alternatives each, ${a.thinkMs} ms to think at each try`,
    row(['strategy', 'tasks done', 'total ms', 'wait ms', 'peak MiB'], 24),
  ];
  for (const s of a.strategies) lines.push(row([s.strategy, String(s.tasksDone), num(s.totalMs), num(s.waitMs), num(s.peakPssMiB)], 24));
  for (const s of a.strategies)
    for (const [step, p] of Object.entries(s.stepMs)) lines.push(`  ${s.strategy}, ${step}: p50 ${num(p.p50)} ms, p95 ${num(p.p95)} ms`);
  for (const s of a.strategies) for (const e of s.errors) lines.push(`  ${s.strategy}: ${e}`);
  return lines;
}

function mergeSection(r: BenchResult): string[] {
  const m = r.merge;
  if (!m) return [];
  const p50 = (xs: number[]) => num(median(xs));
  return [
    '',
    `Merge: two sources that each changed ${m.changedPerSource} of ${m.files} files, into a live branch (${m.totalMs.length} rounds; ms, p50)`,
    row(['measure', 'p50'], 34),
    row(['dry run', p50(m.dryRunMs)], 34),
    row(['merge (its checkpoint included)', p50(m.mergeMs)], 34),
    row(['  a checkpoint alone, to saved', p50(m.checkpointMs)], 34),
    row(['dry run + merge', num(m.totalP50)], 34),
    row(['git merge, plain clone', num(m.gitMergeP50)], 34) + `   ratio ${m.ratio === null ? '—' : `${m.ratio.toFixed(2)}×`}`,
    row(['export of the merged target', num(m.exportP50)], 34),
    ...m.errors.map((e) => `  failed: ${e}`),
  ];
}

function ownWorkSection(r: BenchResult): string[] {
  const o = r.ownWork;
  if (!o) return [];
  const line = (what: string, p: OwnWorkPair, other: string) =>
    row([what, num(p.groveP50), `${other} ${num(p.otherP50)}`, p.ratio === null ? '—' : `${p.ratio.toFixed(2)}×`], 34);
  return [
    '',
    'Your own work (ms, p50): Grove, what it is compared with, and their ratio',
    line(`pull ${Math.round(o.pull.imageMiB)} MiB from a registry`, o.pull, 'skopeo+umoci'),
    line(`copy in ${o.project.files} files, ${Math.round(o.project.mib)} MiB`, o.project, 'cp -a'),
    line('fork → first frame, own image', o.fork, 'desktop'),
    ...pullStages(o.pull.stagesMs),
    ...o.errors.map((e) => `  failed: ${e}`),
  ];
}

/** Where a pull's time went, p50 per stage, on each side. */
function pullStages(stages: NonNullable<BenchResult['ownWork']>['pull']['stagesMs']): string[] {
  if (!stages) return [];
  const p50s = (side: Record<string, number[]>) =>
    Object.entries(side)
      .map(([stage, samples]) => `${stage} ${num(median(samples))}`)
      .join(', ');
  return [`  pull stages (ms, p50): Grove ${p50s(stages.grove)}; without Grove ${p50s(stages.other)}`];
}

/** The same disk work on pools with simple quotas (Grove's), none and full qgroups. */
function quotaSection(r: BenchResult): string[] {
  const q = r.quota;
  if (!q) return [];
  const sides = [
    ['quota', q.simple],
    ['no quota', q.off],
    ['full qgroups', q.full],
  ] as const;
  const lines = [
    '',
    `The disk quota's cost: a fork's, a checkpoint's and a discard's disk work on a branch's files (the desktop's and an agent's work, ${q.filesMiB} MiB), ${q.rounds} rounds (ms, p50 / p95)`,
  ];
  lines.push(row(['measure', ...sides.map(([name]) => name)], 26));
  const cell = (p: QuotaSide['forkMs']) => `${num(p.p50)} / ${num(p.p95)}`;
  lines.push(row(['fork: snapshot, limit, write', ...sides.map(([, side]) => cell(side.forkMs))], 26));
  lines.push(row(['checkpoint: snapshot', ...sides.map(([, side]) => cell(side.checkpointMs))], 26));
  lines.push(row(['discard: delete both', ...sides.map(([, side]) => cell(side.discardMs))], 26));
  for (const [name, side] of sides) if (side.errors.length) lines.push(`${name}: ${side.errors.length} failure(s), first: ${side.errors[0]!.slice(0, 300)}`);
  return lines;
}

function profileSection(r: BenchResult): string[] {
  const p = r.profile;
  if (!p) return [];
  const d = p.desktop;
  const lines = ['', `Profile (ms, p50): the desktop holds ${d.processes} processes, ${d.threads} threads, ${d.vmas} VMAs, ${d.fds} fds`];
  const measures: [string, (f: ProfileFork) => number | undefined][] = [
    ['dump, to the thaw', (f) => f.timings.dump],
    ['  seizing the tree', (f) => f.criu.dump?.freezingMs],
    ['  source frozen', (f) => f.criu.dump?.sourceFrozenMs],
    ['  memory drained', (f) => f.criu.dump?.memdumpMs],
    ['  memory written', (f) => f.criu.dump?.memwriteMs],
    ['  outside the freeze', (f) => (f.criu.dump ? f.timings.dump! - f.criu.dump.sourceFrozenMs : undefined)],
    ['restore, from the thaw', (f) => f.timings.restore],
    ['  CRIU restore_time', (f) => f.criu.restores[0]?.restoreMs],
    ['  forking the tree', (f) => f.criu.restores[0]?.forkingMs],
    ['first frame', (f) => f.timings.firstFrame],
    ['fork → first frame', (f) => f.timings.total],
  ];
  const on = p.sequence.filter((f) => f.kdatCache);
  const off = p.sequence.filter((f) => !f.kdatCache);
  lines.push(row(['measure', 'kdat cache', 'no cache', ...p.parallel.map((f) => `${f.copies} copies`), '1 GiB heap'], 24));
  for (const [name, m] of measures)
    lines.push(row([name, num(median(on.map(m))), num(median(off.map(m))), ...p.parallel.map((f) => num(m(f))), num(median(p.heap.map(m)))], 24));
  const checkpoints = p.checkpoints;
  const cp = (pick: (c: ProfileCheckpoint) => number) => num(median(checkpoints.map(pick)));
  if (checkpoints.length)
    lines.push(`checkpoint (p50 of ${checkpoints.length}): returns after ${cp((c) => c.returnMs)} ms, saved after ${cp((c) => c.savedMs)} ms`);
  if (p.errors.length) lines.push(`${p.errors.length} failure(s), first: ${p.errors[0]!.slice(0, 300)}`);
  return lines;
}

function targetSection(r: BenchResult): string[] {
  const lines = [
    '',
    'Targets (fork: issues 6 and 14; computer use: issue 10; cage: issue 11; own work: issue 41; disk quota: issue 42; CLI: issue 43; merge: issue 44)',
  ];
  for (const t of r.targets) {
    const verdict = t.met === null ? 'not measured' : t.met ? 'met' : 'NOT MET';
    lines.push(`  ${t.name.padEnd(42)} ${t.target.padEnd(12)} ${t.measured.padEnd(42)} ${verdict}`);
  }
  return lines;
}
