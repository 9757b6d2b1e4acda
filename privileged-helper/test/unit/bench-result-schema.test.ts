import { describe, expect, it } from 'vitest';
import { BenchResult, BenchSection } from '../../bench/result-schema.js';
import { sampleResult } from './bench-result-fixture.js';

describe('bench result schema', () => {
  it('holds what scripts compare: fork latency, frozen time, fan-out and read latency per side', () => {
    const r = sampleResult();
    for (const s of [r.grove, r.criu]) {
      expect(s.forkToFirstFrameMs).toEqual({ p50: expect.any(Number), p95: expect.any(Number) });
      expect(s.sourceFrozenMs.p50).toEqual(expect.any(Number));
      expect(Object.keys(s.fanout[0]!)).toEqual(expect.arrayContaining(['copies', 'totalMs', 'pssMiB', 'pssMiBSettled']));
      expect(Object.keys(s.readLatency[0]!)).toEqual(expect.arrayContaining(['layout', 'depth', 'us']));
    }
  });

  it('survives a round trip through JSON', () => {
    const r = sampleResult();
    expect(BenchResult.parse(JSON.parse(JSON.stringify(r)))).toEqual(r);
  });

  it('refuses another schema version, unknown fields and unmeasured numbers that are not null', () => {
    expect(() => BenchResult.parse({ ...sampleResult(), schema: 'grove-bench/fork@1' })).toThrow();
    expect(() => BenchResult.parse({ ...sampleResult(), extra: 1 })).toThrow();
    const r = sampleResult();
    expect(() => BenchResult.parse({ ...r, grove: { ...r.grove, forkToFirstFrameMs: { p50: Number.NaN, p95: 1 } } })).toThrow();
    expect(BenchResult.parse({ ...r, grove: { ...r.grove, forkToFirstFrameMs: { p50: null, p95: null } } }).grove.forkToFirstFrameMs.p50).toBeNull();
  });

  it('knows the merge section, and reads results from before it with no merge', () => {
    expect(BenchSection.parse('merge')).toBe('merge');
    expect(BenchResult.parse(sampleResult()).merge?.ratio).toBe(2.268);
    const { merge: _, ...older } = sampleResult();
    expect(BenchResult.parse(older).merge).toBeNull();
  });

  it('knows only the two read layouts', () => {
    const r = sampleResult();
    const bad = { ...r.grove.readLatency[0]!, layout: 'btrfs' };
    expect(() => BenchResult.parse({ ...r, grove: { ...r.grove, readLatency: [bad] } })).toThrow();
  });
});
