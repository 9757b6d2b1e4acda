// The baseline a Grove fork is measured against: plain CRIU on the same
// running workspace, built here from the helper's host building blocks and
// not through the helper's fork service.
//
//   prepare   a fresh netns with a veth pair and an address (as planNetwork
//             does), the firewall, an images directory on tmpfs
//   dump      criu dump --leave-running with the same flags as a fork
//             (criu-commands.ts forkDumpArgs); its post-dump action takes a
//             read-only btrfs snapshot of the source's root while the tree is
//             still stopped, so files and memory are one instant
//   restore   a writable btrfs snapshot of that, and an eager criu restore of
//             the tree into it and into the fresh netns
//   firstFrame  the RFB probe against containerAddress:5900 directly (the host
//             end of the veth is routed, and the firewall admits it)
//
// Every object is registered for removal before it is made and removed in
// reverse order: the restored tree is killed by pid only after its start time
// is checked, then the subvolumes, the netns (its veth goes with it) and the
// images directory. Removal also runs when a stage failed or the run was
// interrupted (see BaselineFork.cleanup).
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { sourceFrozenMs } from '../src/branches/criu-log.js';
import { deleteSubvolume, snapshot } from '../src/host/btrfs.js';
import { Criu } from '../src/host/criu/criu.js';
import { applyFirewall, createNetns, createVeth, deleteNetns, netnsPath, planNetwork, type NetPlan } from '../src/host/netns.js';
import { signalIfSame, startTime, waitGone } from '../src/host/proc.js';
import { firstFrame } from '../src/host/rfb-probe.js';
import { run } from '../src/host/run.js';

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
  overlay: { lowerdir: string; options: string } | null;
  /** The source's named netns. */
  netns: string;
}

/** Reads the source's layout: an overlay mounted at overlayRoot, or a plain subvolume root. */
export async function sourceLayout(overlayRoot: string): Promise<BaselineSource['overlay']> {
  const mounts = await readFile('/proc/self/mounts', 'utf8');
  for (const line of mounts.split('\n')) {
    const [, where, type, opts] = line.split(' ');
    if (where !== overlayRoot || type !== 'overlay' || !opts) continue;
    const parts = opts.split(',');
    const lowerdir = parts.find((o) => o.startsWith('lowerdir='))?.slice('lowerdir='.length);
    if (!lowerdir) throw new Error(`overlay at ${overlayRoot} has no lowerdir`);
    const keep = parts.filter((o) => /^(index|nfs_export|xino|redirect_dir|metacopy)=/.test(o));
    return { lowerdir, options: keep.join(',') };
  }
  return null;
}

export interface BaselineSetting {
  criuBinary: string;
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

/** One plain-CRIU fork: run() measures it, cleanup() removes all it made (idempotent). */
export class BaselineFork {
  private readonly undo: Undo[] = [];
  private readonly net: NetPlan;
  private readonly imagesDir: string;
  private readonly forkPoint: string;
  private readonly subvolume: string;
  private readonly rootfs: string;
  private restoring: Promise<unknown> | null = null;
  private cleaning: Promise<string[]> | null = null;

  constructor(
    private readonly s: BaselineSetting,
    private readonly source: BaselineSource,
    readonly tag: string,
  ) {
    if (!/^[a-z0-9]{1,5}$/.test(tag)) throw new Error(`bad baseline tag ${tag}`);
    this.net = planNetwork(s.instance, `cb${tag}`, s.subnet, s.netIndex);
    this.imagesDir = path.join(s.scratchDir, `criu-baseline-${tag}`);
    this.forkPoint = path.join(s.subvolumeDir, `.bench-criu-point-${tag}`);
    this.subvolume = path.join(s.subvolumeDir, `bench-criu-${tag}`);
    this.rootfs = source.overlay ? path.join(s.scratchDir, `criu-baseline-root-${tag}`) : this.subvolume;
  }

