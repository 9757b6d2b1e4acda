// Mount table queries and (un)mounting.
import { readFile } from 'node:fs/promises';
import { run } from './run.js';

/** Mount points (decoded) currently in the helper's mount namespace. */
export async function mountPoints(): Promise<Set<string>> {
  const table = await readFile('/proc/self/mounts', 'utf8');
  return new Set(table.split('\n').flatMap((l) => { const field = l.split(' ')[1]; return field ? [decodeMountPath(field)] : []; }));
}

export async function isMounted(path: string): Promise<boolean> {
  return (await mountPoints()).has(path);
}

/** Is `dir` a mount point, or is anything mounted below it? (Never recurse into it then.) */
export async function hasMountAtOrBelow(dir: string): Promise<boolean> {
  return [...(await mountPoints())].some((m) => m === dir || m.startsWith(`${dir}/`));
}

export async function unmount(path: string): Promise<void> {
  if (!(await isMounted(path))) return;
  await run('umount', ['--', path]);
}

function decodeMountPath(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, oct: string) => String.fromCharCode(parseInt(oct, 8)));
}
