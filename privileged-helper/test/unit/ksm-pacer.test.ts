import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KsmPacer } from '../../src/host/ksm.js';

describe('KsmPacer (ksmd fast after something new, idle while CRIU works)', () => {
  let sysfs: string;
  const pace = async () => ({
    pages: Number(await readFile(path.join(sysfs, 'pages_to_scan'), 'utf8')),
    sleep: Number(await readFile(path.join(sysfs, 'sleep_millisecs'), 'utf8')),
  });
  const FAST = { pages: 5000, sleep: 10 };
  const IDLE = { pages: 200, sleep: 200 };

  beforeEach(async () => {
    sysfs = await mkdtemp(path.join(tmpdir(), 'ksm-'));
  });
  afterEach(async () => {
    vi.useRealTimers();
    await rm(sysfs, { recursive: true, force: true });
  });

  it('idles from the start, scans fast after a boost, and idles again 30 s later', async () => {
    vi.useFakeTimers();
    const ksm = new KsmPacer(sysfs);
    await ksm.start();
    expect(await pace()).toEqual(IDLE);
    expect(await readFile(path.join(sysfs, 'run'), 'utf8')).toBe('1');
    ksm.boost();
    await vi.waitFor(async () => expect(await pace()).toEqual(FAST));
    await vi.advanceTimersByTimeAsync(30_001);
    await vi.waitFor(async () => expect(await pace()).toEqual(IDLE));
    expect(ksm.pace()).toBe('idle');
  });

  it('holds ksmd idle while work runs (nested too) and resumes the spell after', async () => {
    const ksm = new KsmPacer(sysfs);
    await ksm.start();
    ksm.boost();
    await vi.waitFor(async () => expect(await pace()).toEqual(FAST));
    const seen: string[] = [];
    await ksm.hold(async () => {
      seen.push(`outer ${(await pace()).pages}`);
      await ksm.hold(async () => void seen.push(`inner ${(await pace()).pages}`));
      seen.push(`outer again ${(await pace()).pages}`);
    });
    expect(seen).toEqual(['outer 200', 'inner 200', 'outer again 200']);
    expect(await pace()).toEqual(FAST);
  });

  it('lets the work release its hold before it ends, once', async () => {
    const ksm = new KsmPacer(sysfs);
    await ksm.start();
    ksm.boost();
    await vi.waitFor(async () => expect(await pace()).toEqual(FAST));
    const seen: number[] = [];
    await ksm.hold(async (release) => {
      seen.push((await pace()).pages);
      await release();
      seen.push((await pace()).pages);
      await release(); // a second release changes nothing
      await ksm.hold(async () => void seen.push((await pace()).pages));
      seen.push((await pace()).pages);
    });
    expect(seen).toEqual([200, 5000, 200, 5000]);
    expect(await pace()).toEqual(FAST);
  });

  it('releases the hold when the work fails', async () => {
    const ksm = new KsmPacer(sysfs);
    await ksm.start();
    ksm.boost();
    await expect(ksm.hold(async () => Promise.reject(new Error('criu failed')))).rejects.toThrow('criu failed');
    expect(ksm.pace()).toBe('fast');
    expect(await pace()).toEqual(FAST);
  });
});