  async run(): Promise<BaselineTimings> {
    const criu = new Criu(this.s.criuBinary, this.s.failedLogsDir, null); // plain CRIU: no KSM launcher
    const t: BaselineTimings = { prepare: 0, dump: 0, sourceFrozen: 0, restore: 0, firstFrame: 0, total: 0 };
    const started = performance.now();
    const timed = async <T>(stage: string, work: () => Promise<T>): Promise<T> => {
      const t0 = performance.now();
      const out = await work();
      t[stage] = performance.now() - t0;
      return out;
    };

    await timed('prepare', async () => {
      await this.make('images directory', () => mkdir(this.imagesDir, { recursive: true, mode: 0o700 }), () =>
        rm(this.imagesDir, { recursive: true, force: true }),
      );
      await this.make(`netns ${this.net.netns}`, () => createNetns(this.net.netns), () => deleteNetns(this.net.netns));
      await createVeth(this.net);
      await applyFirewall(this.net);
    });

    await timed('dump', async () => {
      await this.make(`subvolume ${this.forkPoint}`, async () => {
        await criu.dump({
          initPid: this.source.pid,
          netnsPath: netnsPath(this.source.netns),
          imagesDir: this.imagesDir,
          snapshot: { from: this.source.subvolume, to: this.forkPoint },
        });
      }, () => deleteWithRetry(this.forkPoint));
    });
    const log = await readFile(path.join(this.imagesDir, 'dump.log'), 'utf8');
    t.sourceFrozen = sourceFrozenMs(log) ?? t.dump;

    await timed('restore', async () => {
      await this.make(`subvolume ${this.subvolume}`, () => snapshot(this.forkPoint, this.subvolume), () => deleteWithRetry(this.subvolume));
      const overlay = this.source.overlay;
      if (overlay) {
        // As branch-storage.ts: an empty workdir (a copied overlay index fails with ESTALE).
        const work = path.join(this.subvolume, 'work');
        await rm(work, { recursive: true, force: true });
        await mkdir(work, { mode: 0o700 });
        await this.make(`directory ${this.rootfs}`, () => mkdir(this.rootfs, { recursive: true }), () => rm(this.rootfs, { recursive: true, force: true }));
        const options = [`lowerdir=${overlay.lowerdir}`, `upperdir=${path.join(this.subvolume, 'upper')}`, `workdir=${work}`, overlay.options].filter(Boolean).join(',');
        await this.make(`mount ${this.rootfs}`, () => run('mount', ['-t', 'overlay', 'overlay', '-o', options, '--', this.rootfs]), () => unmountWithRetry(this.rootfs));
      }
      const restored = criu.restore({
        imagesDir: this.imagesDir,
        rootfs: this.rootfs,
        netnsPath: netnsPath(this.net.netns),
        hostname: `bench-criu-${this.tag}`,
        name: `baseline-${this.tag}`,
      });
      this.restoring = restored.catch(() => undefined);
      // The tree's undo is registered before the restore can finish, so an
      // interruption while CRIU works still waits for it and kills what it made.
      let proc: { pid: number; start: number } | null = null;
      this.undo.push({
        what: 'restored process tree',
        run: async () => {
          await this.restoring;
          proc ??= await this.restoredFromPidFile();
          if (proc) await killTree(proc.pid, proc.start);
        },
      });
      const pid = await restored;
      const start = await startTime(pid);
      if (start === null) throw new Error(`the restored baseline tree (pid ${pid}) exited right after restore`);
      proc = { pid, start };
    });

    await timed('firstFrame', () => firstFrame(this.net.containerAddress, 5900, { timeoutMs: this.s.firstFrameTimeoutMs }));
    t.total = performance.now() - started;
    return t;
  }

  /** Removes everything made so far, newest first; returns what could not be removed. */
  cleanup(): Promise<string[]> {
    this.cleaning ??= (async () => {
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

  private async make(what: string, make: () => Promise<unknown>, remove: () => Promise<unknown>): Promise<void> {
    this.undo.push({ what, run: async () => void (await remove()) });
    await make();
  }

  /** After an interrupted restore: the pid CRIU wrote, if that process is still there. */
  private async restoredFromPidFile(): Promise<{ pid: number; start: number } | null> {
    const text = await readFile(path.join(this.imagesDir, `restore-baseline-${this.tag}.pid`), 'utf8').catch(() => '');
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

/** A subvolume stays busy while the dead tree's mount namespace is being released. */
async function deleteWithRetry(subvolume: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await deleteSubvolume(subvolume);
      return;
    } catch (err) {
      if (attempt >= 10) throw err;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

async function unmountWithRetry(where: string): Promise<void> {
  const mounted = async () => (await readFile('/proc/self/mounts', 'utf8')).split('\n').some((l) => l.split(' ')[1] === where);
  for (let attempt = 1; await mounted(); attempt++) {
    const res = await run('umount', ['--', where], { allowFailure: true });
    if (res.exitCode === 0) return;
    if (attempt >= 10) throw new Error(`umount ${where}: ${res.stderr.trim()}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}
