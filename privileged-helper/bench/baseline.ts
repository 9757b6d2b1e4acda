// The baseline a Grove fork is measured against: plain CRIU on the same
// running workspace, built here from the helper's host building blocks and
// not through the helper's fork service. One dump, N copies (1 for the fork
// latency, up to 16 for the fan-out):
//
//   prepare   per copy a fresh netns with a veth pair and an address (as
//             planNetwork does) and the firewall; an images directory on tmpfs
//   dump      criu dump --leave-running with the same flags as a fork
//             (criu-commands.ts forkDumpArgs); its post-dump action takes a
//             read-only btrfs snapshot of the source's root while the tree is
//             still stopped, so files and memory are one instant
//   restore   per copy, in parallel: a writable btrfs snapshot of that, and an
//             eager criu restore of the tree into it and into its own netns
//   firstFrame  the RFB probe against each copy's containerAddress:VNC_PORT (the bench is root)
//             directly (the host end of the veth is routed, and the firewall
//             admits it), as soon as that copy is restored; the stage ends
//             with the last copy's first frame
//
// Every object is registered for removal before it is made and removed in
// reverse order: the restored tree is killed by pid only after its start time
// is checked, then the subvolumes, the netns (its veth goes with it) and the
// images directory. Removal also runs when a stage failed or the run was
// interrupted (see BaselineFork.cleanup).
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { allSettled } from '../src/concurrency.js';
import { snapshot } from '../src/host/btrfs.js';
import { Criu, restorePidFile } from '../src/host/criu/criu.js';
import type { CriuDumpStats } from '../src/protocol/entities.js';
import { bindMount, mountOverlay } from '../src/host/overlay.js';
import { createNetwork, deleteNetns, netnsPath, planNetwork, type NetPlan } from '../src/host/netns.js';
import { mountNetnsSysfs, netnsSysfsPath } from '../src/host/netns-sysfs.js';
import { inOwnUserNamespace, signalIfSame, startTime, waitGone } from '../src/host/proc.js';
import { firstFrame } from '../src/desktop/rfb-probe.js';
import { EXTERNAL_BINDS } from '../src/workspaces/branch-storage.js';
import { VNC_PORT } from '../src/workspaces/runtime.js';
import { deleteWithRetry, unmountWithRetry } from './host-retry.js';

export interface BaselineSource {
  /** Host pid of the source container's init. */
  pid: number;
  /** The source's subvolume in the pool: its whole root, or (overlay layout) its upper + work. */
  subvolume: string;
  /**
   * Set when the source's root is an overlay of a read-only lower and its
   * subvolume's upper (branch-storage.ts): the baseline then mounts the same
   * overlay over its snapshot, since an overlay cannot be snapshotted as one
   * btrfs root (and CRIU's inotify file handles need the same kind of root).
   */
  overlay: { lower: string } | null;
  /** The source's named netns. */
  netns: string;
  /**
   * Container paths bound from the source's subvolume over its root
   * (branch-storage.ts EXTERNAL_BINDS, overlay layout only): CRIU dumps them as
   * external mounts, and each copy's restore binds its own snapshot's `dir`.
   */
  binds: readonly { containerPath: string; dir: string }[];
  /** The source runs in a user namespace of its own (its copies keep it, and read the same idmapped lower). */
  userns: boolean;
}

/**
 * Where the source is on the host, with its layout read from the mount table:
 * the one place that knows what a branch's files look like.
 */
export async function readBaselineSource(where: { pid: number; subvolume: string; rootfs: string; netns: string }): Promise<BaselineSource> {
  const overlay = await sourceLayout(where.rootfs);
  return {
    pid: where.pid,
    subvolume: where.subvolume,
    overlay,
    netns: where.netns,
    binds: overlay ? EXTERNAL_BINDS : [],
    userns: await inOwnUserNamespace(where.pid),
  };
}

/** Reads the source's layout: an overlay mounted at overlayRoot (its lower), or a plain subvolume root. */
async function sourceLayout(overlayRoot: string): Promise<BaselineSource['overlay']> {
  const mounts = await readFile('/proc/self/mounts', 'utf8');
  for (const line of mounts.split('\n')) {
    const [, where, type, opts] = line.split(' ');
    if (where !== overlayRoot || type !== 'overlay' || !opts) continue;
    const lower = opts
      .split(',')
      .find((o) => o.startsWith('lowerdir='))
      ?.slice('lowerdir='.length);
    if (!lower) throw new Error(`overlay at ${overlayRoot} has no lowerdir`);
    return { lower };
  }
  return null;
}

