// Overlay and bind mounts for branch roots (see workspaces/branch-storage.ts
// for the layout and why each option is there).
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { IdRange } from './idmap.js';
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

/** The overlay's own options (its mount flags are grove-mount's). */
export function overlayOptions(layers: OverlayLayers): string {
  Object.values(layers).forEach(checkLayerPath);
  return [`lowerdir=${layers.lower}`, `upperdir=${layers.upper}`, `workdir=${layers.work}`, ...OVERLAY_OPTIONS].join(',');
}

/** The option string is comma- and colon-separated: a path with either would change its meaning. */
function checkLayerPath(dir: string): void {
  if (!dir.startsWith('/') || /[,:\\]/.test(dir)) throw new Error(`unusable overlay layer path: ${dir}`);
}

/**
 * A read-only overlay of `lowers` (the first on top) at `target`: a snapshot
 * of a branch's files seen as the branch saw them, its former upper now a
 * lower whose whiteouts still hide what it deleted. Nothing writes to it, so
 * it needs neither upper nor workdir, nor grove-mount's user namespaces.
 */
export async function mountReadOnlyOverlay(lowers: readonly string[], target: string): Promise<void> {
  lowers.forEach(checkLayerPath);
  await mkdir(target, { recursive: true, mode: 0o700 });
  await run('mount', ['-t', 'overlay', 'overlay', '-o', `ro,nodev,nosuid,lowerdir=${lowers.join(':')}`, target]);
}

/**
 * A mount of a branch's root that grove-mount makes (native/grove-mount.c),
 * nodev and nosuid: a branch's files hold no device node or set-id program
 * that works (devices live only in its own /dev, crun's tmpfs, behind the
 * devices cgroup).
 */
export type BranchMount =
  /** `source` (not the mounts under it) at `target`, neither read-only nor noexec whatever its mount is. */
  | { kind: 'bind'; source: string; target: string }
  /** `source` as a tree in a user namespace of `range` sees it: what the image's root owns, its root owns. */
  | { kind: 'idmap'; range: IdRange; source: string; target: string }
  | { kind: 'overlay'; target: string; layers: OverlayLayers };

/**
 * Makes `mounts` in order, from one grove-mount run: a fork's child needs
 * its root's mounts on its way to the screen, while the thawed source and
 * the dump keep both cores busy and each program started waits for one.
 * The first that fails ends the run, those before it mounted.
 */
export async function makeMounts(groveMount: string, mounts: readonly BranchMount[]): Promise<void> {
  const args = mounts.map(mountArgs); // every path checked before anything is touched
  for (const m of mounts) await prepareTarget(m);
  await run(
    groveMount,
    args.flatMap((a, i) => (i === 0 ? a : ['+', ...a])),
  );
}

function mountArgs(m: BranchMount): string[] {
  if (!path.isAbsolute(m.target)) throw new Error(`mount targets must be absolute: ${m.target}`);
  if (m.kind === 'overlay') return ['overlay', overlayOptions(m.layers), m.target];
  if (!path.isAbsolute(m.source)) throw new Error(`mount sources must be absolute: ${m.source}`);
  if (m.kind === 'idmap') return ['idmap', String(m.range.hostBase), String(m.range.size), m.source, m.target];
  return ['bind', m.source, m.target];
}

/**
 * The target made; an overlay's workdir emptied: a workdir copied along with
 * its upper (a fork's snapshot) holds an index that refers to the other
 * upper, and the mount then fails with ESTALE.
 */
async function prepareTarget(m: BranchMount): Promise<void> {
  if (m.kind === 'bind') return void (await mkdir(m.target, { recursive: true, mode: 0o700 }));
  if (m.kind === 'idmap') return void (await mkdir(m.target, { recursive: true, mode: 0o755 }));
  await rm(m.layers.work, { recursive: true, force: true });
  await mkdir(m.layers.work, { mode: 0o700 });
  await mkdir(m.target, { recursive: true, mode: 0o755 });
}

/** The overlay of `layers` at `target`. */
export async function mountOverlay(groveMount: string, target: string, layers: OverlayLayers): Promise<void> {
  await makeMounts(groveMount, [{ kind: 'overlay', target, layers }]);
}

/** A bind mount of `source` (not of the mounts under it) at `target`. */
export async function bindMount(groveMount: string, source: string, target: string): Promise<void> {
  await makeMounts(groveMount, [{ kind: 'bind', source, target }]);
}
