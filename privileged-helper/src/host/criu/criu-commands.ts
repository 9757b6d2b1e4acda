// Argument arrays for live-forking a workspace container with CRIU 4.2.1
// (dump with --leave-running, restore as a new sibling). Pure: no execution,
// no I/O. Every flag here was tried on this host against a running desktop
// workspace (tini → session.sh → Xvnc, openbox, xterm, mousepad, Chromium).
//
// The caller must:
//  - run both commands with CRIU_FAULT=130 in the environment (hardware
//    breakpoints never fire in this VM; without it CRIU hangs in parasite cure);
//  - use absolute paths everywhere (action scripts run in another cwd);
//  - for restore, open the child's netns file (/run/netns/NAME) and pass it to
//    CRIU as the fd number given in `netnsFd` (it is matched to the dump's
//    `--external net[INODE]:KEY` through `--inherit-fd fd[N]:KEY`);
//  - not use `--log-pid` on restore: per-task log files are opened after the
//    task has entered the restored root, where the path does not exist, and
//    the restore then fails.

import { NAME_PATTERN } from '../../protocol/names.js';

/** Where crun bind-mounts the host's /dev/null over masked /proc files. */
export const CRUN_MASKED_FILES = ['/proc/keys', '/proc/timer_list'] as const;

/** Key used for an external mount in the images (dump side) for a container path. */
export function externalMountKey(containerPath: string): string {
  return `ext${containerPath.replace(/[^A-Za-z0-9]+/g, '_')}`;
}

/** An external mount at restore: what to bind at a container path. */
export interface ExternalMountSource {
  containerPath: string;
  source: string;
}

/** crun's masked files, bound from /dev/null again at restore. */
export const MASKED_FILE_SOURCES: readonly ExternalMountSource[] = CRUN_MASKED_FILES.map((p) => ({ containerPath: p, source: '/dev/null' }));

/**
 * What crun binds from the host into a container with a user namespace of
 * its own (where it cannot make device nodes or mount sysfs): CRIU dumps them
 * as external mounts, and a restore binds the host's nodes again and, for
 * /sys, the sysfs the host mounted from the restored tree's own network
 * namespace (host/netns-sysfs.ts: childless, as a restore in a user namespace
 * needs, and listing only that namespace's devices).
 */
export const USERNS_HOST_DEVICES = ['/dev/null', '/dev/zero', '/dev/full', '/dev/tty', '/dev/random', '/dev/urandom'] as const;
export const USERNS_HOST_MOUNTS: readonly string[] = [...USERNS_HOST_DEVICES, '/sys'];

export function usernsHostMountSources(netnsSysfs: string): ExternalMountSource[] {
  return [...USERNS_HOST_DEVICES.map((p) => ({ containerPath: p, source: p })), { containerPath: '/sys', source: netnsSysfs }];
}

export const EXTERNAL_NETNS_KEY = 'extnet';

export interface CriuLogOptions {
  /** Absolute path of the log file. */
  logFile: string;
  /**
   * 0-4, default 2 (errors and warnings). The debug log (-v4: megabytes for a
   * desktop's dump and its restore) is written while the tree is frozen and
   * the child waits, so forks log less (docs/fork-profile.md). The frozen time comes from stats-dump instead (criu-stats.ts).
   */
  verbosity?: 0 | 1 | 2 | 3 | 4;
}

/**
 * The kernel tier captures the private anonymous memory at post-dump and
 * attaches it at pre-resume (host/share-holder.ts): CRIU leaves it out of the
 * images and empty in the restored tasks (criu-patches/0006).
 */
export interface AnonymousMemoryOption {
  leaveAnonymousMemory?: boolean;
}

function anonymousMemoryArgs(input: AnonymousMemoryOption): string[] {
  return input.leaveAnonymousMemory ? ['--skip-private-anon-pages'] : [];
}

/**
 * An action script and the actions it acts on: CRIU runs it for those only
 * (criu-patches/0015). Each run starts a program from CRIU's process (a cost
 * even spawned, criu-patches/0020), and a dump ran two that did nothing
 * (network-lock, network-unlock) while the tree was frozen.
 */
