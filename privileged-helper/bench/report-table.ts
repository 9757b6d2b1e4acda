// The benchmark's printout for people: the same numbers as the JSON, side by
// side, with each of issue 6's targets next to what was measured.
import type { BenchResult, Side } from './result-schema.js';

const STAGES = ['prepare', 'dump', 'sourceFrozen', 'thaw', 'restore', 'expose', 'firstFrame', 'total'];

export function reportTable(r: BenchResult): string {
  return [...forkSection(r), ...fanoutSection(r), ...readSection(r), ...targetSection(r), ''].join('\n');
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
  for (const [name, side] of [['grove', r.grove], ['criu', r.criu]] as const) {
    if (side.errors.length) lines.push(`${name}: ${side.errors.length} failure(s), first: ${side.errors[0]!.slice(0, 300)}`);
  }
  lines.push(`ratio (criu p50 / grove p50, fork → first frame): ${r.ratio === null ? '—' : r.ratio.toFixed(2)}×`);
  return lines;
}

function fanoutSection(r: BenchResult): string[] {
  const lines = ['', 'Fan-out: N copies in one go (time to the last first frame; memory summed over all copies, then settled)'];
  lines.push(row(['side / copies', 'total ms', 'PSS MiB', 'settled', 'MemAvail↓', 'settled'], 16));
  const sideRows = (name: string, side: Side) => {
    for (const f of side.fanout) {
      lines.push(row([`${name} ${f.copies}`, num(f.totalMs), num(f.pssMiB), num(f.pssMiBSettled), num(f.memAvailableDropMiB), num(f.memAvailableDropMiBSettled)]));
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

function targetSection(r: BenchResult): string[] {
  const lines = ['', 'Targets (issue 6)'];
  for (const t of r.targets) {
    const verdict = t.met === null ? 'not measured' : t.met ? 'met' : 'NOT MET';
    lines.push(`  ${t.name.padEnd(42)} ${t.target.padEnd(12)} ${t.measured.padEnd(42)} ${verdict}`);
  }
  return lines;
}
