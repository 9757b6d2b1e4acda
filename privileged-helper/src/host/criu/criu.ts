// Runs CRIU for forks, checkpoints and rollbacks. Argument arrays come from
// criu-commands.ts; this file adds the environment CRIU needs on this host,
// hands the child's network namespace over as an inherited fd, and turns a
// failure into an error that quotes CRIU's own log.
import { watch, type FSWatcher } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { CriuDumpStats, CriuRestoreStats } from '../../protocol/entities.js';
import { GroveError } from '../../protocol/wire.js';
import type { Launcher } from '../launcher.js';
import { run } from '../run.js';
import { restorePlacement } from '../cgroups.js';
import type { ShareSession } from '../share-holder.js';
import { lockForRestore, RESTORE_LOCK_TABLE, unlockRestore } from '../netns.js';
import { netnsSysfsPath } from '../netns-sysfs.js';
import { mib, MiB, spaceAt } from '../space.js';
import { criuFailure, transientDumpFailure, type CriuFailure } from './criu-errors.js';
import { outsidePeers, processInBranch } from './outside-peers.js';
import { dumpStats, restoreStats } from './criu-stats.js';
import {
  CRUN_MASKED_FILES,
  forkDumpArgs,
  forkRestoreArgs,
  MASKED_FILE_SOURCES,
  USERNS_HOST_MOUNTS,
  usernsHostMountSources,
  type ExternalMountSource,
} from './criu-commands.js';

/** What the action program (native/grove-action.c) acts on in a dump, and in a restore: CRIU runs it for nothing else. */
export const DUMP_ACTIONS = ['post-dump', 'post-resume'] as const;
export const RESTORE_ACTIONS = ['pre-resume'] as const;

/** Hardware breakpoints never fire in this VM: CRIU must single-step the parasite (criu.md). */
export const CRIU_ENV = { CRIU_FAULT: '130' };

/** CRIU refused a Unix socket of the tree whose peer is a process outside it (outside-peers.ts finds both). */
const EXTERNAL_PEER = /External socket is used/;

const OUTSIDE_PEER_ADVICE =
  "end that process (or close what it holds), or start it inside the branch detached, as `nohup COMMAND >LOG 2>&1 &` does, which the branch's tree takes along; then try again";

/** Less than this free where the images go, and a CRIU run that left no error behind, ran out of space. */
const NEARLY_FULL_BYTES = 16 * MiB;

/** A dump that failed for a passing reason (transientDumpFailure) is tried this often. */
const DUMP_ATTEMPTS = 3;

/**
 * What the action program leaves at a dump's post-resume (GROVE_THAWED_FILE),
 * in a directory of its own next to the images (thawSignalDir). Watched in
 * the images dir, each of the few hundred files CRIU makes there in the
 * freeze woke the helper (an inotify event each, all within the freeze).
 */
const THAWED_FILE = 'grove-thawed';

/** What a dump whose restores follow it leaves in the images dir once it ends: "ok", or why its pages were not saved. */
const PAGES_READY_FILE = 'grove-pages-ready';

/** What the helper leaves in the images dir once every restore has read the dump's twins: CRIU lets them go and ends. */
const TWINS_RELEASE_FILE = 'grove-twins-release';

/** The child's netns is passed to CRIU as this fd (run()'s fd3Path). */
const NETNS_FD = 3;

/** A CRIU run that takes longer is stuck: it is ended (SIGTERM, then SIGKILL). */
const CRIU_TIMEOUT_MS = 120_000;

/**
 * A dump that keeps its twins for the restores lasts as long as they do (a
 * fan-out under load: minutes); CRIU itself lets them go after 900 s.
 */
const TWINS_DUMP_TIMEOUT_MS = 960_000;

export interface DumpRequest {
  initPid: number;
  netnsPath: string;
  imagesDir: string;
  /** Snapshot the source's files, read-only, while it is still frozen. */
  snapshot?: { from: string; to: string };
  /** The kernel tier's holder: it captures the source's memory while it is still frozen, and the images go without it. */
  share?: ShareSession;
  /**
   * A checkpoint's: the holder captures the tree's memory too, while the
   * images keep all of it (the version stays whole without the capture).
   * `capturedFile` is made only if the capture was; one that fails costs
   * rollbacks their sharing, not the checkpoint.
   */
  alsoCapture?: { session: ShareSession; capturedFile: string };
  /** Container paths bind-mounted from the branch's files (branch-storage.ts). */
  binds: readonly string[];
  /**
   * The tree runs in a user namespace of its own: crun bound host devices and
   * /sys into it, and its images are made readable to all (the directories
   * above them, 0700 and root's, keep everyone else out).
   */
  userns: boolean;
  /**
   * Restores from these images start once the tree runs again
   * (RestoreRequest.pagesFollow): the images are made readable then, CRIU
   * writes a file next to them once the last page is saved (or, with
   * DumpRun.pagesInTwins, listed), and when the dump ends the helper writes
   * it again with whether the dump succeeded.
   */
  pagesFollow?: boolean;
}

