// One SVG per benchmark run, written next to its JSON: four panels, Grove
// against plain CRIU (or the naive overlay) in each. Hand-written SVG from the
// result alone: a pure function, unit-tested (test/unit/bench-plots.test.ts).
//   1. fork → first frame per stage: bars at p50, a whisker up to p95
//   2. fan-out: total time vs copies
//   3. fan-out: PSS summed over all copies vs copies, at first frame and settled
//   4. read latency of an inherited file vs fork depth, per layout
//   5. (when the run measured it) the agent loop: each strategy's time waiting
//      on the workspace and its total task time
import type { BenchResult, Percentiles } from './result-schema.js';

const PANEL = { w: 460, h: 300 };
const PLOT = { left: 64, right: 16, top: 36, bottom: 56 };
const COLOR = { grove: '#2b7a3d', criu: '#b4462b' };
const STAGES = ['prepare', 'dump', 'sourceFrozen', 'thaw', 'restore', 'expose', 'firstFrame', 'total'];
/** Short enough to fit under a bar pair. */
const STAGE_LABEL: Record<string, string> = { sourceFrozen: 'frozen', firstFrame: '1st frame' };

interface Series {
  name: string;
  color: string;
  dashed?: boolean;
  points: [number, number][];
}

interface Frame {
  x: number;
  y: number;
  title: string;
  xLabel: string;
  yLabel: string;
}

