// Builds Grove's desktop image into the pool from the recipe shipped with the helper.
// An image is a read-only subvolume named after its recipe's hash, so a changed
// recipe yields a new image and an unchanged one is never rebuilt. A finished
// build is also kept as a `btrfs send` stream in the cache (outside the pool),
// so a new pool — a fresh test run, a re-created pool — receives it in seconds
// instead of running debootstrap again.
import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import type { HelperConfig } from '../config.js';
import * as btrfs from '../host/btrfs.js';
import type { PoolLayout } from '../host/pool.js';
import { run } from '../host/run.js';
import { GroveError } from '../protocol/wire.js';
import type { ImageRecord } from '../registry/registry.js';
import { MiB, requireSpace } from '../host/space.js';

export type ProgressFn = (stage: string, message: string) => void;

/** Grove's own desktop, from the recipe shipped with the helper (image/desktop/build.sh). */
export class RecipeBuilder {
  constructor(
    private readonly config: HelperConfig,
    private readonly pool: PoolLayout,
    /** Image subvolumes that branches or versions read from (their overlay's lower): never removed. */
    private readonly lowersInUse: () => Promise<Set<string>>,
  ) {}

  /** The image's subvolume as its recipe makes it now, built or received from the cache unless `current` is it already. */
  async build(name: string, current: ImageRecord | null, opts: { rebuild: boolean }, progress: ProgressFn): Promise<ImageRecord> {
    const hash = await this.recipeHash(name);
    const target = this.subvolumePath(name, hash);
    if (!opts.rebuild && current?.state === 'ready' && current.id === hash && (await btrfs.isSubvolume(target))) {
      progress('cached', `image '${name}' is up to date`);
      return { ...current, lower: target };
    }
    await requireSpace(`building the image '${name}'`, [
      { where: 'the pool', dir: this.pool.images, bytes: imageRoomBytes(current?.sizeBytes), why: 'the image, unpacked' },
    ]);
    await this.produce(name, hash, target, opts.rebuild, progress);
    await this.removeOtherVersions(name, hash);
    return {
      name,
      state: 'ready',
      origin: 'recipe',
      source: null,
      reference: null,
      id: hash,
      digest: null,
      layers: [],
      builtAt: new Date().toISOString(),
      sizeBytes: await diskUsage(target),
      lower: target,
      missing: [],
    };
  }

  private async produce(name: string, hash: string, target: string, rebuild: boolean, progress: ProgressFn): Promise<void> {
    if ((await this.lowersInUse()).has(target)) {
      throw new GroveError('E_CONFLICT', `image '${name}' is in use by workspaces or versions: delete them before rebuilding it`);
    }
    await btrfs.deleteSubvolume(target);
    const stream = this.streamPath(name, hash);
    if (!rebuild && (await exists(stream))) {
      progress('receive', `restoring '${name}' from the image cache`);
      await btrfs.receiveFromFile(stream, this.pool.images);
      return;
    }
    await this.runRecipe(name, target, progress);
    progress('cache', 'saving the image to the cache for fast re-creation');
    await mkdir(path.dirname(stream), { recursive: true });
    const partial = `${stream}.partial`;
    await btrfs.sendToFile(target, partial);
    await rename(partial, stream);
  }

  private async runRecipe(name: string, target: string, progress: ProgressFn): Promise<void> {
    const scratch = path.join(this.pool.images, `.build-${name}`);
    await btrfs.deleteSubvolume(scratch);
    await btrfs.createSubvolume(scratch);
    try {
      let stage = 'prepare';
      await run('bash', [path.join(this.recipeDir(name), 'build.sh'), scratch], {
        env: { GROVE_CACHE: this.config.cacheDir },
        timeoutMs: 45 * 60_000,
        onLine: (line) => {
          const marker = /^::stage (\S+)/.exec(line);
          if (marker?.[1]) stage = marker[1];
          progress(stage, line);
        },
      });
      await btrfs.snapshot(scratch, target, { readonly: true });
    } finally {
      await btrfs.deleteSubvolume(scratch);
    }
  }

  /** Old versions of the image go, except those a branch or version still reads from. */
  private async removeOtherVersions(name: string, keepHash: string): Promise<void> {
    const prefix = `${name}-`;
    const inUse = await this.lowersInUse();
    for (const entry of await readdir(this.pool.images)) {
      const sub = path.join(this.pool.images, entry);
      if (entry.startsWith(prefix) && entry !== `${name}-${keepHash}` && !inUse.has(sub)) await btrfs.deleteSubvolume(sub);
    }
  }

  /** Hash of every file of the recipe: any change to it makes a new image. */
  private async recipeHash(name: string): Promise<string> {
    const dir = this.recipeDir(name);
    const hash = createHash('sha256');
    for (const file of (await readdir(dir)).sort()) {
      hash
        .update(file)
        .update('\0')
        .update(await readFile(path.join(dir, file)))
        .update('\0');
    }
    return hash.digest('hex').slice(0, 16);
  }

  private recipeDir(name: string): string {
    return path.join(this.config.recipesDir, name);
  }

  private subvolumePath(name: string, hash: string): string {
    return path.join(this.pool.images, `${name}-${hash}`);
  }

  private streamPath(name: string, hash: string): string {
    return path.join(this.config.cacheDir, 'images', `${name}-${hash}.btrfs`);
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

export async function diskUsage(dir: string): Promise<number | null> {
  const { stdout, exitCode } = await run('du', ['-sb', '--', dir], { allowFailure: true });
  return exitCode === 0 ? Number(stdout.split('\t')[0]) : null;
}

export async function removePartialStreams(cacheDir: string): Promise<void> {
  const dir = path.join(cacheDir, 'images');
  const entries = await readdir(dir).catch(() => [] as string[]); // no images folder yet: nothing half fetched
  await Promise.all(entries.filter((e) => e.endsWith('.partial')).map((e) => rm(path.join(dir, e), { force: true })));
}

/**
 * Room a build or a receive needs: the size of the last build of the image
 * (its Debian packages unpacked: the desktop's send stream is over a gigabyte) with a margin, or
 * a guess of that size when it was never built here.
 */
export function imageRoomBytes(lastSizeBytes: number | null | undefined): number {
  return (lastSizeBytes ?? 2 * 2 ** 30) + 512 * MiB;
}
