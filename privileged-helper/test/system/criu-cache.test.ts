// CRIU's kernel-probe cache (host/criu/kdat-cache.ts): kept on a tmpfs of the
// helper's (CRIU drops it anywhere else), a killed CRIU's leftover .tmp no
// longer disables it for good, and a present cache is used as it is. Runs
// against the host's real cache, which every CRIU run on the host shares: a
// run that finds it missing meanwhile only probes again.
import { mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ensureKdatCache, KDAT_CACHE, KDAT_DIR } from '../../src/host/criu/kdat-cache.js';
import { onTmpfs } from '../../src/host/mounts.js';

const criu = loadConfig().criu;
const TMP = `${KDAT_CACHE}.tmp`;

describe("CRIU's kernel-probe cache", () => {
  it('clears a killed run’s leftover and writes the cache', async () => {
    await rm(KDAT_CACHE, { force: true });
    await writeFile(TMP, '');
    const longAgo = new Date(Date.now() - 3600_000);
    await utimes(TMP, longAgo, longAgo);
    try {
      expect(await ensureKdatCache(criu)).toBe('written');
      expect(await onTmpfs(KDAT_DIR)).toBe(true); // CRIU keeps its cache only on a tmpfs
      expect((await stat(KDAT_CACHE)).size).toBeGreaterThan(0);
      await expect(stat(TMP)).rejects.toThrow(/ENOENT/);
    } finally {
      await rm(TMP, { force: true });
    }
  });

  it('is where our CRIU looks for it, so a run loads it instead of probing', async () => {
    await ensureKdatCache(criu);
    const dir = await mkdtemp(path.join(tmpdir(), 'kdat-'));
    try {
      const log = path.join(dir, 'check.log');
      await execa(criu, ['check', '-v4', '--log-file', log], { reject: false });
      expect(await readFile(log, 'utf8')).toContain(`Loaded kdat cache from ${KDAT_CACHE}`);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('keeps a cache that is there', async () => {
    await ensureKdatCache(criu);
    const before = await readFile(KDAT_CACHE);
    const { mtimeMs } = await stat(KDAT_CACHE);
    expect(await ensureKdatCache(criu)).toBe('present');
    expect((await stat(KDAT_CACHE)).mtimeMs).toBe(mtimeMs);
    expect(await readFile(KDAT_CACHE)).toEqual(before);
  });

  it('leaves a .tmp alone while it may still be being written', async () => {
    await rm(KDAT_CACHE, { force: true });
    await writeFile(TMP, '');
    try {
      expect(await ensureKdatCache(criu)).toBe('not written');
      expect((await stat(TMP)).isFile()).toBe(true);
    } finally {
      await rm(TMP, { force: true });
      await ensureKdatCache(criu);
    }
  });
});
