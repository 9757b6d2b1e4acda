// Mount table queries and (un)mounting.
import { mkdir, readFile, statfs } from 'node:fs/promises';
import { run } from './run.js';

/** Mount points (decoded) currently in the helper's mount namespace. */
export async function mountPoints(): Promise<Set<string>> {
  const table = await readFile('/proc/self/mounts', 'utf8');
  return new Set(
    table.split('\n').flatMap((l) => {
      const field = l.split(' ')[1];
      return field ? [decodeMountPath(field)] : [];
    }),
  );
}

export async function isMounted(path: string): Promise<boolean> {
  return (await mountPoints()).has(path);
}

/** Is `dir` a mount point, or is anything mounted below it? (Never recurse into it then.) */
export async function hasMountAtOrBelow(dir: string): Promise<boolean> {
  return [...(await mountPoints())].some((m) => m === dir || m.startsWith(`${dir}/`));
}

const TMPFS_MAGIC = 0x01021994;

/** Is `dir` on a tmpfs (false if it does not exist)? */
export async function onTmpfs(dir: string): Promise<boolean> {
  return (await statfs(dir).catch(() => null))?.type === TMPFS_MAGIC;
}

/** A tmpfs of its own at `dir` (root's, mode 0700), unless one is mounted there already. */
export async function ensureTmpfs(dir: string, name: string, options: readonly string[] = []): Promise<void> {
  if ((await isMounted(dir)) && (await onTmpfs(dir))) return;
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await run('mount', ['-t', 'tmpfs', '-o', ['mode=0700', 'nosuid', 'nodev', 'noexec', ...options].join(','), name, dir]);
}

export async function unmount(path: string, o: { recursive?: boolean } = {}): Promise<void> {
  if (!(await isMounted(path))) return;
  await run('umount', [...(o.recursive ? ['--recursive'] : []), '--', path]);
}

function decodeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}
