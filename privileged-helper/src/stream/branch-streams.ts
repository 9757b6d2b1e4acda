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
//
// It runs only while someone watches: the helper serves each running
// branch's stream socket (root:person group 0660) itself, starts the
// streamer at the first connection and relays to the streamer's own socket
// (in a 0700 directory of its uid's), and ends it when no connection has
// been open for idleMs. A new branch, each child of a fork, and a branch
// after a rollback cost nothing until viewed. A rollback ends the streamer of
// the old processes, which cuts its viewers off; the stream socket stays, and
// Selkies's client reconnects by itself to a streamer of the restored ones.
// A promotion leaves the socket and the streamer as they are (both are named
// by the branch's id). Nothing listens on a TCP port.
import { chown, mkdir, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { Forwarder, type DemandTarget } from '../host/forwarder.js';
import { GroveError } from '../protocol/wire.js';
import { startTime } from '../host/proc.js';
import { KeyedLock } from '../workspaces/keyed-lock.js';

/** The desktop's X display, on TCP in the branch's network namespace (image/desktop/session.sh: Xvnc :0 -listen tcp). */
const X_DISPLAY = '127.0.0.1:0';
const SOCKET_WAIT_MS = 30_000;

export interface StreamConfig {
  /** root:person group 0751; each branch's stream socket and its streamer's private directory in it. */
  dir: string;
  /** The selkies program of the venv build/host/selkies.sh makes. */
  selkies: string;
  /** native/grove-shm-shared.c, preloaded into the streamer. */
  shmShim: string;
  /** How long a streamer runs on after its last viewer left (GROVE_STREAM_IDLE_MS). */
  idleMs: number;
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

interface BranchStream {
  id: string;
  /** The stream socket the controller connects to, served while the branch runs. */
  socket: Forwarder | null;
  /** The branch process to show; null while it has none (a rollback between the old processes and the restored ones). */
  target: StreamTarget | null;
  streamer: Streamer | null;
  viewers: number;
  idle: NodeJS.Timeout | null;
}

export class BranchStreams {
  private readonly streams = new Map<string, BranchStream>();
  /** One change of a branch's stream at a time: a viewer's first connection, a rollback and an idle end may come at once. */
  private readonly turns = new KeyedLock();

  constructor(
    private readonly config: StreamConfig,
    private readonly personGid: number,
    private readonly log: (msg: string) => void,
  ) {}

  /** Where a branch's stream is served while it runs (by its id: a promotion does not move it). */
  socketPath(id: string): string {
    return path.join(this.config.dir, `${id}.sock`);
  }

  /** What the branch's streamer prints, kept while it runs. */
  private logPath(id: string): string {
    return path.join(this.streamerDir(id), 'selkies.log');
  }

  private streamerDir(id: string): string {
    return path.join(this.config.dir, id);
  }

  private streamerSocket(id: string): string {
    return path.join(this.streamerDir(id), 'selkies.sock');
  }

  /**
   * Serves the branch's stream socket for this branch process; its streamer
   * starts at the first viewer. A streamer of another process (before a
   * rollback) ends.
   */
  serve(target: StreamTarget): Promise<void> {
    return this.turns.run(target.id, async () => {
      const known = this.streams.get(target.id);
      if (known) {
        if (known.streamer && !sameProcess(known.streamer.target, target)) await this.endStreamer(known);
        known.target = target;
        return;
      }
      const stream: BranchStream = { id: target.id, socket: null, target, streamer: null, viewers: 0, idle: null };
      stream.socket = await Forwarder.unix(this.socketPath(target.id), this.personGid, this.onDemand(stream), this.log);
      this.streams.set(target.id, stream);
    });
  }

  /** The branch's processes end (a rollback restores others): its streamer ends and its viewers are cut off; its socket stays. */
  detach(id: string): Promise<void> {
    return this.turns.run(id, async () => {
      const stream = this.streams.get(id);
      if (!stream) return;
      stream.target = null;
      await this.endStreamer(stream);
    });
  }

  /** The branch stops running, or the helper: its socket closes and its streamer ends. */
  close(id: string): Promise<void> {
    return this.turns.run(id, async () => {
      const stream = this.streams.get(id);
      this.streams.delete(id);
      if (!stream) return;
      stream.target = null;
      if (stream.idle) clearTimeout(stream.idle);
      await stream.socket?.close();
      await this.endStreamer(stream);
    });
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.streams.keys()].map((id) => this.close(id)));
  }

  /** What the stream socket relays to: the streamer, started for the first viewer and ended idleMs after the last. */
  private onDemand(stream: BranchStream): DemandTarget {
    return {
      name: `the stream of branch ${stream.id}`,
      connect: () =>
        this.turns.run(stream.id, async () => {
          await this.ensureStreamer(stream);
          return net.connect(this.streamerSocket(stream.id));
        }),
      clients: (open) => {
        stream.viewers = open;
        if (stream.idle) clearTimeout(stream.idle);
        stream.idle = open > 0 ? null : setTimeout(() => void this.endIfUnwatched(stream), this.config.idleMs).unref();
      },
    };
  }

  private endIfUnwatched(stream: BranchStream): Promise<void> {
    return this.turns.run(stream.id, async () => {
      if (stream.viewers === 0) await this.endStreamer(stream);
    });
  }

  private async ensureStreamer(stream: BranchStream): Promise<void> {
    const target = stream.target;
    if (this.streams.get(stream.id) !== stream || target === null) throw new GroveError('E_CONFLICT', `branch ${stream.id} is not running`);
    const running = stream.streamer;
    if (running && running.child.exitCode === null && running.child.signalCode === null) return;
    await this.endStreamer(stream);
    if ((await startTime(target.pid)) !== target.pidStart) throw new GroveError('E_CONFLICT', `branch '${target.name}' is no longer running`);
    await this.startStreamer(stream, target);
  }

  private async startStreamer(stream: BranchStream, target: StreamTarget): Promise<void> {
    const dir = this.streamerDir(target.id);
    const home = path.join(dir, 'home');
    await rm(dir, { recursive: true, force: true });
    await mkdir(home, { recursive: true, mode: 0o700 });
    await chown(home, target.hostRoot, target.hostRoot);
    await chown(dir, target.hostRoot, target.hostRoot);
    const namespaces = [`--ipc=/proc/${target.pid}/ns/ipc`, `--net=/proc/${target.pid}/ns/net`];
    const socket = this.streamerSocket(target.id);
    const child = execa('nsenter', [...namespaces, '--', ...dropPrivileges(target.hostRoot), this.config.selkies, ...selkiesArgs(socket)], {
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
        LD_PRELOAD: this.config.shmShim,
      },
    });
    const streamer = { target, child };
    stream.streamer = streamer;
    const tail: string[] = [];
    child.stderr.on('data', (chunk: Buffer) => {
      tail.push(chunk.toString());
      if (tail.length > 20) tail.shift();
    });
    void child.then((result) => {
      if (stream.streamer === streamer)
        this.log(`stream of '${target.name}' ended (${result.signal ?? `exit ${result.exitCode}`}): ${lastLines(tail.join(''))}`);
    });
    try {
      await waitForSocket(socket, child);
    } catch (err) {
      await this.endStreamer(stream);
      throw new GroveError('E_HOST', `the stream of '${target.name}' did not start: ${(err as Error).message}; ${lastLines(tail.join(''))}`);
    }
  }

  private async endStreamer(stream: BranchStream): Promise<void> {
    const streamer = stream.streamer;
    stream.streamer = null;
    if (streamer) {
      streamer.child.kill('SIGTERM');
      const timer = setTimeout(() => streamer.child.kill('SIGKILL'), 3000);
      await streamer.child;
      clearTimeout(timer);
    }
    await rm(this.streamerDir(stream.id), { recursive: true, force: true });
  }
}

