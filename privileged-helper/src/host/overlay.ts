// Overlay and bind mounts for branch roots (see workspaces/branch-storage.ts
// for the layout and why each option is there).
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
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

/** A bind mount of `source` (not of the mounts under it) at `target`, with CAGE_FLAGS: grove-mount makes it in one program started (native/grove-mount.c). */
export async function bindMount(groveMount: string, source: string, target: string): Promise<void> {
  if (!path.isAbsolute(source) || !path.isAbsolute(target)) throw new Error(`bind mount paths must be absolute: ${source} ${target}`);
  await mkdir(target, { recursive: true, mode: 0o700 });
  await run(groveMount, ['bind', source, target]);
}
