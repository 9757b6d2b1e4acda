// The disk quota's cost (issue 42): what btrfs does in a fork, a checkpoint
// and a discard (the only places a quota acts) on three scratch pools made as
// Grove makes its pool (a sparse loop file, compress=zstd:1, noatime), each
// holding the same files: a copy of the bench desktop's, and an agent's work
// in them (WORK_FILES small files and a big one, random). One pool has simple
// quotas as the helper enables them (a fork's child gets its limit), one no
// quotas, one full qgroups (what simple quotas replaced: their accounting
// walks the shared extents at each commit). The sides alternate, in an order
// that turns each round, so they see the same background load. Per round and
// side:
//   fork        the freeze's writable snapshot of the files (grove-action
//               post-dump, as CRIU runs it); the child's disk limit beside its
//               first mount (a bind of its home), as the helper sets it; the
//               child's first write (4 KiB) and the commit that accounts it
//   checkpoint  the freeze's read-only snapshot and its commit
//   discard     both deleted, and the commit
// Before each round the files get 1 MiB of new writes, as a running branch's
// do between forks: the snapshot's commit carries them.
import { randomBytes } from 'node:crypto';
import { mkdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deleteSubvolume, makeFilesystem, receiveFromFile, sendToFile, snapshot } from '../src/host/btrfs.js';
import { isMounted, unmount } from '../src/host/mounts.js';
import { bindMount } from '../src/host/overlay.js';
import { allSettled } from '../src/concurrency.js';
import { run } from '../src/host/run.js';
import type { Percentiles, QuotaCost, QuotaSide } from './result-schema.js';
import { round, summarize } from './stats.js';

export const QUOTA_MODES = ['simple', 'off', 'full'] as const;
export type QuotaMode = (typeof QUOTA_MODES)[number];

const POOL_GIB = 4;
const LIMIT_BYTES = 10 * 2 ** 30;
const FILES = 'files';
/** An agent's work in the branch: a checkout's worth of small files (4-64 KiB) and a 200 MiB file. */
const WORK_FILES = 5000;
const WORK_BIG_MIB = 200;

export interface QuotaSetting {
  /** native/grove-action.c: the freeze's snapshot, as CRIU has it run. */
  groveAction: string;
  /** native/grove-quota.c: simple quotas and a child's limit, as the helper has them. */
  groveQuota: string;
  /** native/grove-mount.c: a child's first mount, beside which the helper sets its limit. */
  groveMount: string;
  /** Where the scratch pools' files and mounts go (removed by cleanup). */
  dir: string;
  /** The bench desktop's files subvolume, and a folder of the same pool for a read-only snapshot of it. */
  source: string;
  sourcePoolDir: string;
}

type Samples = { forkMs: number[]; checkpointMs: number[]; discardMs: number[]; errors: string[] };

export class QuotaPools {
  private readonly mounted: string[] = [];

  constructor(private readonly s: QuotaSetting) {}

  /** The three pools, each with a copy of the source's files; then `rounds` of each measure per side. */
  async measure(rounds: number, proceed: () => void, log: (msg: string) => void): Promise<QuotaCost> {
    const filesMiB = await this.makePools();
    log(`quota: three scratch pools with the desktop's files and an agent's work (${filesMiB} MiB) each`);
    const none = (): Samples => ({ forkMs: [], checkpointMs: [], discardMs: [], errors: [] });
    const samples: Record<QuotaMode, Samples> = { simple: none(), off: none(), full: none() };
    for (let i = 0; i < rounds; i++) {
      for (let k = 0; k < QUOTA_MODES.length; k++) {
        proceed();
        const mode = QUOTA_MODES[(i + k) % QUOTA_MODES.length]!;
        try {
          const [fork, checkpoint, discard] = await this.round(mode, i);
          samples[mode].forkMs.push(fork);
          samples[mode].checkpointMs.push(checkpoint);
          samples[mode].discardMs.push(discard);
        } catch (err) {
          samples[mode].errors.push((err as Error).message);
        }
      }
      log(`quota round ${i + 1}/${rounds}: ${QUOTA_MODES.map((m) => `${m} fork ${Math.round(samples[m].forkMs.at(-1) ?? Number.NaN)} ms`).join(', ')}`);
    }
    return { rounds, filesMiB, simple: summary(samples.simple), off: summary(samples.off), full: summary(samples.full) };
  }

  /** Unmounts the pools (their loop devices go with them) and removes their files; what could not be removed. */
  async cleanup(): Promise<string[]> {
    const problems: string[] = [];
    for (const root of this.mounted.splice(0)) {
      await unmount(root).catch((err: Error) => problems.push(`scratch pool ${root}: ${err.message}`));
    }
    await deleteSubvolume(this.readOnlyCopy()).catch((err: Error) => problems.push(`${this.readOnlyCopy()}: ${err.message}`));
    if (problems.length === 0) await rm(this.s.dir, { recursive: true, force: true });
    return problems;
  }

  private readOnlyCopy(): string {
    return path.join(this.s.sourcePoolDir, '.bench-quota-files');
  }

