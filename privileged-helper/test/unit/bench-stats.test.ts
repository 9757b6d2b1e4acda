import { describe, expect, it } from 'vitest';
import { median, percentile, percentiles, round, roundAll, speedup, summarize, summarizeByKey } from '../../bench/stats.js';

describe('bench stats', () => {
  it('takes the median of what was measured, and says null when nothing was', () => {
    expect(median([300, undefined, 100, Number.NaN, 200])).toBe(200);
    expect(median([1, 2])).toBe(1.5);
    expect(median([undefined])).toBeNull();
    expect(median(undefined)).toBeNull();
  });

  it('interpolates percentiles linearly between ranks', () => {
    expect(percentile([10], 50)).toBe(10);
    expect(percentile([10], 95)).toBe(10);
    expect(percentile([3, 1, 2], 50)).toBe(2);
    expect(percentile([1, 2, 3, 4], 50)).toBe(2.5);
    expect(percentile([1, 2, 3, 4, 5], 95)).toBeCloseTo(4.8);
    expect(percentile([5, 1, 4, 2, 3], 0)).toBe(1);
    expect(percentile([5, 1, 4, 2, 3], 100)).toBe(5);
  });

  it('gives the p50 and p95 of timings, rounded, and nulls when every sample failed', () => {
    expect(percentiles([10.04, 20, 30.06])).toEqual({ p50: 20, p95: 29.1 });
    expect(percentiles([])).toEqual({ p50: null, p95: null });
  });

  it('does not reorder its input', () => {
    const samples = [3, 1, 2];
    percentile(samples, 50);
    expect(samples).toEqual([3, 1, 2]);
  });

  it('refuses what has no percentile', () => {
    expect(() => percentile([], 50)).toThrow(/no samples/);
    expect(() => percentile([1], 101)).toThrow(/outside/);
    expect(() => percentile([1, Number.NaN], 50)).toThrow(/non-finite/);
  });

  it('summarizes samples', () => {
    expect(summarize([400, 100, 300, 200])).toEqual({ n: 4, min: 100, p50: 250, p95: 385, max: 400, mean: 250 });
  });

  it('summarizes each key of a list of timing records', () => {
    const stages = summarizeByKey([
      { dump: 1000, restore: 2000 },
      { dump: 1200, restore: 1800, thaw: 5 },
      { dump: 1100, restore: Number.NaN },
    ]);
    expect(Object.keys(stages)).toEqual(['dump', 'restore', 'thaw']);
    expect(stages.dump).toMatchObject({ n: 3, p50: 1100, min: 1000, max: 1200 });
    expect(stages.restore).toMatchObject({ n: 2, p50: 1900 });
    expect(stages.thaw).toMatchObject({ n: 1, p50: 5, p95: 5 });
  });

  it('rounds and computes speedups', () => {
    expect(round(1.26)).toBe(1.3);
    expect(round(1234.5678, 0)).toBe(1235);
    expect(speedup(4000, 1000)).toBe(4);
    expect(speedup(4000, 0)).toBeNull();
  });

  it('rounds every value of a record', () => {
    expect(roundAll({ dump: 1184.83, total: 3424.25 })).toEqual({ dump: 1184.8, total: 3424.3 });
    expect(roundAll({ a: 1.234 }, 2)).toEqual({ a: 1.23 });
  });
});
