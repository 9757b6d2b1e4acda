// Each running branch's desktop as a Selkies stream (docs/stream.md). The
// streamer is a host process of the helper's, outside what a fork captures:
// it joins the branch's IPC namespace (pixelflux captures through MIT-SHM
// segments the X server must attach) and network namespace, and reaches the
// branch's X server over TCP on 127.0.0.1 there (X serves MIT-SHM to local
// clients only). A fork's dump then sees a TCP peer outside the tree, which
// the child gets closed and the source keeps, where a Unix peer outside the
// tree would stop the dump.
//
// It runs as the host uid of the branch's own root, without capabilities, so
// the segments it makes belong to the branch's root as the dump records them
// (CRIU restores nothing owned by an id the branch's user namespace does not
// map), and it has no authority the branch lacks. It dies with the helper.
// It serves HTTP on a Unix socket (root:person group 0660, in a directory of
// its own, its uid's, person group, 0750) that the controller fronts with
// HTTPS and a token; it listens on no TCP port.
import { chmod, chown, mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { GroveError } from '../protocol/wire.js';
import { startTime } from '../host/proc.js';
import { KeyedLock } from '../workspaces/keyed-lock.js';

/** The desktop's X display, on TCP in the branch's network namespace (image/desktop/session.sh: Xvnc :0 -listen tcp). */
const X_DISPLAY = '127.0.0.1:0';
const SOCKET_WAIT_MS = 30_000;

export interface StreamPaths {
  /** root:person group 0750; each branch's socket and private files in it. */
  dir: string;
  /** The selkies program of the venv build/host/selkies.sh makes. */
  selkies: string;
  /** native/grove-shm-shared.c, preloaded into the streamer. */
  shmShim: string;
}

/** The branch process a stream shows: its init, by pid and start time, and the host uid and gid of its root (0 uncaged). */
export interface StreamTarget {
  id: string;
  name: string;
  pid: number;
  pidStart: number;
  hostRoot: number;
}

interface Streamer {
  target: StreamTarget;
  child: ResultPromise<{ stdin: 'ignore'; stdout: 'ignore'; stderr: ['pipe', { file: string }]; reject: false }>;
}

export class BranchStreams {
  private readonly streamers = new Map<string, Streamer>();
  /** One start or stop of a branch's stream at a time: a promotion and a rollback may ask at once. */
  private readonly turns = new KeyedLock();

  constructor(
    private readonly paths: StreamPaths,
    private readonly personGid: number,
    private readonly log: (msg: string) => void,
  ) {}

  /** Where a branch's stream is served while it runs (by its id: a promotion does not move it). */
  socketPath(id: string): string {
    return path.join(this.branchDir(id), 'selkies.sock');
  }

  /** What the branch's streamer printed, kept until its stream ends. */
  logPath(id: string): string {
    return path.join(this.branchDir(id), 'selkies.log');
  }

  private branchDir(id: string): string {
    return path.join(this.paths.dir, id);
  }

  /**
   * Starts the branch's stream unless one of the same branch process runs
   * (a promotion reopens forwarders without changing processes). Returns once
   * the socket accepts the person group.
   */
  ensure(target: StreamTarget): Promise<void> {
    return this.turns.run(target.id, () => this.start(target));
  }

  /** Ends a branch's stream, if it has one, and removes its files. */
  stop(id: string): Promise<void> {
    return this.turns.run(id, () => this.end(id));
  }

  async stopAll(): Promise<void> {
    await Promise.all([...this.streamers.keys()].map((id) => this.stop(id)));
  }

  private async start(target: StreamTarget): Promise<void> {
    const running = this.streamers.get(target.id);
    if (running && running.target.pid === target.pid && running.target.pidStart === target.pidStart && running.child.exitCode === null) return;
    await this.end(target.id);
    if ((await startTime(target.pid)) !== target.pidStart) throw new GroveError('E_CONFLICT', `branch '${target.name}' is no longer running`);
    const socket = this.socketPath(target.id);
    const dir = this.branchDir(target.id);
    const home = path.join(dir, 'home');
    await rm(dir, { recursive: true, force: true });
    await mkdir(home, { recursive: true, mode: 0o700 });
    await chown(home, target.hostRoot, target.hostRoot);
    await chown(dir, target.hostRoot, this.personGid);
    await chmod(dir, 0o750);
    const namespaces = [`--ipc=/proc/${target.pid}/ns/ipc`, `--net=/proc/${target.pid}/ns/net`];
    const child = execa('nsenter', [...namespaces, '--', ...dropPrivileges(target.hostRoot), this.paths.selkies, ...selkiesArgs(socket)], {
      stdin: 'ignore',
      stdout: 'ignore',
      stderr: ['pipe', { file: this.logPath(target.id) }],
      reject: false,
      extendEnv: false,
      env: {
        PATH: '/usr/bin:/bin',
        DISPLAY: X_DISPLAY,
        HOME: home,
        XDG_RUNTIME_DIR: home,
        LD_PRELOAD: this.paths.shmShim,
      },
    });
    const streamer = { target, child };
    this.streamers.set(target.id, streamer);
    const tail: string[] = [];
    child.stderr.on('data', (chunk: Buffer) => {
      tail.push(chunk.toString());
      if (tail.length > 20) tail.shift();
    });
    void child.then((result) => {
      if (this.streamers.get(target.id) === streamer) {
        this.streamers.delete(target.id);
        this.log(`stream of '${target.name}' ended (${result.signal ?? `exit ${result.exitCode}`}): ${lastLines(tail.join(''))}`);
      }
    });
    try {
      await this.waitForSocket(socket, child);
    } catch (err) {
      await this.end(target.id);
      throw new GroveError('E_HOST', `the stream of '${target.name}' did not start: ${(err as Error).message}; ${lastLines(tail.join(''))}`);
    }
    await chown(socket, 0, this.personGid);
    await chmod(socket, 0o660);
  }

  private async end(id: string): Promise<void> {
    const streamer = this.streamers.get(id);
    this.streamers.delete(id);
    if (streamer) {
      streamer.child.kill('SIGTERM');
      const timer = setTimeout(() => streamer.child.kill('SIGKILL'), 3000);
      await streamer.child;
      clearTimeout(timer);
    }
    await rm(this.branchDir(id), { recursive: true, force: true });
  }

  private async waitForSocket(socket: string, child: Streamer['child']): Promise<void> {
    const deadline = Date.now() + SOCKET_WAIT_MS;
    while (Date.now() < deadline) {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error('it exited');
      if ((await stat(socket).catch(() => null))?.isSocket()) return;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`no socket within ${SOCKET_WAIT_MS / 1000} s`);
  }
}

/** The branch root's host ids, no capabilities, none to gain, and gone when the helper goes. */
function dropPrivileges(id: number): string[] {
  return [
    'setpriv',
    `--reuid=${id}`,
    `--regid=${id}`,
    '--clear-groups',
    '--bounding-set=-all',
    '--inh-caps=-all',
    '--no-new-privs',
    '--pdeathsig=SIGKILL',
    '--',
  ];
}

/**
 * A desktop for persons at the branch's fixed size: no audio yet, and nothing
 * that reaches the host's files or devices (transfers, printing, gamepads,
 * webcam, commands) nor a second way in (sharing links, basic auth: the
 * controller checks every request before it reaches the socket).
 */
export function selkiesArgs(socket: string): string[] {
  const off = (flag: string) => [`--${flag}`, 'false'];
  return [
    '--unix-socket',
    socket,
    '--mode',
    'websockets',
    '--encoder',
    'jpeg',
    '--file-transfers',
    'none',
    ...['enable-basic-auth', 'enable-resize', 'audio-enabled', 'microphone-enabled', 'gamepad-enabled', 'webcam-enabled'].flatMap(off),
    ...['printing-enabled', 'command-enabled', 'enable-sharing', 'enable-collab', 'enable-shared', 'second-screen'].flatMap(off),
    ...['enable-player2', 'enable-player3', 'enable-player4', 'ui-sidebar-show-files', 'ui-sidebar-show-apps'].flatMap(off),
  ];
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-3).join(' / ') || 'no output';
}
