// CRIU probes the kernel (kerndat) at the start of every run (most of it the
// compat vDSO probe, slower still under load), unless it finds its cache. It keeps
// that cache only on a tmpfs (so a reboot into another kernel drops it) in
// the run dir it was built with, and this host's /run is plain ext4: every
// dump and every restore probed again (docs/fork-profile.md). Our CRIU is
// built with KDAT_DIR as its run dir (build/host/criu.sh), and the helper
// keeps a small root-only tmpfs there.
//
// CRIU writes the cache through criu.kdat.tmp opened with O_EXCL and
// silently gives up when that file exists, so one CRIU killed between the
// two steps would disable the cache until the next reboot: the helper
// clears such a leftover and has the cache written once at start.
import { rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { ensureTmpfs } from '../mounts.js';
import { run } from '../run.js';

/** CRIU's run dir (RUNDIR in build/host/criu.sh): a tmpfs the helper mounts. */
export const KDAT_DIR = '/run/grove-criu';
export const KDAT_CACHE = path.join(KDAT_DIR, 'criu.kdat');
const KDAT_TMP = `${KDAT_CACHE}.tmp`;

/** A .tmp this old is a killed run's, not one being written now (writing takes microseconds). */
const STALE_TMP_MS = 60_000;

export type KdatCacheState = 'present' | 'written' | 'not written';

/** Makes sure CRIU's kernel-probe cache exists; says whether it had to write it and whether that worked. */
export async function ensureKdatCache(criuBinary: string): Promise<KdatCacheState> {
  await ensureTmpfs(KDAT_DIR, 'grove-criu', ['size=1m']);
  if (await exists(KDAT_CACHE)) return 'present';
  const tmp = await stat(KDAT_TMP).catch(() => null); // none left by a killed run
  if (tmp && Date.now() - tmp.mtimeMs > STALE_TMP_MS) await rm(KDAT_TMP, { force: true });
  // `criu check` runs kerndat and saves its result; its verdict on the kernel is the doctor's business.
  await run(criuBinary, ['check'], { allowFailure: true, timeoutMs: 60_000 });
  return (await exists(KDAT_CACHE)) ? 'written' : 'not written';
}

async function exists(file: string): Promise<boolean> {
  return (await stat(file).catch(() => null)) !== null;
}
