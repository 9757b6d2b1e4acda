// The kernel tier's captures of versions (branches/version-captures.ts), with
// the real snapshot holder (native/grove-share.c). This host cannot load
// grove_share, so no capture is ever made here: a test creates the mark the
// action script leaves after one (the guest in kernel/test.sh makes real
// ones, kernel/tests/fork_test.c), and checks which captures are kept and
// that every holder let go has ended.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CAPTURES_KEPT, VersionCaptures } from '../../src/branches/version-captures.js';
import { loadConfig } from '../../src/config.js';
import { processesOf } from '../system/host-processes.js';

const tool = loadConfig().kernelTier.tool;
const dir = mkdtempSync(path.join(tmpdir(), 'version-captures-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const tier = (sharing: boolean, holderTool = tool) => ({ current: async () => ({ loaded: sharing, sharing, memory: '' }), tool: holderTool });

/** Holders still running for `versionId`: processes whose command line names its socket. */
async function holdersOf(versionId: string): Promise<number> {
  return (await processesOf(path.join(dir, `version-${versionId}.share`))).length;
}

/** A checkpoint's dump through the captures: opened, captured (the action script's mark) or not, settled. */
async function checkpoint(captures: VersionCaptures, versionId: string, branch: string, captured: boolean): Promise<void> {
  const opened = await captures.open(versionId, branch);
  expect(opened?.session.socket).toBe(path.join(dir, `version-${versionId}.share`));
  if (captured) writeFileSync(opened!.capturedFile, '');
  await captures.settle(versionId);
}

describe("the kernel tier's captures of versions", () => {
  it('has nothing to capture into where forks copy', async () => {
    const logs: string[] = [];
    const captures = new VersionCaptures({ kernelTier: tier(false), dir, log: (m) => logs.push(m) });
    expect(await captures.open('c0000001', 'b1')).toBeUndefined();
    expect(captures.session('c0000001')).toBeUndefined();
    expect(logs).toEqual([]);
  });

  it("keeps a branch's latest capture, ends the holders of the others, and of a dump that made none", async () => {
    const captures = new VersionCaptures({ kernelTier: tier(true), dir, log: () => undefined });
    await checkpoint(captures, 'c1000001', 'b1', false);
    expect(captures.session('c1000001')).toBeUndefined();
    expect(await holdersOf('c1000001')).toBe(0);

    await checkpoint(captures, 'c1000002', 'b1', true);
    expect(captures.session('c1000002')).toEqual({ socket: path.join(dir, 'version-c1000002.share'), tool });
    expect(await holdersOf('c1000002')).toBe(1);
    await checkpoint(captures, 'c1000003', 'b2', true);
    await checkpoint(captures, 'c1000004', 'b1', true);
    expect(captures.keptVersions()).toEqual(['c1000003', 'c1000004']);
    expect(await holdersOf('c1000002')).toBe(0);
    expect(existsSync(path.join(dir, 'version-c1000002.captured'))).toBe(false);

    await captures.drop('c1000003'); // the version was deleted
    expect(captures.keptVersions()).toEqual(['c1000004']);
    await captures.dropAll();
    expect(captures.keptVersions()).toEqual([]);
    expect(await holdersOf('c1000004')).toBe(0);
  });

  it(`keeps ${CAPTURES_KEPT} captures at most, dropping the oldest`, async () => {
    const captures = new VersionCaptures({ kernelTier: tier(true), dir, log: () => undefined });
    const versions = Array.from({ length: CAPTURES_KEPT + 2 }, (_, i) => `c200000${i}`);
    for (const [i, v] of versions.entries()) await checkpoint(captures, v, `b${i}`, true);
    expect(captures.keptVersions()).toEqual(versions.slice(2));
    expect(await Promise.all(versions.map(holdersOf))).toEqual([0, 0, ...versions.slice(2).map(() => 1)]);
    await captures.dropAll();
    expect(await Promise.all(versions.map(holdersOf))).toEqual(versions.map(() => 0));
  });

  it('goes on without a capture when the holder does not start, saying why', async () => {
    const logs: string[] = [];
    const captures = new VersionCaptures({ kernelTier: tier(true, path.join(dir, 'no-such-tool')), dir, log: (m) => logs.push(m) });
    expect(await captures.open('c3000001', 'b1')).toBeUndefined();
    expect(logs).toEqual([expect.stringMatching(/^checkpoint c3000001: no capture for rollbacks to share \(.*no-such-tool/)]);
  });
});
