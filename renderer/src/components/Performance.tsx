// Performance: how long each fork took, stage by stage (oldest left, newest
// right), and what the running branches cost in memory — PSS, so shared pages
// count once across branches, with the part KSM merged — read from the helper
// every few seconds while the panel is open.
import { useEffect } from 'react';
import type { PerfReport } from '../../../main/src/api/contract.js';
import { isLive } from '../store/app.js';
import { useApp } from './context.js';
import { Empty } from './Panels.js';
import { SpaceList, useSpaceReport } from './SpaceList.js';

export const PERF_POLL_MS = 3000;

type ForkRecord = PerfReport['forks'][number];
type BranchMemory = PerfReport['branches'][number];
type StageKey = 'prepare' | 'dump' | 'thaw' | 'restore' | 'expose';

/** The stages a fork's total is made of, bottom to top; the rest of the total is the commit. */
const STAGES: [StageKey, string][] = [
  ['prepare', 'prepare'],
  ['dump', 'dump'],
  ['thaw', 'thaw'],
  ['restore', 'restore'],
  ['expose', 'expose + first frame'],
];

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(bytes < 10 * 2 ** 20 ? 1 : 0)} MiB`;
const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(1)} GiB`;
const seconds = (ms: number) => (ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`);

export function PerformancePanel() {
  const perf = useApp((s) => s.perf);
  const loadPerf = useApp((s) => s.loadPerf);
  const live = useApp(isLive);
  useEffect(() => {
    if (!live) return;
    void loadPerf();
    const t = setInterval(() => void loadPerf(), PERF_POLL_MS);
    return () => clearInterval(t);
  }, [live, loadPerf]);
  if (!perf) return <Empty title="Reading performance…" body="Fork timings and the memory of each running branch, from Grove's helper." />;
  return (
    <div className="perf" data-testid="performance">
      <section className="perf-section">
        <h3>Fork latency</h3>
        <ForkHistory forks={perf.forks} />
      </section>
      <section className="perf-section">
        <h3>Memory per branch</h3>
        <BranchMemoryBars branches={perf.branches} />
        <HostMemoryLine host={perf.host} />
      </section>
      <section className="perf-section">
        <h3>Disk</h3>
        <p className="perf-host" data-testid="perf-pool">
          Pool: <b>{gib(perf.pool.freeBytes)}</b> free of {gib(perf.pool.totalBytes)}
          {perf.pool.low && <span className="tag warn">low: forks and checkpoints will soon be refused</span>}
        </p>
        <DiskUse />
      </section>
    </div>
  );
}

const CHART = { width: 720, height: 180, left: 52, right: 8, top: 10, bottom: 18 };
/** Bars are at most this thin a share of the width: a short history keeps to the right, by the newest. */
const MIN_SLOTS = 20;

function ForkHistory({ forks }: { forks: ForkRecord[] }) {
  if (forks.length === 0) return <p className="muted">No forks yet. Fork a running branch and its stage timings show up here.</p>;
  const shown = [...forks].reverse(); // the helper sends newest first; newest goes right
  const latest = forks[0]!;
  const ticks = niceTicks(Math.max(...shown.map((f) => f.timings.total)));
  const max = ticks[ticks.length - 1]!;
  const plotW = CHART.width - CHART.left - CHART.right;
  const plotH = CHART.height - CHART.top - CHART.bottom;
  const slot = plotW / Math.max(shown.length, MIN_SLOTS);
  const barW = Math.max(2, Math.min(28, slot * 0.7));
  const y = (ms: number) => CHART.top + plotH - (ms / max) * plotH;
  const x = (i: number) => CHART.width - CHART.right - slot * (shown.length - i) + (slot - barW) / 2;
  const line = shown.map((f, i) => `${x(i) + barW / 2},${y(f.timings.total)}`).join(' ');
  return (
    <>
      <p className="muted">
        Latest: {latest.source.name} into {latest.copies} in <b className="perf-total">{seconds(latest.timings.total)}</b> (to the children's first frames and
        commit) · source paused {seconds(latest.timings.sourceFrozen)} · {forks.length} {forks.length === 1 ? 'fork' : 'forks'} shown
      </p>
      <svg className="perf-chart" viewBox={`0 0 ${CHART.width} ${CHART.height}`} role="img" aria-label="fork latency history" data-testid="perf-forks">
        {ticks.map((ms) => (
          <g key={ms} className="perf-grid">
            <line x1={CHART.left} x2={CHART.width - CHART.right} y1={y(ms)} y2={y(ms)} />
            <text x={CHART.left - 6} y={y(ms) + 4} textAnchor="end">
              {seconds(ms)}
            </text>
          </g>
        ))}
        {shown.map((f, i) => (
          <ForkBar key={f.fork} fork={f} x={x(i)} width={barW} y={y} />
        ))}
        <polyline className="perf-total-line" points={line} />
        {shown.map((f, i) => (
          <circle key={f.fork} className="perf-total-dot" cx={x(i) + barW / 2} cy={y(f.timings.total)} r={2.5} />
        ))}
        <text className="perf-axis" x={CHART.width - CHART.right} y={CHART.height - 4} textAnchor="end">
          newest →
        </text>
      </svg>
      <ul className="perf-legend">
        {STAGES.map(([key, label]) => (
          <li key={key}>
            <span className={`perf-swatch perf-stage-${key}`} /> {label}
          </li>
        ))}
        <li>
          <span className="perf-swatch perf-stage-commit" /> commit
        </li>
        <li>
          <span className="perf-swatch-line" /> total
        </li>
      </ul>
    </>
  );
}

/**
 * Round marks for an axis from 0 past `max`: a step of 1, 2 or 5 times a
 * power of ten, about four of them, the last at or above `max`.
 */
export function niceTicks(max: number, about = 4): number[] {
  if (!(max > 0)) return [0, 1];
  const rough = max / about;
  const power = 10 ** Math.floor(Math.log10(rough));
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough)!;
  const count = Math.ceil(max / step - 1e-9);
  return Array.from({ length: count + 1 }, (_, i) => Number((i * step).toPrecision(12)));
}

/** One fork: its stages stacked bottom up, the rest of its total (commit) on top. */
function ForkBar({ fork, x, width, y }: { fork: ForkRecord; x: number; width: number; y: (ms: number) => number }) {
  const t = fork.timings;
  const parts: [string, number][] = STAGES.map(([key]) => [key, t[key]]);
  parts.push(['commit', Math.max(0, t.total - parts.reduce((sum, [, ms]) => sum + ms, 0))]);
  let below = 0;
  return (
    <g className="perf-fork" data-fork={fork.fork}>
      <title>{`${fork.source.name} into ${fork.copies} · ${new Date(fork.at).toLocaleString()} · ${parts.map(([k, ms]) => `${k} ${seconds(ms)}`).join(' · ')} · total ${seconds(t.total)}`}</title>
      {parts.map(([key, ms]) => {
        const top = y(below + ms);
        const height = y(below) - top;
        below += ms;
        return <rect key={key} className={`perf-stage-${key}`} x={x} width={width} y={top} height={height} />;
      })}
    </g>
  );
}

const BAR = { width: 360, height: 14 };

function BranchMemoryBars({ branches }: { branches: BranchMemory[] }) {
  if (branches.length === 0) return <p className="muted">No branch is running.</p>;
  const max = Math.max(...branches.map((b) => b.pssBytes), 1);
  return (
    <ul className="perf-memory" aria-label="memory per branch">
      {branches.map((b) => {
        const pss = (b.pssBytes / max) * BAR.width;
        const shared = Math.min(pss, (b.ksm.sharedBytes / max) * BAR.width);
        return (
          <li key={b.workspace} data-testid="perf-branch" data-branch={b.name}>
            <span className="perf-branch-name">{b.name}</span>
            <svg
              className="perf-bar"
              width={BAR.width}
              height={BAR.height}
              role="img"
              aria-label={`${b.name}: ${mib(b.pssBytes)} PSS, ${mib(b.ksm.sharedBytes)} shared through KSM`}
            >
              <rect className="perf-bar-track" width={BAR.width} height={BAR.height} rx={3} />
              <rect className="perf-bar-pss" width={pss} height={BAR.height} rx={3} />
              <rect className="perf-bar-ksm" width={shared} height={BAR.height} rx={3} />
            </svg>
            <span className="perf-branch-numbers">
              <b>{mib(b.pssBytes)}</b> PSS · {mib(b.ksm.sharedBytes)} shared (KSM) · {b.processes} processes
              {!b.ksm.mergeAny && (
                <span className="tag warn" title="Its memory is not offered to KSM (started without grove-enter)">
                  not merged
                </span>
              )}
            </span>
            <LimitsLine cgroup={b.cgroup} />
          </li>
        );
      })}
    </ul>
  );
}

/** Used past this share of its memory limit, a branch is said to be near it. */
const NEAR_LIMIT = 0.9;

/** A branch's limits next to its memory, and what its limits stopped (the reason a process was killed or a fork refused). */
function LimitsLine({ cgroup: c }: { cgroup: BranchMemory['cgroup'] }) {
  return (
    <span className="perf-branch-limits muted" data-testid="perf-limits">
      limit {mib(c.limits.memoryBytes)} ({mib(c.memoryBytes)} used, cached files included) · {c.pids} of {c.limits.pids} tasks · CPU weight {c.limits.cpuWeight}
      {c.memoryBytes >= NEAR_LIMIT * c.limits.memoryBytes && (
        <span
          className="tag warn"
          title="What the limit counts (its processes and the files it cached) is close to it: the kernel reclaims cached files first, then ends processes"
        >
          near its memory limit
        </span>
      )}
      {c.oomKills > 0 && (
        <span className="tag warn" title="The kernel ended processes of this branch that went past its memory limit">
          {c.oomKills} killed: out of memory
        </span>
      )}
      {c.pidsRefused > 0 && (
        <span className="tag warn" title="New processes or threads refused: the branch reached its limit of tasks">
          {c.pidsRefused} forks refused
        </span>
      )}
    </span>
  );
}

/** What each branch and version holds, measured on request (every one is walked: not polled). */
function DiskUse() {
  const { report, measuring, measure } = useSpaceReport();
  return (
    <div data-testid="perf-disk">
      <button onClick={() => void measure()} disabled={measuring}>
        {measuring ? 'Measuring…' : report ? 'Measure again' : 'Measure what each branch and version holds'}
      </button>
      {report && <SpaceList report={report} />}
    </div>
  );
}

function HostMemoryLine({ host }: { host: PerfReport['host'] }) {
  return (
    <p className="perf-host" data-testid="perf-host">
      Host: <b>{gib(host.availableBytes)}</b> available of {gib(host.totalBytes)} · KSM {host.ksm.run === 1 ? 'on' : 'off'}, saving{' '}
      {mib(host.ksm.pagesSharing * host.pageBytes)} ({host.ksm.fullScans} full scans)
      <span className="perf-legend-inline">
        <span className="perf-swatch perf-bar-pss" /> PSS <span className="perf-swatch perf-bar-ksm" /> of it shared through KSM
      </span>
    </p>
  );
}
