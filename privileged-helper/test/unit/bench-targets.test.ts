import { describe, expect, it } from 'vitest';
import { checkTargets } from '../../bench/targets.js';
import { sampleResult } from './bench-result-fixture.js';

const verdicts = (r: ReturnType<typeof sampleResult>) => Object.fromEntries(checkTargets(r).map((t) => [t.name, t.met]));

describe('bench targets', () => {
  it('puts each target next to the measured value', () => {
    const checks = checkTargets(sampleResult());
    expect(checks.map((t) => t.name)).toEqual([
      'fork → first frame p50',
      'speed-up over plain CRIU (p50)',
      'source frozen p50',
      '16 copies, one call',
      '16 live branches, PSS after settling',
      'inherited read at depth 50 vs depth 0',
      'screenshot p50 (whole screen)',
      'key press → changed frame p50',
      'caged vs uncaged fork → first frame p50',
      'caged vs uncaged child PSS p50',
      '16 live branches, PSS at first frame',
      'checkpoint returns p50',
      'fork with a 1 GiB heap p50',
      'image pull vs skopeo copy + umoci unpack (p50)',
      'project copy speed vs cp -a (p50)',
      'fork of an image of your own vs the desktop (p50)',
      "fork's disk work, quota vs none (p50)",
      "checkpoint's disk work, quota vs none (p50)",
      'grove whoami, start to exit p50',
      'rollback → first frame p50 (no standby)',
      'agent loop wait: fork-and-pick vs cold restart',
      "agent loop wait: fork-and-pick vs plain CRIU's",
      'dry run + merge of 2×200 changed files p50',
      'dry run + merge vs git merge (p50)',
      'export of the merged 400 files p50',
    ]);
    expect(checks[18]).toEqual({ name: 'grove whoami, start to exit p50', target: '≤ 150 ms', measured: '120 ms', met: true });
    expect(checks[16]).toEqual({
      name: "fork's disk work, quota vs none (p50)",
      target: 'within 10 % (or 5 ms)',
      measured: '31.2 vs 28.4 ms (+9.9 %)',
      met: true,
    });
    expect(checks[17]).toMatchObject({ measured: '12.5 vs 12.0 ms (+4.2 %)', met: true });
    expect(checks[13]).toEqual({ name: 'image pull vs skopeo copy + umoci unpack (p50)', target: '≤ 1.2×', measured: '1.14×', met: true });
    expect(checks[14]).toEqual({ name: 'project copy speed vs cp -a (p50)', target: '≥ 80 %', measured: '86 %', met: true });
    expect(checks[15]).toEqual({ name: 'fork of an image of your own vs the desktop (p50)', target: 'within 10 %', measured: '1.03×', met: true });
    expect(checks[12]).toEqual({ name: 'fork with a 1 GiB heap p50', target: '≤ 2 s', measured: '3100 ms', met: false });
    expect(checks[11]).toEqual({ name: 'checkpoint returns p50', target: '≤ 200 ms', measured: '320 ms', met: false });
    expect(checks[8]).toEqual({ name: 'caged vs uncaged fork → first frame p50', target: 'within 10 %', measured: '1050 ms vs 1000 ms (+5.0 %)', met: true });
    expect(checks[9]).toMatchObject({ measured: '420 MiB vs 410 MiB (+2.4 %)', met: true });
    expect(checks[6]).toEqual({ name: 'screenshot p50 (whole screen)', target: '≤ 100 ms', measured: '30 ms', met: true });
    expect(checks[0]).toEqual({ name: 'fork → first frame p50', target: '≤ 500 ms', measured: '400 ms', met: true });
    expect(checks[4]!.measured).toBe('0.78 GiB');
    expect(checks[5]).toMatchObject({ measured: '15.0 vs 10.0 µs (+50.0 %)', met: false });
  });

  it('judges each bound on the right side', () => {
    const r = sampleResult();
    r.grove.forkToFirstFrameMs.p50 = 501;
    r.ratio = 4.99;
    r.grove.sourceFrozenMs.p50 = 150;
    r.grove.fanout[3]!.totalMs = 8001;
    r.grove.fanout[3]!.pssMiBSettled = 2560;
    r.grove.fanout[3]!.pssMiB = 2561;
    r.grove.readLatency[2]!.us = 10.9;
    r.computerUse!.screenshotMs.p50 = 100;
    r.computerUse!.actionToFrameMs.p50 = 101;
    r.cage!.caged.forkToFirstFrameMs.p50 = 1101; // +10.1 %
    r.cage!.caged.childPssMiB.p50 = 450; // +9.8 %
    r.ownWork!.pull.ratio = 1.21;
    r.ownWork!.project.ratio = 1.25; // 80 %: met
    r.ownWork!.fork.ratio = 1.1;
    r.cli!.whoamiMs.p50 = 151;
    r.agentLoop!.strategies[4]!.waitMs = 9000; // exactly 3× Grove's fork-and-pick: met
    r.agentLoop!.strategies[2]!.waitMs = 5990; // under 2×
    r.merge!.totalP50 = 1001;
    r.merge!.ratio = 3; // exactly 3× git merge: met
    r.merge!.exportP50 = 1000;
    expect(verdicts(r)).toEqual({
      'fork → first frame p50': false,
      'speed-up over plain CRIU (p50)': false,
      'source frozen p50': true,
      '16 copies, one call': false,
      '16 live branches, PSS after settling': true,
      'inherited read at depth 50 vs depth 0': true,
      'screenshot p50 (whole screen)': true,
      'key press → changed frame p50': false,
      'caged vs uncaged fork → first frame p50': false,
      'caged vs uncaged child PSS p50': true,
      '16 live branches, PSS at first frame': false,
      'checkpoint returns p50': false,
      'fork with a 1 GiB heap p50': false,
      'image pull vs skopeo copy + umoci unpack (p50)': false,
      'project copy speed vs cp -a (p50)': true,
      'fork of an image of your own vs the desktop (p50)': true,
      "fork's disk work, quota vs none (p50)": true,
      "checkpoint's disk work, quota vs none (p50)": true,
      'grove whoami, start to exit p50': false,
      'rollback → first frame p50 (no standby)': true,
      'agent loop wait: fork-and-pick vs cold restart': true,
      "agent loop wait: fork-and-pick vs plain CRIU's": false,
      'dry run + merge of 2×200 changed files p50': false,
      'dry run + merge vs git merge (p50)': true,
      'export of the merged 400 files p50': true,
    });
  });

  it('judges the disk quota by 10 % or 5 ms, whichever is more', () => {
    const r = sampleResult();
    r.quota!.simple.forkMs.p50 = 33.5; // +5.1 ms on 28.4
    r.quota!.simple.checkpointMs.p50 = 16.9; // +4.9 ms on 12: +41 %, within the 5 ms
    const v = verdicts(r);
    expect([v["fork's disk work, quota vs none (p50)"], v["checkpoint's disk work, quota vs none (p50)"]]).toEqual([false, true]);
  });

  it('judges only computer use after --only computer-use', () => {
    const r = sampleResult();
    const empty = { ...r.grove, forkToFirstFrameMs: { p50: null, p95: null }, sourceFrozenMs: { p50: null, p95: null }, fanout: [], readLatency: [] };
    const checks = checkTargets({
      ...r,
      sections: ['computer-use'],
      grove: empty,
      ratio: null,
      cli: null,
      cage: null,
      profile: null,
      ownWork: null,
      quota: null,
      agentLoop: null,
      merge: null,
    });
    expect(checks.filter((t) => t.met !== null).map((t) => t.name)).toEqual(['screenshot p50 (whole screen)', 'key press → changed frame p50']);
    const withoutComputerUse = checkTargets({ ...r, computerUse: null });
    expect(withoutComputerUse.find((t) => t.name === 'key press → changed frame p50')).toMatchObject({ measured: 'not measured', met: null });
    expect(checkTargets({ ...r, cage: null }).at(-16)).toMatchObject({ measured: 'not measured', met: null });
    expect(checkTargets({ ...r, profile: null }).at(-13)).toMatchObject({ measured: 'not measured (--only profile measures it)', met: null });
    expect(checkTargets({ ...r, ownWork: null }).at(-10)).toMatchObject({ measured: 'not measured (--only own-work measures it)', met: null });
    expect(checkTargets({ ...r, quota: null }).at(-8)).toMatchObject({ measured: 'not measured (--only quota measures it)', met: null });
    expect(checkTargets({ ...r, cli: null }).at(-7)).toMatchObject({ measured: 'not measured', met: null });
  });

  it("judges the agent loop's wait against a cold restart and plain CRIU, and not at all when a strategy failed", () => {
    const r = sampleResult();
    expect(checkTargets(r).slice(-6, -3)).toEqual([
      { name: 'rollback → first frame p50 (no standby)', target: '≤ 1 s', measured: '820 ms', met: true },
      { name: 'agent loop wait: fork-and-pick vs cold restart', target: '≥ 3× less', measured: '8.00×', met: true },
      { name: "agent loop wait: fork-and-pick vs plain CRIU's", target: '≥ 2× less', measured: '2.50×', met: true },
    ]);
    r.agentLoop!.strategies[2]!.waitMs = 5999; // plain CRIU's fork-and-pick: under 2× Grove's 3000
    expect(checkTargets(r).at(-4)).toMatchObject({ met: false });
    r.agentLoop!.strategies[4]!.errors = ["rename files (1): the task's replay failed"];
    expect(checkTargets(r).at(-5)).toMatchObject({ measured: 'not measured (a strategy failed: see agentLoop.strategies[].errors)', met: null });
    expect(checkTargets({ ...r, agentLoop: null }).at(-4)).toMatchObject({ measured: 'not measured (--only agent-loop measures it)', met: null });
  });

  it('judges a merge in all and against git merge, and an export, or says only --only merge measures them', () => {
    const r = sampleResult();
    expect(checkTargets(r).slice(-3)).toEqual([
      { name: 'dry run + merge of 2×200 changed files p50', target: '≤ 1 s', measured: '930 ms', met: true },
      { name: 'dry run + merge vs git merge (p50)', target: '≤ 3×', measured: '2.27×', met: true },
      { name: 'export of the merged 400 files p50', target: '≤ 1 s', measured: '720 ms', met: true },
    ]);
    r.merge!.ratio = 3.01;
    r.merge!.exportP50 = 1001;
    expect(
      checkTargets(r)
        .slice(-2)
        .map((t) => t.met),
    ).toEqual([false, false]);
    expect(checkTargets({ ...r, merge: null }).slice(-3)).toEqual(
      Array.from({ length: 3 }, () => expect.objectContaining({ measured: 'not measured (--only merge measures it)', met: null })),
    );
  });

  it('says what a quick run did not measure instead of judging it', () => {
    const r = { ...sampleResult(), quick: true, ratio: null };
    r.grove = { ...r.grove, fanout: r.grove.fanout.filter((f) => f.copies <= 8), readLatency: r.grove.readLatency.filter((x) => x.depth <= 10) };
    const checks = checkTargets(r);
    expect(checks[1]).toMatchObject({ measured: 'not measured', met: null });
    expect(checks[3]).toMatchObject({ measured: 'not measured (--quick stops at 8 copies)', met: null });
    expect(checks[5]).toMatchObject({ measured: 'not measured (--quick stops at depth 10)', met: null });
  });
});