/** A dump under way. */
export interface DumpRun {
  /**
   * Resolves once the tree runs again, its instant fixed, while the private
   * pages may still be being saved (pagesAfterThaw); at the latest when the
   * dump is done. Rejects as `done` does if the dump fails before that.
   */
  thawed: Promise<void>;
  /** Resolves with CRIU's stats, if it wrote them, once every image is written (with pagesInTwins: once the twins are released). */
  done: Promise<CriuDumpStats | null>;
  /**
   * The private pages stay in the dump's twins (copy-on-write copies of the
   * source's processes, made in the freeze) instead of the images: restores
   * read them there (RestoreRequest.pagesFromTwins), and the dump does not
   * end until releaseTwins. A fork's images are read once and removed, so
   * the pages are never written.
   */
  pagesInTwins: boolean;
  /** Every restore that reads the twins is done: the dump lets them go and ends. Also before the thaw, and more than once. */
  releaseTwins(): Promise<void>;
}

export interface RestoreRequest {
  imagesDir: string;
  rootfs: string;
  netnsPath: string;
  /** The kernel tier's holder: the restored tree's memory is attached from its capture, not copied. */
  share?: ShareSession;
  hostname: string;
  /** Distinct per concurrent restore from one images dir. */
  name: string;
  /** The restored branch's own source for each bind its dump had. */
  binds: readonly ExternalMountSource[];
  /** The restored branch's cgroups: CRIU runs inside them (but the cpu group: restorePlacement), so the tree it restores is counted there. */
  cgroups: readonly string[];
  /** The restored tree's memory may be merged by KSM (false for a sensitive workspace's). */
  mergeable: boolean;
  /** The dump was of a tree in a user namespace (DumpRequest.userns): crun's host mounts are bound again, /sys from the netns's sysfs. */
  userns: boolean;
  /** The dump may still be saving the pages (DumpRequest.pagesFollow): CRIU waits for them before it reads any. */
  pagesFollow?: boolean;
  /** The dump kept the pages in its twins (DumpRun.pagesInTwins): CRIU reads them there. */
  pagesFromTwins?: boolean;
  /**
   * The caller locked the netns for the restore already (lockForRestore), at
   * once with making the root (a fork's child), so the lock's program run is
   * off the child's way. A restore that fails removes the lock all the same.
   */
  netnsLocked?: boolean;
}

/** What the action program needs to ask the kernel tier's holder (none: CRIU copies the memory). */
function shareEnv(share: ShareSession | undefined): Record<string, string> {
  return share ? { GROVE_SHARE_SOCKET: share.socket, GROVE_SHARE_TOOL: share.tool } : {};
}

/** The work dir of restore NAME from IMAGES (its log, pid file and stats). */
export function restoreWorkDir(imagesDir: string, name: string): string {
  return path.join(imagesDir, `restore-${name}`);
}

/** Where a dump into IMAGES_DIR says the tree runs again (THAWED_FILE), next to the images. */
export function thawSignalDir(imagesDir: string): string {
  return `${imagesDir}.thaw`;
}

/** Where restore NAME writes its tree's init pid, also when it was interrupted. */
export function restorePidFile(imagesDir: string, name: string): string {
  return path.join(restoreWorkDir(imagesDir, name), 'restore.pid');
}

export class Criu {
  /**
   * logsDir keeps the CRIU log of every failed run (the images dir it was in is
   * removed). launcher: restores run through it (in the branch's cgroups, with
   * restored tasks KSM-mergeable); null runs plain CRIU (the benchmark's baseline).
   * sysfsDir: where each network namespace's sysfs is mounted (host/netns-sysfs.ts), for restores in a user namespace.
   * pagesAfterThaw: dumps save the private pages after the source runs again (ForkDumpInput.pagesAfterThaw).
   * action: native/grove-action.c, which CRIU runs at the actions above; netlock: native/grove-netlock.c, which it starts.
   */
  constructor(
    private readonly binary: string,
    private readonly logsDir: string,
    private readonly launcher: Launcher | null,
    private readonly sysfsDir: string,
    private readonly options: { pagesAfterThaw: boolean; action: string; netlock: string },
  ) {}