export function benchSvg(r: BenchResult): string {
  const width = PANEL.w * 2;
  const height = PANEL.h * (r.agentLoop ? 3 : 2) + 28;
  const fanout = (side: 'grove' | 'criu', pick: (f: BenchResult['grove']['fanout'][number]) => number) =>
    r[side].fanout.map((f): [number, number] => [f.copies, pick(f)]);
  const reads = (side: 'grove' | 'criu') => r[side].readLatency.map((x): [number, number] => [x.depth, x.us]);
  const layoutOf = (side: 'grove' | 'criu') => r[side].readLatency[0]?.layout ?? side;
  const panels = [
    stageBars({ x: 0, y: 28, title: 'Fork → first frame by stage (p50 bar, p95 whisker)', xLabel: '', yLabel: 'ms' }, r),
    lineChart({ x: PANEL.w, y: 28, title: 'Fan-out: total time', xLabel: 'copies', yLabel: 'ms' }, [
      { name: 'grove', color: COLOR.grove, points: fanout('grove', (f) => f.totalMs) },
      { name: 'criu', color: COLOR.criu, points: fanout('criu', (f) => f.totalMs) },
    ]),
    lineChart({ x: 0, y: 28 + PANEL.h, title: 'Fan-out: PSS of all copies', xLabel: 'copies', yLabel: 'MiB' }, [
      { name: 'grove', color: COLOR.grove, points: fanout('grove', (f) => f.pssMiB) },
      { name: 'grove settled', color: COLOR.grove, dashed: true, points: fanout('grove', (f) => f.pssMiBSettled) },
      { name: 'criu', color: COLOR.criu, points: fanout('criu', (f) => f.pssMiB) },
      { name: 'criu settled', color: COLOR.criu, dashed: true, points: fanout('criu', (f) => f.pssMiBSettled) },
    ]),
    lineChart({ x: PANEL.w, y: 28 + PANEL.h, title: 'Inherited read latency', xLabel: 'fork depth', yLabel: 'µs per read' }, [
      { name: layoutOf('grove'), color: COLOR.grove, points: reads('grove') },
      { name: layoutOf('criu'), color: COLOR.criu, points: reads('criu') },
    ]),
    ...(r.agentLoop
      ? [agentLoopBars({ x: 0, y: 28 + 2 * PANEL.h, title: 'Agent loop: waiting on the workspace, and in all', xLabel: '', yLabel: 's' }, r.agentLoop)]
      : []),
  ];
  const heading = `Grove bench ${r.startedAt}${r.quick ? ' (quick)' : ''}: ${r.host.cpus} CPUs, load ${r.host.loadavgStart.join(' ')}`;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="${width}" height="${height}" fill="#ffffff"/>`,
    text(8, 18, heading, { size: 13, weight: 'bold' }),
    ...panels,
    '</svg>',
    '',
  ].join('\n');
}

function stageBars(f: Frame, r: BenchResult): string {
  const stages = STAGES.filter((s) => r.grove.stages[s] || r.criu.stages[s]);
  const p95s = stages.flatMap((s) => [r.grove.stages[s]?.p95 ?? 0, r.criu.stages[s]?.p95 ?? 0]);
  const yMax = niceMax(Math.max(0, ...p95s));
  const area = plotArea(f);
  const slot = stages.length > 0 ? area.w / stages.length : area.w;
  const barW = Math.max(2, slot / 2 - 4);
  const y = (v: number) => area.y + area.h - (v / yMax) * area.h;
  const bar = (p: Percentiles | undefined, bx: number, color: string) => {
    if (!p || p.p50 === null) return '';
    const top = y(p.p50);
    const whisker = p.p95 === null ? '' : line(bx + barW / 2, top, bx + barW / 2, y(p.p95), color);
    return `<rect x="${n(bx)}" y="${n(top)}" width="${n(barW)}" height="${n(area.y + area.h - top)}" fill="${color}" opacity="0.8"/>${whisker}`;
  };
  const bars = stages.map((s, i) => {
    const x0 = area.x + i * slot + 2;
    return [
      bar(r.grove.stages[s], x0, COLOR.grove),
      bar(r.criu.stages[s], x0 + barW + 2, COLOR.criu),
      text(x0 + slot / 2 - 2, area.y + area.h + 14, STAGE_LABEL[s] ?? s, { anchor: 'middle', size: 9 }),
    ].join('');
  });
  return frame(
    f,
    yAxis(area, yMax),
    bars.join('\n'),
    legend(area, [
      { name: 'grove', color: COLOR.grove },
      { name: 'criu', color: COLOR.criu },
    ]),
  );
}

/** A pair of bars per strategy: its wait and its total task time, in seconds. */
function agentLoopBars(f: Frame, loop: NonNullable<BenchResult['agentLoop']>): string {
  const area = plotArea(f);
  const yMax = niceMax(Math.max(0, ...loop.strategies.map((s) => s.totalMs / 1000)));
  const slot = loop.strategies.length > 0 ? area.w / loop.strategies.length : area.w;
  const barW = Math.max(2, slot / 2 - 4);
  const y = (v: number) => area.y + area.h - (v / yMax) * area.h;
  const bar = (v: number, bx: number, color: string) =>
    `<rect x="${n(bx)}" y="${n(y(v))}" width="${n(barW)}" height="${n(area.y + area.h - y(v))}" fill="${color}" opacity="0.8"/>`;
  const bars = loop.strategies.map((s, i) => {
    const x0 = area.x + i * slot + 2;
    return [
      bar(s.waitMs / 1000, x0, COLOR.criu),
      bar(s.totalMs / 1000, x0 + barW + 2, COLOR.grove),
      text(x0 + slot / 2 - 2, area.y + area.h + 14, s.strategy, { anchor: 'middle', size: 9 }),
    ].join('');
  });
  return frame(
    f,
    yAxis(area, yMax),
    bars.join('\n'),
    legend(area, [
      { name: 'wait', color: COLOR.criu },
      { name: 'total', color: COLOR.grove },
    ]),
  );
}

function lineChart(f: Frame, series: Series[]): string {
  const all = series.flatMap((s) => s.points);
  const area = plotArea(f);
  if (all.length === 0) return frame(f, '', text(area.x + area.w / 2, area.y + area.h / 2, 'not measured', { anchor: 'middle' }), '');
  const xs = [...new Set(all.map(([x]) => x))].sort((a, b) => a - b);
  const xMax = Math.max(...xs, 1);
  const yMax = niceMax(Math.max(...all.map(([, v]) => v)));
  const px = (x: number) => area.x + (x / xMax) * area.w;
  const py = (v: number) => area.y + area.h - (v / yMax) * area.h;
  const xTicks = xs.map(
    (x) => line(px(x), area.y + area.h, px(x), area.y + area.h + 4, '#444') + text(px(x), area.y + area.h + 16, fmt(x), { anchor: 'middle' }),
  );
  const paths = series
    .filter((s) => s.points.length > 0)
    .map((s) => {
      const d = s.points.map(([x, v], i) => `${i === 0 ? 'M' : 'L'}${n(px(x))},${n(py(v))}`).join(' ');
      const dots = s.points.map(([x, v]) => `<circle cx="${n(px(x))}" cy="${n(py(v))}" r="3" fill="${s.color}"/>`).join('');
      return `<path d="${d}" fill="none" stroke="${s.color}" stroke-width="2"${s.dashed ? ' stroke-dasharray="5,4"' : ''}/>${dots}`;
    });
  const xTitle = text(area.x + area.w / 2, area.y + area.h + 32, f.xLabel, { anchor: 'middle' });
  return frame(f, yAxis(area, yMax) + xTicks.join('') + xTitle, paths.join('\n'), legend(area, series));
}

function plotArea(f: Frame) {
  return { x: f.x + PLOT.left, y: f.y + PLOT.top, w: PANEL.w - PLOT.left - PLOT.right, h: PANEL.h - PLOT.top - PLOT.bottom };
}

function frame(f: Frame, axes: string, body: string, key: string): string {
  const area = plotArea(f);
  return [
    `<g>`,
    text(f.x + 8, f.y + 18, f.title, { weight: 'bold' }),
    text(f.x + 12, area.y - 6, f.yLabel, {}),
    `<rect x="${n(area.x)}" y="${n(area.y)}" width="${n(area.w)}" height="${n(area.h)}" fill="none" stroke="#888"/>`,
    axes,
    body,
    key,
    `</g>`,
  ].join('\n');
}

function yAxis(area: ReturnType<typeof plotArea>, yMax: number): string {
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((q) => {
    const yy = area.y + area.h - q * area.h;
    return (
      line(area.x - 4, yy, area.x, yy, '#444') + line(area.x, yy, area.x + area.w, yy, '#eee') + text(area.x - 6, yy + 4, fmt(q * yMax), { anchor: 'end' })
    );
  });
  return ticks.join('');
}

function legend(area: ReturnType<typeof plotArea>, entries: { name: string; color: string; dashed?: boolean }[]): string {
  return entries
    .map((e, i) => {
      const yy = area.y + 12 + i * 14;
      const x0 = area.x + area.w - 110;
      return `<line x1="${n(x0)}" y1="${n(yy - 4)}" x2="${n(x0 + 18)}" y2="${n(yy - 4)}" stroke="${e.color}" stroke-width="3"${e.dashed ? ' stroke-dasharray="5,4"' : ''}/>${text(x0 + 22, yy, e.name, {})}`;
    })
    .join('');
}

function line(x1: number, y1: number, x2: number, y2: number, color: string): string {
  return `<line x1="${n(x1)}" y1="${n(y1)}" x2="${n(x2)}" y2="${n(y2)}" stroke="${color}"/>`;
}

function text(x: number, y: number, s: string, o: { anchor?: 'middle' | 'end'; size?: number; weight?: 'bold' }): string {
  const attrs = [o.anchor ? ` text-anchor="${o.anchor}"` : '', o.size ? ` font-size="${o.size}"` : '', o.weight ? ` font-weight="${o.weight}"` : ''].join('');
  return `<text x="${n(x)}" y="${n(y)}"${attrs}>${escapeXml(s)}</text>`;
}

/** The smallest 1/2/5 × 10^k at or above v (a round top for an axis). */
export function niceMax(v: number): number {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  return ([1, 2, 5, 10].find((m) => m * p >= v) ?? 10) * p;
}

export function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const n = (x: number) => String(Math.round(x * 10) / 10);
const fmt = (x: number) => (Math.abs(x) >= 1000 ? `${Math.round(x / 10) / 100}k` : String(Math.round(x * 10) / 10));
