// The btrfs pool: a configured block device, or by default a sparse loop file.
// The loop device is attached by mount(8) with autoclear, so unmounting the
// pool also frees its loop device: nothing is left to detach by hand.
import { mkdir, open, stat } from 'node:fs/promises';
import path from 'node:path';
import type { HelperConfig } from '../config.js';
import { GroveError } from '../protocol/wire.js';
import { makeFilesystem } from './btrfs.js';
import { isMounted, unmount } from './mounts.js';
import { run } from './run.js';
import { backedBy } from './space.js';

export interface PoolLayout {
  root: string;
  images: string;
  workspaces: string;
  versions: string;
  /** Grove's local OCI storage (containers-storage, btrfs driver): every layer a subvolume snapshotted from the one below. */
  oci: string;
  /** Where what comes in is staged before it is unpacked (a pull's blobs, a build's context): emptied at start. */
  incoming: string;
}

export function poolLayout(config: HelperConfig): PoolLayout {
  const root = config.pool.mountPoint;
  return {
    root,
    images: path.join(root, 'images'),
    workspaces: path.join(root, 'workspaces'),
    versions: path.join(root, 'versions'),
    oci: path.join(root, 'oci'),
    incoming: path.join(root, 'incoming'),
  };
}

/** Mounts the pool (creating the loop file and filesystem the first time). */
export async function ensurePool(config: HelperConfig): Promise<PoolLayout> {
  const layout = poolLayout(config);
  await mkdir(layout.root, { recursive: true, mode: 0o700 });
  if (!(await isMounted(layout.root))) {
    const source = config.pool.device ?? (await ensureLoopFile(config));
    await ensureBtrfs(source, config.pool.device === null);
    const loop = config.pool.device === null ? ['loop'] : [];
    await run('mount', ['-t', 'btrfs', '-o', [...loop, 'compress=zstd:1', 'noatime'].join(','), '--', source, layout.root]);
  }
  await mkdir(layout.images, { recursive: true, mode: 0o700 });
  await mkdir(layout.workspaces, { recursive: true, mode: 0o700 });
  await mkdir(layout.versions, { recursive: true, mode: 0o700 });
  await mkdir(layout.oci, { recursive: true, mode: 0o700 });
  await mkdir(layout.incoming, { recursive: true, mode: 0o700 });
  if (config.pool.device === null) backedBy(layout.root, path.dirname(config.pool.loopFile));
  return layout;
}

/** Unmounts the pool and what is mounted inside it: containers-storage's btrfs driver binds its folder onto itself. */
export async function unmountPool(config: HelperConfig): Promise<void> {
  await unmount(poolLayout(config).root, { recursive: true });
}

async function ensureLoopFile(config: HelperConfig): Promise<string> {
  const file = config.pool.loopFile;
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  try {
    await stat(file);
  } catch {
    const handle = await open(file, 'wx', 0o600);
    try {
      await handle.truncate(config.pool.sizeGiB * 1024 ** 3); // sparse: costs no disk until written
    } finally {
      await handle.close();
    }
  }
  return file;
}

async function ensureBtrfs(source: string, mayFormat: boolean): Promise<void> {
  const probe = await run('blkid', ['-o', 'value', '-s', 'TYPE', '--', source], { allowFailure: true });
  const type = probe.stdout.trim();
  if (type === 'btrfs') return;
  if (type === '' && mayFormat) return makeFilesystem(source, 'grove-pool');
  throw new GroveError(
    'E_PRECONDITION',
    `pool device ${source} holds ${type ? `a ${type} filesystem` : 'no filesystem'}; Grove needs btrfs (run mkfs.btrfs on it yourself)`,
  );
}