  /** Silences a netns for a restore into it, which opens it at pre-resume (host/netns.ts). */
  async lockForRestore(netnsPath: string): Promise<void> {
    await lockForRestore(this.options.netlock, netnsPath);
  }

  /**
   * Dumps with --leave-running: the source is frozen only while CRIU works,
   * then runs on, while CRIU may still save its private pages (pagesAfterThaw).
   */
  dump(req: DumpRequest): DumpRun {
    if (req.share && req.alsoCapture) throw new Error('a dump captures for a fork or for a checkpoint, not both');
    let announce!: () => void;
    const runsAgain = new Promise<void>((resolve) => (announce = resolve));
    // Without the kernel tier: its capture holds the memory the twins would.
    const pagesInTwins = req.pagesFollow === true && this.options.pagesAfterThaw && req.share === undefined;
    const done = this.runDump(req, pagesInTwins, announce);
    const thawed = Promise.race([runsAgain, done.then(() => undefined)]);
    thawed.catch(() => undefined); // a caller may await only `done`
    // An empty file: made even where the images filled the scratch space.
    const releaseTwins = async () => {
      if (pagesInTwins) await writeFile(path.join(req.imagesDir, TWINS_RELEASE_FILE), '');
    };
    return { thawed, done, pagesInTwins, releaseTwins };
  }

  /** The dump, and with pagesFollow the word to its restores once it ends. */
  private async runDump(req: DumpRequest, pagesInTwins: boolean, announce: () => void): Promise<CriuDumpStats | null> {
    let outcome = 'the dump did not finish';
    try {
      const stats = await this.dumpImages(req, pagesInTwins, announce);
      outcome = 'ok';
      return stats;
    } catch (err) {
      outcome = (err as Error).message.slice(0, 200);
      throw err;
    } finally {
      if (req.pagesFollow) await writeAtomically(path.join(req.imagesDir, PAGES_READY_FILE), outcome);
    }
  }

  private async dumpImages(req: DumpRequest, pagesInTwins: boolean, announce: () => void): Promise<CriuDumpStats | null> {
    const { ino } = await stat(req.netnsPath);
    const logFile = path.join(req.imagesDir, 'dump.log');
    const args = forkDumpArgs({
      initPid: req.initPid,
      imagesDir: req.imagesDir,
      netnsInode: ino,
      logFile,
      actionScript: { path: this.options.action, actions: DUMP_ACTIONS },
      leaveAnonymousMemory: req.share !== undefined,
      pagesAfterThaw: this.options.pagesAfterThaw,
      ...(req.pagesFollow && { pagesReadyFile: PAGES_READY_FILE }),
      ...(pagesInTwins && { twinsReleaseFile: TWINS_RELEASE_FILE }),
      externalMounts: [...CRUN_MASKED_FILES, ...(req.userns ? USERNS_HOST_MOUNTS : []), ...req.binds],
    });
    const env = {
      ...(req.snapshot && { GROVE_SNAPSHOT_FROM: req.snapshot.from, GROVE_SNAPSHOT_TO: req.snapshot.to }),
      ...shareEnv(req.share),
      ...(req.alsoCapture && { ...shareEnv(req.alsoCapture.session), GROVE_SHARE_CAPTURED: req.alsoCapture.capturedFile }),
    };
    let thawed = false;
    // Restores that start at the thaw read the images as the tree's own ids (below): readable first.
    let madeReadable: Promise<void> | null = null;
    const onThawed = () => {
      thawed = true;
      if (!(req.pagesFollow && req.userns)) return announce();
      madeReadable = openToRestores(req.imagesDir);
      madeReadable.then(announce, () => undefined); // its failure is the dump's: awaited below
    };
    const signals = thawSignalDir(req.imagesDir);
    await rm(signals, { recursive: true, force: true }); // left by a helper killed mid-dump
    await mkdir(signals, { mode: 0o700 });
    try {
      for (let attempt = 1; ; attempt++) {
        const watching = watchFor(signals, THAWED_FILE, onThawed);
        const res = await run(this.binary, args, {
          env: { ...CRIU_ENV, ...env, GROVE_THAWED_FILE: path.join(signals, THAWED_FILE) },
          allowFailure: true,
          timeoutMs: pagesInTwins ? TWINS_DUMP_TIMEOUT_MS : CRIU_TIMEOUT_MS,
        }).finally(() => watching.close());
        await rm(path.join(signals, THAWED_FILE), { force: true });
        if (res.exitCode === 0) break;
        const log = await readFile(logFile, 'utf8').catch(() => ''); // no log: not known to be worth another try
        // Once the caller was told the instant is fixed, there is no other try: it would be another instant.
        if (attempt >= DUMP_ATTEMPTS || thawed || !transientDumpFailure(log))
          throw await this.failure('dump', logFile, res.signal ? `killed by ${res.signal}` : res.stderr, req);
        // The tree ran on (--leave-running); a fresh images directory and a moment for the reader to drain its socket.
        await emptyDirectory(req.imagesDir);
        await new Promise((r) => setTimeout(r, 200 * attempt));
      }
    } finally {
      await rm(signals, { recursive: true, force: true });
    }
    // A restore in the tree's user namespace reads some images once it is in it, as ids the images' owner (host root) is not.
    if (req.userns) await (madeReadable ?? openToRestores(req.imagesDir));
    // The stats are only timings to show: a dump that worked does not fail for want of them.
    return dumpStats(await readFile(path.join(req.imagesDir, 'stats-dump')).catch(() => Buffer.alloc(0)));
  }