export interface ActionScript {
  path: string;
  actions: readonly string[];
}

function actionScriptArgs(script: ActionScript | undefined): string[] {
  if (!script) return [];
  if (script.actions.length === 0 || !script.actions.every((a) => /^[a-z-]+$/.test(a)))
    throw new Error(`bad action script actions: ${script.actions.join(',')}`);
  return ['--action-script', script.path, '--action-script-actions', script.actions.join(',')];
}

export interface ForkDumpInput extends CriuLogOptions, AnonymousMemoryOption {
  /** Host PID of the container's init (tini). */
  initPid: number;
  /** Absolute images directory (tmpfs is fine). */
  imagesDir: string;
  /** Inode of the source's network namespace (`stat -L -c %i /run/netns/NAME`). */
  netnsInode: number;
  /** The action program (takes the btrfs snapshot at post-dump: native/grove-action.c). */
  actionScript?: ActionScript;
  /** Container paths bind-mounted from outside (default: crun's masked files). */
  externalMounts?: readonly string[];
  /** Chromium keeps deleted mapped files; default 256M. */
  ghostLimit?: string;
  /**
   * Save the private pages after the tree is thawed, from a copy-on-write
   * twin of each process made in the freeze (criu-patches/0022): the source
   * is frozen for its process state only. Plain CRIU (the benchmark's
   * baseline) saves them in the freeze.
   */
  pagesAfterThaw?: boolean;
  /**
   * With pagesAfterThaw: CRIU writes "ok" to this file in the images dir the
   * moment the last page is saved (criu-patches/0022), for the restores
   * that wait for it (ForkRestoreInput.pagesReadyFile).
   */
  pagesReadyFile?: string;
  /**
   * With pagesReadyFile: the private pages stay in the twins, not the
   * images, for the restores to read there (ForkRestoreInput.pagesFromTwins),
   * and CRIU keeps the twins until this file appears in the images dir
   * (criu-patches/0023). Only pagemaps are written after the thaw.
   */
  twinsReleaseFile?: string;
}

export function forkDumpArgs(input: ForkDumpInput): string[] {
  if (!Number.isInteger(input.initPid) || input.initPid <= 1) throw new Error(`bad init pid ${input.initPid}`);
  if (!Number.isInteger(input.netnsInode) || input.netnsInode <= 0) throw new Error(`bad netns inode ${input.netnsInode}`);
  assertAbsolute(input.imagesDir, input.logFile, input.actionScript?.path);
  const mounts = input.externalMounts ?? CRUN_MASKED_FILES;
  return [
    'dump',
    '--tree',
    String(input.initPid),
    '--images-dir',
    input.imagesDir,
    '--log-file',
    input.logFile,
    `-v${input.verbosity ?? 2}`,
    '--leave-running',
    // Every connection is dumped (TCP repair); the restore decides which to keep.
    '--tcp-established',
    // A connection a listening server has not accepted yet is left out: the
    // source keeps it in its queue, and in a restored tree its client's end
    // has no peer, so it comes back closed and the client tries again, as
    // after any server restart. Without it every dump of a busy server failed.
    '--skip-in-flight',
    '--file-locks',
    '--ghost-limit',
    input.ghostLimit ?? '256M',
    // No iptables on the host, and none needed: the whole tree is frozen while
    // its sockets are in repair mode, and its connections to the outside are
    // never restored, so the source's peers outside see nothing of the dump.
    '--network-lock',
    'skip',
    // Every restore leaves cgroups to the helper (below), so the dump need
    // not read them while the tree is frozen (criu-patches/0012).
    '--manage-cgroups=ignore',
    '--external',
    `net[${input.netnsInode}]:${EXTERNAL_NETNS_KEY}`,
    ...mounts.flatMap((p) => ['--external', `mnt[${p}]:${externalMountKey(p)}`]),
    ...actionScriptArgs(input.actionScript),
    ...anonymousMemoryArgs(input),
    ...(input.pagesAfterThaw ? ['--pages-after-thaw'] : []),
    ...pagesReadyArgs(input.pagesReadyFile),
    ...(input.twinsReleaseFile === undefined ? [] : ['--pages-in-twins', plainName(input.twinsReleaseFile)]),
  ];
}

