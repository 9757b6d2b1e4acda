// btrfs subvolumes: the pool's images and each workspace's writable root.
import { access } from 'node:fs/promises';
import { run } from './run.js';

export async function createSubvolume(path: string): Promise<void> {
  await run('btrfs', ['subvolume', 'create', '--', path]);
}

export async function snapshot(source: string, target: string, opts: { readonly?: boolean } = {}): Promise<void> {
  await run('btrfs', ['subvolume', 'snapshot', ...(opts.readonly ? ['-r'] : []), '--', source, target]);
}

export async function setReadonly(path: string): Promise<void> {
  await run('btrfs', ['property', 'set', '-ts', '--', path, 'ro', 'true']);
}

export async function isSubvolume(path: string): Promise<boolean> {
  try {
    await access(path);
  } catch {
    return false;
  }
  return (await run('btrfs', ['subvolume', 'show', '--', path], { allowFailure: true })).exitCode === 0;
}

/** Deletes a subvolume; a missing one is not an error (deletion is idempotent). */
export async function deleteSubvolume(path: string): Promise<void> {
  if (!(await isSubvolume(path))) return;
  await run('btrfs', ['subvolume', 'delete', '--', path]);
}

/** Paths (relative to the pool's top) of every subvolume in the pool. */
export async function listSubvolumes(poolMount: string): Promise<string[]> {
  const { stdout } = await run('btrfs', ['subvolume', 'list', '-o', '--', poolMount], { allowFailure: true });
  return stdout
    .split('\n')
    .map((line) => /\spath\s+(.+)$/.exec(line)?.[1])
    .filter((p): p is string => p !== undefined);
}

export async function sendToFile(subvolume: string, file: string): Promise<void> {
  await run('btrfs', ['send', '-q', '-f', file, '--', subvolume]);
}

export async function receiveFromFile(file: string, parentDir: string): Promise<void> {
  await run('btrfs', ['receive', '-q', '-f', file, '--', parentDir]);
}

export async function makeFilesystem(device: string, label: string): Promise<void> {
  await run('mkfs.btrfs', ['-q', '-L', label, '--', device]);
}
