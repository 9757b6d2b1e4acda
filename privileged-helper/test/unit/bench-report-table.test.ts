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

  it('prints the MCP round trips a run measured: screenshot, zoom and windows', () => {
    const r = sampleResult();
    const mcp = { mcpScreenshotMs: { p50: 28, p95: 35 }, mcpZoomMs: { p50: 31, p95: 44 }, mcpWindowsMs: { p50: 90, p95: 120 } };
    const table = reportTable({ ...r, computerUse: { ...r.computerUse!, ...mcp } });
    expect(table).toMatch(/MCP screenshot call\s+28\s+35/);
    expect(table).toMatch(/MCP zoom call \(2x\)\s+31\s+44/);
    expect(table).toMatch(/MCP windows call\s+90\s+120/);
    expect(reportTable(r)).not.toMatch(/MCP zoom/);
  });

  it('prints only the sections a run measured', () => {
    const table = reportTable({ ...sampleResult(), sections: ['computer-use'] });
    expect(table).not.toMatch(/Fork of the standard desktop|Fan-out|Read latency/);
    expect(table).toMatch(/Computer use through the helper/);
    expect(reportTable({ ...sampleResult(), computerUse: null })).not.toMatch(/Computer use through the helper/);
  });

  it("prints each fan-out's first and last copy on screen, with a dash where a run did not measure the first", () => {
    const r = sampleResult();
    expect(reportTable(r)).toMatch(/grove 16\s+600\s+2000\s+1600/);
    const older = r.grove.fanout.map(({ firstMs: _, ...point }) => point);
    expect(reportTable({ ...r, grove: { ...r.grove, fanout: older } })).toMatch(/grove 16\s+—\s+2000\s+1600/);
  });

  it('prints the cage comparison side by side', () => {
    const r = sampleResult();
    const table = reportTable({ ...r, targets: checkTargets(r) });
    expect(table).toMatch(/fork → first frame\s+1050\s+1200\s+1000\s+1150/);
    expect(table).toMatch(/child PSS\s+420\s+440\s+410\s+430/);
    expect(table).toMatch(/caged vs uncaged fork → first frame p50\s+within 10 %\s+1050 ms vs 1000 ms \(\+5\.0 %\)\s+met/);
    expect(reportTable({ ...r, cage: null })).not.toMatch(/The cage's cost/);
  });

  it("prints where a pull's time went, stage by stage on each side, when the run measured it", () => {
    const r = sampleResult();
    const stagesMs = { grove: { fetch: [1500, 1600, 1400], check: [900, 1000, 950] }, other: { 'skopeo copy': [1600, 1700, 1500] } };
    const table = reportTable({ ...r, ownWork: { ...r.ownWork!, pull: { ...r.ownWork!.pull, stagesMs } } });
    expect(table).toContain('pull stages (ms, p50): Grove fetch 1500, check 950; without Grove skopeo copy 1600');
    expect(reportTable(r)).not.toContain('pull stages');
  });

  it('prints the merge section and its targets, only when the run measured it', () => {
    const r = sampleResult();
    const table = reportTable({ ...r, targets: checkTargets(r) });
    expect(table).toMatch(/Merge: two sources that each changed 200 of 20000 files, into a live branch \(3 rounds; ms, p50\)/);
    expect(table).toMatch(/dry run\s+310\n/);
    expect(table).toMatch(/merge \(its checkpoint included\)\s+620/);
    expect(table).toMatch(/a checkpoint alone, to saved\s+460/);
    expect(table).toMatch(/dry run \+ merge\s+930/);
    expect(table).toMatch(/git merge, plain clone\s+410 {3}ratio 2\.27×/);
    expect(table).toMatch(/export of the merged target\s+720/);
    expect(table).toMatch(/dry run \+ merge vs git merge \(p50\)\s+≤ 3×\s+2\.27×\s+met/);
    expect(reportTable({ ...r, merge: null })).not.toMatch(/Merge: two sources/);
  });

  it("prints the CLI's calls and their target", () => {
    const r = sampleResult();
    const table = reportTable({ ...r, targets: checkTargets(r) });
    expect(table).toMatch(/The CLI, start to exit \(30 calls; ms\)/);
    expect(table).toMatch(/grove whoami\s+120\s+160/);
    expect(table).toMatch(/grove whoami, start to exit p50\s+≤ 150 ms\s+120 ms\s+met/);
    expect(reportTable({ ...r, cli: null })).not.toMatch(/The CLI, start to exit/);
  });

  it('prints the disk quota comparison: each pool side by side, and its targets', () => {
    const r = sampleResult();
    const table = reportTable({ ...r, targets: checkTargets(r) });
    expect(table).toMatch(/The disk quota's cost: .* on a branch's files \(the desktop's and an agent's work, 42 MiB\), 30 rounds/);
    expect(table).toMatch(/measure\s+quota\s+no quota\s+full qgroups/);
    expect(table).toMatch(/fork: snapshot, limit, write\s+31 \/ 48\s+28 \/ 45\s+120 \/ 230/);
    expect(table).toMatch(/full qgroups: 1 failure\(s\), first: one failed/);
    expect(table).toMatch(/fork's disk work, quota vs none \(p50\)\s+within 10 % \(or 5 ms\)\s+31\.2 vs 28\.4 ms \(\+9\.9 %\)\s+met/);
    expect(reportTable({ ...r, quota: null })).not.toMatch(/The disk quota's cost/);
  });

  it('prints the profile: medians with and without the kdat cache, then parallel restores', () => {
    const table = reportTable(sampleResult());
    expect(table).toMatch(/the desktop holds 20 processes, 180 threads, 4000 VMAs, 600 fds/);
    expect(table).toMatch(/dump, to the thaw\s+310\s+610\s+310\s+330/);
    expect(table).toMatch(/outside the freeze\s+110\s+410/);
    expect(table).toMatch(/CRIU restore_time\s+175\s+195\s+180\s+260/);
    expect(table).toMatch(/checkpoint \(p50 of 3\): returns after 320 ms, saved after 950 ms/);
    expect(reportTable({ ...sampleResult(), profile: null })).not.toMatch(/Profile/);
  });
});