export interface ForkRestoreInput extends CriuLogOptions, AnonymousMemoryOption {
  imagesDir: string;
  /** Where this restore writes its stats (stats-restore); one per concurrent restore. */
  workDir: string;
  /** The child's root: the btrfs snapshot taken at post-dump. */
  rootfs: string;
  /** Where CRIU writes the restored init's host PID. */
  pidFile: string;
  /** fd number (in CRIU's process) of the child's open netns file. */
  netnsFd: number;
  actionScript?: ActionScript;
  /** Each container path given to forkDumpArgs and what to bind there (default: crun's masked files from /dev/null). */
  externalMounts?: readonly ExternalMountSource[];
  /**
   * The dump may still be saving the private pages (pagesAfterThaw): CRIU
   * waits, before it reads any, for this file in the images dir to say "ok"
   * (criu-patches/0022); anything else in it fails the restore.
   */
  pagesReadyFile?: string;
  /** The dump left the private pages in its twins (ForkDumpInput.twinsReleaseFile): CRIU reads them there. */
  pagesFromTwins?: boolean;
  /**
   * The restored tree's hostname in place of the dumped one, set by CRIU as it
   * restores the UTS namespace (criu-patches/0019): no task of the tree ever
   * sees its source's name.
   */
  hostname?: string;
}

export function forkRestoreArgs(input: ForkRestoreInput): string[] {
  if (!Number.isInteger(input.netnsFd) || input.netnsFd < 3) throw new Error(`bad netns fd ${input.netnsFd}`);
  // A branch's hostname is its name (protocol/names.ts): nothing else reaches CRIU's command line.
  if (input.hostname !== undefined && !NAME_PATTERN.test(input.hostname)) throw new Error(`bad hostname ${JSON.stringify(input.hostname)}`);
  assertAbsolute(input.imagesDir, input.workDir, input.rootfs, input.pidFile, input.logFile, input.actionScript?.path);
  const mounts = input.externalMounts ?? MASKED_FILE_SOURCES;
  return [
    'restore',
    '--images-dir',
    input.imagesDir,
    '--work-dir',
    input.workDir,
    '--log-file',
    input.logFile,
    `-v${input.verbosity ?? 2}`,
    '--root',
    input.rootfs,
    '--restore-detached',
    '--pidfile',
    input.pidFile,
    // Connections with both ends in the tree (loopback) come back established;
    // those to anything outside come back closed, so nothing is sent twice to
    // the outside world (criu-patches/0002).
    '--tcp-established',
    '--tcp-close-external',
    '--file-locks',
    // The host's cgroups belong to the machinery; the restored tree stays in CRIU's.
    '--manage-cgroups=ignore',
    '--inherit-fd',
    `fd[${input.netnsFd}]:${EXTERNAL_NETNS_KEY}`,
    ...mounts.flatMap((m) => ['--external', `mnt[${externalMountKey(m.containerPath)}]:${m.source}`]),
    ...actionScriptArgs(input.actionScript),
    ...anonymousMemoryArgs(input),
    ...pagesReadyArgs(input.pagesReadyFile),
    ...(input.pagesFromTwins ? ['--pages-from-twins'] : []),
    ...(input.hostname === undefined ? [] : ['--uts-hostname', input.hostname]),
  ];
}

function pagesReadyArgs(file: string | undefined): string[] {
  return file === undefined ? [] : ['--pages-ready-file', plainName(file)];
}

function plainName(name: string): string {
  if (!/^[\w.-]+$/.test(name) || name.startsWith('.')) throw new Error(`not a plain file name: ${name}`);
  return name;
}

function assertAbsolute(...paths: readonly (string | undefined)[]): void {
  for (const p of paths) {
    if (p !== undefined && !p.startsWith('/')) throw new Error(`CRIU needs absolute paths: ${p}`);
  }
}