export interface BaselineSetting {
  criuBinary: string;
  /** native/grove-netlock.c, as the helper runs it. */
  netlock: string;
  /** native/grove-action.c, as the helper has CRIU run it (the post-dump snapshot). */
  action: string;
  /** native/grove-mount.c, which makes the copies' bind mounts as Grove's. */
  groveMount: string;
  instance: string;
  subnet: string;
  /** A /30 index of the subnet that the helper will not hand out during the run. */
  netIndex: number;
  /** Where the baseline's subvolumes go (the pool's workspaces directory). */
  subvolumeDir: string;
  /** Where CRIU's images go (tmpfs, like the helper's scratch directory). */
  scratchDir: string;
  firstFrameTimeoutMs: number;
  /** Where CRIU keeps the log of a failed run (created only on failure). */
  failedLogsDir: string;
  /**
   * A directory the restored tree's user namespace can reach (the helper's
   * roots dir): its binds' sources are bound there, as Grove's are, since
   * the pool's directories are root's alone and CRIU opens them from inside,
   * and so is each copy's network namespace's sysfs (its /sys).
   */
  reachableDir: string;
}

export interface BaselineTimings {
  prepare: number;
  dump: number;
  sourceFrozen: number;
  restore: number;
  firstFrame: number;
  total: number;
  [stage: string]: number;
}

type Undo = { what: string; run: () => Promise<void> };

/** One restored copy's host objects. */
interface Copy {
  /** Distinct per concurrent restore from the one images directory. */
  name: string;
  net: NetPlan;
  subvolume: string;
  /** The restored tree's root: the subvolume itself, or an overlay mounted over its upper. */
  rootfs: string;
  /** Where each of the source's binds comes from in this copy (bound into reachableDir for a source in a user namespace). */
  bindSources: { containerPath: string; source: string }[];
}

/** One plain-CRIU fork into `copies` copies: run() measures it, cleanup() removes all it made (idempotent). */
export class BaselineFork {
  private readonly undo: Undo[] = [];
  private readonly copies: Copy[];
  private readonly imagesDir: string;
  private readonly forkPoint: string;
  private cleaning: Promise<string[]> | null = null;
  /** The measurement in flight (settled), and whether cleanup() asked it to stop. */
  private running: Promise<unknown> = Promise.resolve();
  private stopped = false;
  /** Host pids of the restored trees' inits (each the init of its own pid namespace). */
  readonly restoredPids: number[] = [];
  /** When each copy's first frame was out, from the start of run(), in the order they came. */
  readonly readyMs: number[] = [];
  /** Each restored copy's init, by the copy's name. */
  private readonly restoredByCopy = new Map<string, number>();
  /** Plain CRIU: no KSM launcher, and the pages are saved in the freeze. */
  private readonly criu: Criu;

  constructor(
    private readonly s: BaselineSetting,
    private readonly source: BaselineSource,
    readonly tag: string,
    copies = 1,
  ) {
    if (!/^[a-z0-9]{1,5}$/.test(tag)) throw new Error(`bad baseline tag ${tag}`);
    if (!Number.isInteger(copies) || copies < 1 || copies > 16) throw new Error(`bad number of copies ${copies}`);
    this.imagesDir = path.join(s.scratchDir, `criu-baseline-${tag}`);
    this.forkPoint = path.join(s.subvolumeDir, `.bench-criu-point-${tag}`);
    this.copies = Array.from({ length: copies }, (_, i) => {
      const name = `${tag}x${i.toString(16)}`;
      const subvolume = path.join(s.subvolumeDir, `bench-criu-${name}`);
      return {
        name,
        net: planNetwork(s.instance, `c${name}`, s.subnet, s.netIndex - i),
        subvolume,
        rootfs: source.overlay ? path.join(s.scratchDir, `criu-baseline-root-${name}`) : subvolume,
        bindSources: source.binds.map((b) => ({
          containerPath: b.containerPath,
          source: source.userns ? path.join(s.reachableDir, `bench-criu-${name}-${b.dir}`) : path.join(subvolume, b.dir),
        })),
      };
    });
    this.criu = new Criu(s.criuBinary, s.failedLogsDir, null, s.reachableDir, { pagesAfterThaw: false, action: s.action, netlock: s.netlock });
  }

  run(): Promise<BaselineTimings> {
    const measuring = this.measure();
    this.running = measuring.catch(() => undefined);
    return measuring;
  }

  /**
   * Plain CRIU's checkpoint: the copies' networks and the dump, the source
   * running on; each copy is restored later (restoreOne), as plain CRIU's
   * rollback or one child of a fork (the agent-loop section).
   */
  checkpoint(): Promise<BaselineTimings> {
    const t: BaselineTimings = { prepare: 0, dump: 0, sourceFrozen: 0, restore: 0, firstFrame: 0, total: 0 };
    const measuring = this.prepareAndDump(t, performance.now()).then(() => t);
    this.running = measuring.catch(() => undefined);
    return measuring;
  }