function sameProcess(a: StreamTarget, b: StreamTarget): boolean {
  return a.pid === b.pid && a.pidStart === b.pidStart;
}

async function waitForSocket(socket: string, child: Streamer['child']): Promise<void> {
  const deadline = Date.now() + SOCKET_WAIT_MS;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) throw new Error('it exited');
    if ((await stat(socket).catch(() => null))?.isSocket()) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`no socket within ${SOCKET_WAIT_MS / 1000} s`);
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

/** The branch's display size (the image's session.sh starts Xvnc at it). */
const DESKTOP_SIZE = { width: 1280, height: 800 };

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
    // The server's own size, which its client scales to fit the page, keeping
    // the aspect; the desktop is never resized under an agent's coordinates.
    '--manual-width',
    String(DESKTOP_SIZE.width),
    '--manual-height',
    String(DESKTOP_SIZE.height),
    ...['enable-basic-auth', 'enable-resize', 'audio-enabled', 'microphone-enabled', 'gamepad-enabled', 'webcam-enabled'].flatMap(off),
    ...['printing-enabled', 'command-enabled', 'enable-sharing', 'enable-collab', 'enable-shared', 'second-screen'].flatMap(off),
    ...['enable-player2', 'enable-player3', 'enable-player4', 'ui-sidebar-show-files', 'ui-sidebar-show-apps'].flatMap(off),
  ];
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-3).join(' / ') || 'no output';
}
