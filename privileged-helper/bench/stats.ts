// Aggregation for the benchmarks: percentiles over a handful of samples.
// Pure (no I/O), so it is unit-tested (test/unit/bench-stats.test.ts).
//
// Percentiles interpolate linearly between the two nearest ranks (the
// "R-7" / numpy default definition): with n samples sorted ascending,
// p is found at position (n - 1) * p / 100. With 3-5 samples a p95 is close
// to the maximum; that is what it is, and the raw samples are kept in the JSON.
import type { Percentiles } from './result-schema.js';

export interface Summary {
  n: number;
  min: number;
  p50: number;
  p95: number;
  max: number;
  mean: number;
}

export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) throw new Error('percentile of no samples');
  if (!(p >= 0 && p <= 100)) throw new Error(`percentile ${p} is outside 0-100`);
  if (samples.some((s) => !Number.isFinite(s))) throw new Error('percentile of a non-finite sample');
  const sorted = [...samples].sort((a, b) => a - b);
  const pos = ((sorted.length - 1) * p) / 100;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  const a = sorted[lo]!;
  const b = sorted[hi]!;
  return a + (b - a) * (pos - lo);
}

/** The p50 of the finite samples, or null when there are none (a section that measured nothing). */
export function median(samples: readonly (number | undefined)[] | undefined): number | null {
  const known = (samples ?? []).filter((x): x is number => x !== undefined && Number.isFinite(x));
  return known.length > 0 ? percentile(known, 50) : null;
}

export function summarize(samples: readonly number[]): Summary {
  const sum = samples.reduce((s, x) => s + x, 0);
  return {
    n: samples.length,
    min: percentile(samples, 0),
    p50: percentile(samples, 50),
    p95: percentile(samples, 95),
    max: percentile(samples, 100),
    mean: sum / samples.length,
  };
}

/**
 * Per-key summaries of a list of records with numeric fields (e.g. per-stage
 * fork timings): every key that appears in any record is summarized over the
 * records that have it as a finite number.
 */
export function summarizeByKey(records: readonly Record<string, number>[]): Record<string, Summary> {
  const keys: string[] = [];
  for (const r of records) for (const k of Object.keys(r)) if (!keys.includes(k)) keys.push(k);
  const out: Record<string, Summary> = {};
  for (const k of keys) {
    const values = records.map((r) => r[k]).filter((v): v is number => typeof v === 'number' && Number.isFinite(v));
    if (values.length > 0) out[k] = summarize(values);
  }
  return out;
}

/** Rounds to `digits` decimals (for JSON and tables; raw samples keep full precision). */
export function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The p50 and p95 of some timings, rounded; null for none (every sample failed). */
export function percentiles(samples: readonly number[]): Percentiles {
  if (samples.length === 0) return { p50: null, p95: null };
  const s = summarize(samples);
  return { p50: round(s.p50), p95: round(s.p95) };
}

/** Every value of a record rounded (a fork's stage timings, for JSON). */
export function roundAll(r: Record<string, number>, digits = 1): Record<string, number> {
  return Object.fromEntries(Object.entries(r).map(([k, v]) => [k, round(v, digits)]));
}

/** How many times faster `candidate` is than `baseline` (baseline / candidate); null when undefined. */
export function speedup(baselineMs: number, candidateMs: number): number | null {
  if (!(baselineMs > 0) || !(candidateMs > 0)) return null;
  return baselineMs / candidateMs;
}