  /** Restores copy `index` from the checkpoint's images; resolves with the ms to its first frame. */
  restoreOne(index: number): Promise<number> {
    const copy = this.copies[index];
    if (!copy) throw new Error(`baseline fork ${this.tag} has no copy ${index}`);
    const t0 = performance.now();
    const restoring = (async () => {
      await this.restoreCopy(copy);
      await firstFrame({ host: copy.net.containerAddress, port: VNC_PORT }, { timeoutMs: this.s.firstFrameTimeoutMs });
      return performance.now() - t0;
    })();
    // Copies may be restored at once: cleanup waits for every one.
    this.running = Promise.all([this.running, restoring.catch(() => undefined)]);
    return restoring;
  }

  /** Where restored copy `index` is on the host: the source of a plain-CRIU fork of it. */
  copyAsSource(index: number): BaselineSource {
    const copy = this.copies[index]!;
    const pid = this.restoredByCopy.get(copy.name);
    if (pid === undefined) throw new Error(`baseline copy ${copy.name} is not restored`);
    return { ...this.source, pid, subvolume: copy.subvolume, netns: copy.net.netns };
  }

  /** Copy `index`'s address on the host (its desktop answers there on VNC_PORT). */
  copyAddress(index: number): string {
    return this.copies[index]!.net.containerAddress;
  }

  private async measure(): Promise<BaselineTimings> {
    const t: BaselineTimings = { prepare: 0, dump: 0, sourceFrozen: 0, restore: 0, firstFrame: 0, total: 0 };
    const started = performance.now();
    await this.prepareAndDump(t, started);
    // Each copy is probed once it is restored, as Grove shows each child once
    // its own first frame is out: the restore stage ends with the last restore.
    const restoring = performance.now();
    let restored = restoring;
    await allSettled(
      this.copies.map(async (c) => {
        await this.restoreCopy(c);
        restored = Math.max(restored, performance.now());
        if (this.stopped) throw new Error(`baseline fork ${this.tag} stopped before firstFrame`);
        await firstFrame({ host: c.net.containerAddress, port: VNC_PORT }, { timeoutMs: this.s.firstFrameTimeoutMs });
        this.readyMs.push(performance.now() - started);
      }),
    );
    t.restore = restored - restoring;
    t.firstFrame = performance.now() - restored;
    t.total = performance.now() - started;
    return t;
  }

  private async prepareAndDump(t: BaselineTimings, started: number): Promise<void> {
    const timed = async <T>(stage: string, work: () => Promise<T>): Promise<T> => {
      if (this.stopped) throw new Error(`baseline fork ${this.tag} stopped before ${stage}`);
      const t0 = performance.now();
      const out = await work();
      t[stage] = performance.now() - t0;
      return out;
    };

    await timed('prepare', async () => {
      await this.make(
        'images directory',
        () => mkdir(this.imagesDir, { recursive: true, mode: 0o700 }),
        () => rm(this.imagesDir, { recursive: true, force: true }),
      );
      await allSettled(this.copies.map((c) => this.prepareNetwork(c.net)));
    });

    let frozen: CriuDumpStats | null = null;
    await timed('dump', async () => {
      await this.make(
        `subvolume ${this.forkPoint}`,
        async () => {
          frozen = await this.criu.dump({
            initPid: this.source.pid,
            netnsPath: netnsPath(this.source.netns),
            imagesDir: this.imagesDir,
            snapshot: { from: this.source.subvolume, to: this.forkPoint },
            binds: this.source.binds.map((b) => b.containerPath),
            userns: this.source.userns,
          }).done;
        },
        () => deleteWithRetry(this.forkPoint),
      );
    });
    t.sourceFrozen = (frozen as CriuDumpStats | null)?.sourceFrozenMs ?? t.dump;
    t.total = performance.now() - started;
  }

  /**
   * Removes everything made so far, newest first; returns what could not be
   * removed. A measurement in flight is stopped at its next stage and waited
   * for first: CRIU may be holding the source stopped, and nothing may kill or
   * unmount under it.
   */
  cleanup(): Promise<string[]> {
    this.cleaning ??= (async () => {
      this.stopped = true;
      await this.running;
      const failed: string[] = [];
      while (this.undo.length > 0) {
        const u = this.undo.pop()!;
        try {
          await u.run();
        } catch (err) {
          failed.push(`${u.what}: ${(err as Error).message}`);
        }
      }
      return failed;
    })();
    return this.cleaning;
  }

