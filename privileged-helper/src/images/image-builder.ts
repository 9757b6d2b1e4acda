// Builds images into the pool from the recipes shipped with the helper.
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
import type { Image } from '../protocol/entities.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry } from '../registry/registry.js';
import { MiB, requireSpace } from '../host/space.js';

export type ImageName = Image['name'];
export type ProgressFn = (stage: string, message: string) => void;

export class ImageBuilder {
  private readonly building = new Set<ImageName>();

  constructor(
    private readonly config: HelperConfig,
    private readonly pool: PoolLayout,
    private readonly registry: Registry,
    /** Image subvolumes that branches or versions read from (their overlay's lower): never removed. */
    private readonly lowersInUse: () => Promise<Set<string>>,
  ) {}

  list(): Image[] {
    return (['desktop'] as const).map((name) => this.status(name));
  }

  status(name: ImageName): Image {
    if (this.building.has(name)) return { ...this.recorded(name), state: 'building' };
    return this.recorded(name);
  }

  /** Path of a ready image's subvolume, or a clear error telling how to build it. */
  readyPath(name: ImageName): string {
    const img = this.registry.getImage(name);
    if (!img || img.state !== 'ready' || !img.recipeHash) {
      throw new GroveError('E_PRECONDITION', `image '${name}' is not built yet: run 'grove image build ${name}'`);
    }
    return this.subvolumePath(name, img.recipeHash);
  }

  async build(name: ImageName, opts: { rebuild: boolean }, progress: ProgressFn): Promise<Image> {
    if (this.building.has(name)) throw new GroveError('E_BUSY', `image '${name}' is already being built`);
    this.building.add(name);
    try {
      const hash = await this.recipeHash(name);
      const target = this.subvolumePath(name, hash);
      const current = this.registry.getImage(name);
      if (!opts.rebuild && current?.state === 'ready' && current.recipeHash === hash && (await btrfs.isSubvolume(target))) {
        progress('cached', `image '${name}' is up to date`);
        return current;
      }
      await requireSpace(`building the image '${name}'`, [{ where: 'the pool', dir: this.pool.images, bytes: imageRoomBytes(current?.sizeBytes), why: 'the image, unpacked' }]);
      await this.produce(name, hash, target, opts.rebuild, progress);
      const image: Image = { name, state: 'ready', recipeHash: hash, builtAt: new Date().toISOString(), sizeBytes: await diskUsage(target) };
      this.registry.putImage(image);
      await this.removeOtherVersions(name, hash);
      progress('done', `image '${name}' is ready`);
      return image;
    } catch (err) {
      this.registry.putImage({ ...this.recorded(name), state: 'failed' });
      throw err;
    } finally {
      this.building.delete(name);
    }
  }

  private async produce(name: ImageName, hash: string, target: string, rebuild: boolean, progress: ProgressFn): Promise<void> {
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

  private async runRecipe(name: ImageName, target: string, progress: ProgressFn): Promise<void> {
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
  private async removeOtherVersions(name: ImageName, keepHash: string): Promise<void> {
    const prefix = `${name}-`;
    const inUse = await this.lowersInUse();
    for (const entry of await readdir(this.pool.images)) {
      const sub = path.join(this.pool.images, entry);
      if (entry.startsWith(prefix) && entry !== `${name}-${keepHash}` && !inUse.has(sub)) await btrfs.deleteSubvolume(sub);
    }
  }

  /** Hash of every file of the recipe: any change to it makes a new image. */
  private async recipeHash(name: ImageName): Promise<string> {
    const dir = this.recipeDir(name);
    const hash = createHash('sha256');
    for (const file of (await readdir(dir)).sort()) {
      hash.update(file).update('\0').update(await readFile(path.join(dir, file))).update('\0');
    }
    return hash.digest('hex').slice(0, 16);
  }

  private recorded(name: ImageName): Image {
    return this.registry.getImage(name) ?? { name, state: 'absent', recipeHash: null, builtAt: null, sizeBytes: null };
  }

  private recipeDir(name: ImageName): string {
    return path.join(this.config.recipesDir, name);
  }

  private subvolumePath(name: ImageName, hash: string): string {
    return path.join(this.pool.images, `${name}-${hash}`);
  }

  private streamPath(name: ImageName, hash: string): string {
    return path.join(this.config.cacheDir, 'images', `${name}-${hash}.btrfs`);
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

async function diskUsage(dir: string): Promise<number | null> {
  const { stdout, exitCode } = await run('du', ['-sb', '--', dir], { allowFailure: true });
  return exitCode === 0 ? Number(stdout.split('\t')[0]) : null;
}

export async function removePartialStreams(cacheDir: string): Promise<void> {
  const dir = path.join(cacheDir, 'images');
  const entries = await readdir(dir).catch(() => [] as string[]);
  await Promise.all(entries.filter((e) => e.endsWith('.partial')).map((e) => rm(path.join(dir, e), { force: true })));
}

/**
 * Room a build or a receive needs: the size of the last build of the image
 * (its Debian packages unpacked: the desktop's send stream is 1.1 GB) with a margin, or
 * a guess of that size when it was never built here.
 */
export function imageRoomBytes(lastSizeBytes: number | null | undefined): number {
  return (lastSizeBytes ?? 2 * 2 ** 30) + 512 * MiB;
}