  /**
   * Restores a tree detached, as a new sibling; resolves with its init's host
   * PID and CRIU's stats. Each restore has a work dir of its own next to the
   * images (its log, pid file and stats), so restores from one dump may run at
   * once; it goes once the restore succeeded (a failed one's log is kept in logsDir).
   */
  async restore(req: RestoreRequest): Promise<{ pid: number; stats: CriuRestoreStats | null }> {
    const workDir = restoreWorkDir(req.imagesDir, req.name);
    await mkdir(workDir, { recursive: true, mode: 0o700 });
    const logFile = path.join(workDir, 'restore.log');
    const pidFile = restorePidFile(req.imagesDir, req.name);
    const args = forkRestoreArgs({
      imagesDir: req.imagesDir,
      workDir,
      rootfs: req.rootfs,
      pidFile,
      netnsFd: NETNS_FD,
      logFile,
      actionScript: { path: this.options.action, actions: RESTORE_ACTIONS },
      leaveAnonymousMemory: req.share !== undefined,
      ...(req.pagesFollow && { pagesReadyFile: PAGES_READY_FILE }),
      pagesFromTwins: req.pagesFromTwins,
      hostname: req.hostname,
      externalMounts: [...MASKED_FILE_SOURCES, ...(req.userns ? usernsHostMountSources(netnsSysfsPath(this.sysfsDir, req.netnsPath)) : []), ...req.binds],
    });
    const placement = restorePlacement(req.cgroups);
    const env = {
      ...CRIU_ENV,
      GROVE_LOCKED_NETNS: req.netnsPath,
      GROVE_NETLOCK_TOOL: this.options.netlock,
      GROVE_LOCK_TABLE: RESTORE_LOCK_TABLE,
      ...(this.launcher && placement.cpu && { GROVE_CPU_CGROUP: placement.cpu }),
      ...shareEnv(req.share),
    };
    if (!req.netnsLocked) await this.lockForRestore(req.netnsPath);
    try {
      const [file, argv] = this.launcher ? this.launcher.onHost(placement.whileRestoring, req.mergeable, [this.binary, ...args]) : [this.binary, args];
      const res = await run(file, argv, { env, fd3Path: req.netnsPath, allowFailure: true, timeoutMs: CRIU_TIMEOUT_MS });
      // A restore that succeeded ran its pre-resume action, which opened the lock.
      if (res.exitCode !== 0) throw await this.failure('restore', logFile, res.stderr);
    } catch (err) {
      await unlockRestore(this.options.netlock, req.netnsPath);
      throw err;
    }
    const pid = Number((await readFile(pidFile, 'utf8')).trim());
    if (!Number.isInteger(pid) || pid <= 1) throw new GroveError('E_HOST', `criu restore wrote no pid to ${pidFile}`);
    const stats = restoreStats(await readFile(path.join(workDir, 'stats-restore')).catch(() => Buffer.alloc(0))); // as after a dump
    await rm(workDir, { recursive: true, force: true }); // a version's images are restored again and again
    return { pid, stats };
  }