  private async prepareNetwork(net: NetPlan): Promise<void> {
    await this.make(
      `netns ${net.netns}`,
      () => createNetwork(net),
      () => deleteNetns(net.netns),
    );
    if (!this.source.userns) return;
    const sysfs = netnsSysfsPath(this.s.reachableDir, netnsPath(net.netns));
    await this.make(
      `sysfs ${sysfs}`,
      () => mountNetnsSysfs(netnsPath(net.netns), sysfs),
      async () => {
        await unmountWithRetry(sysfs);
        await rm(sysfs, { recursive: true, force: true });
      },
    );
  }

  private async restoreCopy(copy: Copy): Promise<void> {
    await this.buildRoot(copy);
    const restored = this.criu.restore({
      imagesDir: this.imagesDir,
      rootfs: copy.rootfs,
      netnsPath: netnsPath(copy.net.netns),
      hostname: `bench-criu-${copy.name}`,
      name: `baseline-${copy.name}`,
      binds: copy.bindSources,
      cgroups: [],
      mergeable: true, // plain CRIU: no launcher, so no cgroups of Grove's
      userns: this.source.userns,
    });
    const settled = restored.catch(() => undefined);
    // The tree's undo is registered before the restore can finish, so an
    // interruption while CRIU works still waits for it and kills what it made.
    let proc: { pid: number; start: number } | null = null;
    this.undo.push({
      what: `restored process tree ${copy.name}`,
      run: async () => {
        await settled;
        proc ??= await this.restoredFromPidFile(copy);
        if (proc) await killTree(proc.pid, proc.start);
      },
    });
    const { pid } = await restored;
    const start = await startTime(pid);
    if (start === null) throw new Error(`the restored baseline tree ${copy.name} (pid ${pid}) exited right after restore`);
    proc = { pid, start };
    this.restoredPids.push(pid);
    this.restoredByCopy.set(copy.name, pid);
  }

  /**
   * The copy's root, from the fork point: the one place that decides what a
   * baseline root is (a whole-root snapshot, or the source's overlay over the
   * snapshot's upper), so a change of the branch layout is one edit here.
   */
  private async buildRoot(copy: Copy): Promise<void> {
    await this.make(
      `subvolume ${copy.subvolume}`,
      () => snapshot(this.forkPoint, copy.subvolume),
      () => deleteWithRetry(copy.subvolume),
    );
    const overlay = this.source.overlay;
    if (!overlay) return;
    await this.make(
      `directory ${copy.rootfs}`,
      () => mkdir(copy.rootfs, { recursive: true }),
      () => rm(copy.rootfs, { recursive: true, force: true }),
    );
    const layers = { lower: overlay.lower, upper: path.join(copy.subvolume, 'upper'), work: path.join(copy.subvolume, 'work') };
    await this.make(
      `mount ${copy.rootfs}`,
      () => mountOverlay(this.s.groveMount, copy.rootfs, layers),
      () => unmountWithRetry(copy.rootfs),
    );
    if (!this.source.userns) return;
    for (const [i, b] of this.source.binds.entries()) {
      const at = copy.bindSources[i]!.source;
      await this.make(
        `directory ${at}`,
        () => mkdir(at, { recursive: true }),
        () => rm(at, { recursive: true, force: true }),
      );
      await this.make(
        `mount ${at}`,
        () => bindMount(this.s.groveMount, path.join(copy.subvolume, b.dir), at),
        () => unmountWithRetry(at),
      );
    }
  }

  private async make(what: string, make: () => Promise<unknown>, remove: () => Promise<unknown>): Promise<void> {
    this.undo.push({ what, run: async () => void (await remove()) });
    await make();
  }

  /** After an interrupted restore: the pid CRIU wrote, if that process is still there. */
  private async restoredFromPidFile(copy: Copy): Promise<{ pid: number; start: number } | null> {
    const text = await readFile(restorePidFile(this.imagesDir, `baseline-${copy.name}`), 'utf8').catch(() => '');
    const pid = Number(text.trim());
    if (!Number.isInteger(pid) || pid <= 1) return null;
    const start = await startTime(pid);
    return start === null ? null : { pid, start };
  }
}

/** SIGKILL to the restored pid-namespace init ends its whole namespace; checked by start time first. */
async function killTree(pid: number, start: number): Promise<void> {
  if (!(await signalIfSame(pid, start, 'SIGKILL'))) return;
  if (!(await waitGone(pid, start, 10_000))) throw new Error(`restored baseline tree ${pid} did not exit`);
  // The namespace's other processes die with their init; give the kernel a moment
  // to release the mount namespace that holds the subvolume.
  await new Promise((r) => setTimeout(r, 200));
}
