import { describe, expect, it } from 'vitest';
import { reportTable } from '../../bench/report-table.js';
import { checkTargets } from '../../bench/targets.js';
import { sampleResult } from './bench-result-fixture.js';

describe('bench report table', () => {
  it('prints the computer-use numbers and their targets', () => {
    const r = sampleResult();
    const table = reportTable({ ...r, targets: checkTargets(r) });
    expect(table).toMatch(/screenshot \(whole screen\)\s+30\s+60/);
    expect(table).toMatch(/key press → changed frame\s+40\s+90/);
    expect(table).toMatch(/screenshot p50 \(whole screen\)\s+≤ 100 ms\s+30 ms\s+met/);
  });

  it('prints only the sections a run measured', () => {
    const table = reportTable({ ...sampleResult(), sections: ['computer-use'] });
    expect(table).not.toMatch(/Fork of the standard desktop|Fan-out|Read latency/);
    expect(table).toMatch(/Computer use through the helper/);
    expect(reportTable({ ...sampleResult(), computerUse: null })).not.toMatch(/Computer use through the helper/);
  });
});