  /** `tree`: the dumped tree, for an error that a process outside it causes (outside-peers.ts). */
  private async failure(what: string, logFile: string, stderr: string, tree?: { initPid: number; netnsPath: string }): Promise<GroveError> {
    const log = await readFile(logFile, 'utf8').catch(() => stderr); // CRIU failed before it wrote a log
    // Named for the run's directory too: a fork's restores can fail in the same millisecond.
    const kept = path.join(this.logsDir, `criu-${what}-${new Date().toISOString().replace(/[:.]/g, '-')}-${path.basename(path.dirname(logFile))}.log`);
    await mkdir(this.logsDir, { recursive: true, mode: 0o700 });
    await writeFile(kept, log, { mode: 0o600 });
    const failure = criuFailure(log);
    const noSpace = await fullWhereImagesGo(path.dirname(logFile), failure);
    if (noSpace)
      return new GroveError(
        'E_NO_SPACE',
        `criu ${what} failed: ${noSpace}: discard branches or delete versions (grove versions), then try again (log: ${kept})`,
      );
    if (!failure) return new GroveError('E_HOST', `criu ${what} failed: ${stderr.trim() || 'no output'} (log: ${kept})`);
    const peers = tree && EXTERNAL_PEER.test(log) ? await outsidePeers(tree.initPid, tree.netnsPath) : [];
    // CRIU's own advice (--ext-unix-sk) is not one a branch can take.
    const cause = failure.cause.replace(/\.? Consider using --ext-unix-sk option\./, '');
    if (peers.length > 0) return new GroveError('E_HOST', `criu ${what} failed: ${cause} (${peers.join('; ')}); ${OUTSIDE_PEER_ADVICE} (log: ${kept})`);
    const who = await describePid(failure.pid);
    const advice = failure.advice ? `; ${failure.advice}` : '';
    return new GroveError('E_HOST', `criu ${what} failed: ${failure.cause}${who}${advice} (log: ${kept})`);
  }
}

/**
 * Whether CRIU failed for want of space where its images go, in words: its
 * log says so, or (when the filesystem was too full to hold even the log)
 * next to nothing is free there. Null otherwise.
 */
async function fullWhereImagesGo(imagesDir: string, failure: CriuFailure | null): Promise<string | null> {
  const space = await spaceAt(imagesDir).catch(() => null); // only words for an error being reported
  const free = space ? ` (${mib(space.freeBytes)} MiB free)` : '';
  if (failure?.noSpace) return `no space left where its images go${free}: ${failure.cause}`;
  if (!failure && space && space.freeBytes < NEARLY_FULL_BYTES) return `no space left where its images go${free}, not even for its log`;
  return null;
}

/** The process a CRIU error is about, in words: its pid inside the branch and its command line when the host still has it. */
async function describePid(pid: CriuFailure['pid']): Promise<string> {
  if (!pid) return '';
  if ('inside' in pid) return ` (process ${pid.inside} of the restored tree)`;
  return ` (${await processInBranch(pid.host)})`;
}

/** Calls `then` once, when the file NAME appears in DIR (inotify). */
function watchFor(dir: string, name: string, then: () => void): FSWatcher {
  const watcher = watch(dir, (_event, file) => {
    if (file !== name) return;
    watcher.close();
    then();
  });
  return watcher;
}

/**
 * Opens the images' directories to restores in the tree's user namespace,
 * which read them as ids that are not their owner's (host root). CRIU
 * creates every image 0644 (its CR_FD_PERM under the helper's umask, 022:
 * daemon.ts), all but its own log, so the directories are enough: a chmod of
 * each of a desktop's hundreds of images held the helper's file-system
 * threads at the thaw, before a fork's children could start.
 */
async function openToRestores(dir: string): Promise<void> {
  await chmod(dir, 0o755);
  const entries = await readdir(dir, { withFileTypes: true });
  await Promise.all(entries.filter((e) => e.isDirectory()).map((e) => openToRestores(path.join(dir, e.name))));
}

/** Writes a small file by rename, so a reader sees all of it or nothing. */
async function writeAtomically(file: string, content: string): Promise<void> {
  await writeFile(`${file}.tmp`, content, { mode: 0o644 });
  await rename(`${file}.tmp`, file);
}

async function emptyDirectory(dir: string): Promise<void> {
  for (const entry of await readdir(dir)) await rm(path.join(dir, entry), { recursive: true, force: true });
}
