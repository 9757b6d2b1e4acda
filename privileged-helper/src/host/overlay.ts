// Overlay and bind mounts for branch roots (see workspaces/branch-storage.ts
// for the layout and why each option is there).
import { mkdir, rm } from 'node:fs/promises';
import { run } from './run.js';

export interface OverlayLayers {
  /** Read-only, shared by every branch that uses it. */
  lower: string;
  /** The branch's private writes. */
  upper: string;
  /** Overlay's scratch dir: on the upper's file system and subvolume (rename across subvolumes is EXDEV); emptied at every mount. */
  work: string;
}

/**
 * index=on + nfs_export=on: CRIU dumps inotify watches as file handles and
 * opens them again by handle on restore, which an overlay only decodes with
 * both. (Measured on this kernel: without them Chromium's and openbox's
 * inotify watches fail to restore.)
 */
export const OVERLAY_OPTIONS = ['index=on', 'nfs_export=on'] as const;

/** A branch's files hold no device node or set-id program that works: devices live only in its own /dev (crun's tmpfs, behind the devices cgroup). */
export const CAGE_FLAGS = ['nodev', 'nosuid'] as const;

export function overlayOptions(layers: OverlayLayers): string {
  for (const dir of Object.values(layers)) {
    // The option string is comma- and colon-separated: such a path would change its meaning.
    if (!dir.startsWith('/') || /[,:\\]/.test(dir)) throw new Error(`unusable overlay layer path: ${dir}`);
  }
  return [...CAGE_FLAGS, `lowerdir=${layers.lower}`, `upperdir=${layers.upper}`, `workdir=${layers.work}`, ...OVERLAY_OPTIONS].join(',');
}

/**
 * Mounts the overlay at `target`. The workdir is emptied first: a workdir
 * copied along with its upper (a fork's snapshot) holds an index that refers
 * to the other upper, and the mount then fails with ESTALE.
 */
export async function mountOverlay(target: string, layers: OverlayLayers): Promise<void> {
  await rm(layers.work, { recursive: true, force: true });
  await mkdir(layers.work, { mode: 0o700 });
  await mkdir(target, { recursive: true, mode: 0o755 });
  await run('mount', ['-t', 'overlay', '-o', overlayOptions(layers), '--', 'overlay', target]);
}

export async function bindMount(source: string, target: string): Promise<void> {
  await mkdir(target, { recursive: true, mode: 0o700 });
  await run('mount', ['--bind', '--', source, target]);
  // A bind takes its flags only from a remount.
  await run('mount', ['-o', `remount,bind,${CAGE_FLAGS.join(',')}`, '--', target]);
}