  private root(mode: QuotaMode): string {
    return path.join(this.s.dir, mode);
  }

  /** Makes, mounts and fills each pool; the size of the files in each, in MiB. */
  private async makePools(): Promise<number> {
    await mkdir(this.s.dir, { recursive: true, mode: 0o700 });
    const stream = path.join(this.s.dir, 'files.stream');
    const work = path.join(this.s.dir, 'work');
    await snapshot(this.s.source, this.readOnlyCopy(), { readonly: true });
    try {
      await sendToFile(this.readOnlyCopy(), stream);
    } finally {
      await deleteSubvolume(this.readOnlyCopy());
    }
    const bytes = (await stat(stream)).size + (await writeWork(work));
    for (const mode of QUOTA_MODES) {
      const image = path.join(this.s.dir, `${mode}.img`);
      await writeFile(image, '');
      await run('truncate', ['-s', `${POOL_GIB}G`, '--', image]);
      await makeFilesystem(image, `grove-bench-${mode}`);
      await mkdir(this.root(mode));
      await run('mount', ['-t', 'btrfs', '-o', 'loop,compress=zstd:1,noatime', '--', image, this.root(mode)]);
      this.mounted.push(this.root(mode));
      // Quotas on before the files come: both kinds then count them from the start.
      if (mode === 'simple') await run(this.s.groveQuota, ['enable', this.root(mode)]);
      if (mode === 'full') await run('btrfs', ['quota', 'enable', this.root(mode)]);
      await receiveFromFile(stream, this.root(mode));
      const files = path.join(this.root(mode), FILES);
      await snapshot(path.join(this.root(mode), '.bench-quota-files'), files);
      await run('cp', ['-a', '--reflink=never', '--', work, path.join(files, 'upper', '.bench-work')]);
    }
    await rm(stream);
    await rm(work, { recursive: true });
    return Math.round(bytes / 2 ** 20);
  }

  /** One fork's, checkpoint's and discard's disk work on the pool of `mode`, in ms each. */
  private async round(mode: QuotaMode, i: number): Promise<[number, number, number]> {
    const root = this.root(mode);
    const files = path.join(root, FILES);
    const child = path.join(root, `child-${i}`);
    const version = path.join(root, `version-${i}`);
    await writeFile(path.join(files, 'upper', `.bench-quota-${i}`), randomBytes(2 ** 20));
    const sync = () => run('btrfs', ['filesystem', 'sync', root]);
    const home = path.join(root, `home-${i}`);
    await mkdir(home);
    const fork = await timed(async () => {
      await this.freezeSnapshot(files, child, true);
      const limit = mode === 'off' ? [] : [run(this.s.groveQuota, ['limit', child, String(LIMIT_BYTES)])];
      await allSettled([bindMount(this.s.groveMount, path.join(child, 'home'), home), ...limit]);
      await writeFile(path.join(child, 'upper', '.bench-quota-child'), randomBytes(4096));
      await sync();
    }).finally(() => unmountIfMounted(home));
    const checkpoint = await timed(async () => {
      await this.freezeSnapshot(files, version, false);
      await sync();
    });
    const discard = await timed(async () => {
      await run('btrfs', ['subvolume', 'delete', '--', child, version]);
      await sync();
    });
    await rm(home, { recursive: true });
    return [fork, checkpoint, discard];
  }

  private async freezeSnapshot(from: string, to: string, writable: boolean): Promise<void> {
    const env: Record<string, string> = { CRTOOLS_SCRIPT_ACTION: 'post-dump', GROVE_SNAPSHOT_FROM: from, GROVE_SNAPSHOT_TO: to };
    if (writable) env.GROVE_SNAPSHOT_WRITABLE = '1';
    await run(this.s.groveAction, [], { env });
  }
}

/** An agent's work, written once (random: the pools compress), to be copied into each pool; its size in bytes. */
async function writeWork(dir: string): Promise<number> {
  await mkdir(dir, { recursive: true });
  let bytes = 0;
  for (let i = 0; i < WORK_FILES; i++) {
    const sub = path.join(dir, `d${i % 100}`);
    if (i < 100) await mkdir(sub);
    const size = 4096 + ((i * 7919) % 61) * 1024;
    await writeFile(path.join(sub, `f${i}`), randomBytes(size));
    bytes += size;
  }
  await writeFile(path.join(dir, 'big'), randomBytes(WORK_BIG_MIB * 2 ** 20));
  return bytes + WORK_BIG_MIB * 2 ** 20;
}

async function unmountIfMounted(target: string): Promise<void> {
  if (await isMounted(target)) await unmount(target);
}

async function timed(work: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await work();
  return performance.now() - t0;
}

function summary(s: Samples): QuotaSide {
  const pick = (xs: number[]): Percentiles => {
    if (xs.length === 0) return { p50: null, p95: null };
    const x = summarize(xs);
    return { p50: round(x.p50, 1), p95: round(x.p95, 1) };
  };
  return { forkMs: pick(s.forkMs), checkpointMs: pick(s.checkpointMs), discardMs: pick(s.discardMs), errors: s.errors };
}
