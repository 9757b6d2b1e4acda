// Commands inside a workspace, entered from the host PID of the container's init:
// forked workspaces are restored by CRIU and unknown to crun, so `crun exec`
// cannot reach them, but every workspace has an init process. grove-enter
// (host/launcher.ts) joins its cgroups, namespaces and root, keeps only the
// branch's capabilities, sets no_new_privs and loads the branch's seccomp
// filter, closes every descriptor of the helper's but stdio, and runs the
// command under env -i: the container's environment, never the helper's.
//  - run: no terminal, in a session of its own inside the branch (so what it
//    leaves running belongs to the branch); stdout, stderr and the exit code
//    come back whole. The deadline is enforced inside the container by
//    coreutils timeout(1), and the helper kills the whole process tree itself
//    if even that does not end it.
//  - open: a terminal session, held inside the branch (terminal-holder.ts):
//    its PTY and process tree are the branch's, so forks and checkpoints take
//    them along; the helper attaches through a relay and may attach again to
//    a copy of it in a fork's child (attach).
// Both belong to the connection that asked: when it goes away (at any moment,
// before it was answered included) its terminals are hung up and its runs killed.
// A terminal's copies in a fork's children are nobody's until attached.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { StringDecoder } from 'node:string_decoder';
import { descendants, isSameProcess } from '../host/proc.js';
import { frame, FrameReader, HOLDER, HOLDER_DIR, HOLDER_ID, RELAY, sizeFrame } from './terminal-holder.js';
import { HOLDER_MISSING_EXIT, LOG_BYTES, RUN, RUN_HOLDER, RUN_ID, RUNS_DIR } from './run-holder.js';
import type { Launcher } from '../host/launcher.js';
import { BASE_ENV } from '../host/oci-spec.js';
import type { DetachedRun, ExecResult } from '../protocol/entities.js';
import { GroveError } from '../protocol/wire.js';

const TIMEOUT_EXIT = 124; // coreutils timeout(1): the command got the TERM signal
// Ignoring TERM, it gets KILL 2 s later, sent to timeout's whole process group
// (timeout included, so grove-enter ends by SIGKILL too; 137 if timeout survived).
const TIMEOUT_KILLED_EXIT = 128 + 9;
const KILL_AFTER_S = 2;
/** How long after the in-container deadline the helper stops waiting and kills the tree. */
const BACKSTOP_MS = 10_000;
const MAX_OUTPUT = 16 << 20;
const DEFAULT_CWD = '/root'; // the OCI spec's process.cwd
const TERM_ENV = 'TERM=xterm-256color';
/** The environment of grove-enter, which runs (partly) on the host. */
const TOOL_ENV = { PATH: '/usr/sbin:/usr/bin:/sbin:/bin' };
/**
 * How long a stop may take to show. A fork can wait that long on a busy host (every fork waits while
 * another process is moved between cgroups); past it the process is taken as it is.
 */
const STOP_WAIT_MS = 5000;
/** Enough for any tree to stop level by level; a bound all the same, should some process never stop. */
const MAX_KILL_PASSES = 64;
/** Process states in which a task runs no code: stopped, traced, zombie, dead. */
const HALTED_STATES = new Set(['T', 't', 'Z', 'X']);
const CONTAINER_PATH = BASE_ENV.find((v) => v.startsWith('PATH=')) ?? `PATH=${TOOL_ENV.PATH}`;

/** The workspace to enter: its init's host PID, that process's start time if known (guards against pid reuse), its cgroups. */
export interface ExecTarget {
  pid: number;
  pidStart?: number | null;
  cgroups: readonly string[];
  /** What it starts may be merged by KSM (false in a sensitive workspace). */
  mergeable: boolean;
}

export interface SessionSink {
  output(session: string, data: string): void;
  exit(session: string, exitCode: number, signal: string | null): void;
}

interface Session {
  /** The relay into the holder's FIFOs (terminal-holder.ts). */
  relay: ChildProcess;
  owner: object;
  target: ExecTarget;
  /** The holder's id, the same in every copy of the branch. */
  holder: string;
  /** What runs in it, for people (the command line, shortened). */
  command: string;
  /** Hung up: its holder is ending, and a fork does not carry it. */
  hungUp: boolean;
}

export class ExecService {
  private readonly sessions = new Map<string, Session>();
  private nextSession = 1;
  private readonly runs = new Set<{ target: ExecTarget; id: string; command: string }>();
  /** Per owner (a connection), aborted when it goes away: what it started ends then. */
  private readonly lifetimes = new WeakMap<object, AbortController>();

  constructor(private readonly launcher: Launcher) {}

  /**
   * Runs a command to its end, held inside the branch (run-holder.ts) so a
   * fork takes it along; `owner` (a connection) going away ends it too (null: the helper's own).
   */
  async run(
    target: ExecTarget,
    req: { argv: string[]; env?: Record<string, string>; cwd?: string; stdin?: string; timeoutMs?: number },
    owner: object | null,
  ): Promise<ExecResult> {
    await checkTarget(target);
    const ownerGone = owner === null ? undefined : this.lifetime(owner).signal;
    ownerGone?.throwIfAborted(); // nothing waits from here to the spawn
    // timeout(1) runs the command in its own process group and signals the whole
    // group, so the command and what it started die inside the container.
    const command = req.timeoutMs ? ['timeout', `--kill-after=${KILL_AFTER_S}`, `${req.timeoutMs / 1000}`, ...req.argv] : req.argv;
    const id = `e${randomBytes(4).toString('hex')}`;
    const inBranch = ['env', '-i', ...envVars(req.env), ...literalCommand(command)];
    const held = this.enter(target, req.cwd ?? DEFAULT_CWD, true, ['env', '-i', CONTAINER_PATH, '/bin/sh', '-c', RUN, RUN_HOLDER, id]);
    const options = {
      input: req.stdin ?? '',
      deadlineMs: req.timeoutMs ? req.timeoutMs + KILL_AFTER_S * 1000 + BACKSTOP_MS : undefined,
      ownerGone,
    };
    const started = Date.now();
    const running = { target, id, command: req.argv.join(' ').slice(0, 80) };
    this.runs.add(running);
    let res = await runHeld(...held, inBranch, options).finally(() => this.runs.delete(running));
    // A branch that broke its Python (the holder's) can still be repaired through exec: the command then
    // runs as a child of grove-enter, outside the branch's tree, and a fork leaves it out.
    if (res.holderMissing) res = await runCollecting(...this.enter(target, req.cwd ?? DEFAULT_CWD, true, inBranch), options);
    const elapsed = Date.now() - started;
    const timedOut =
      req.timeoutMs !== undefined &&
      (res.killedByHelper ||
        (res.exitCode === TIMEOUT_EXIT && elapsed >= req.timeoutMs) ||
        ((res.exitCode === TIMEOUT_KILLED_EXIT || res.signal === 'SIGKILL') && elapsed >= req.timeoutMs + KILL_AFTER_S * 1000));
    return { exitCode: res.exitCode, signal: res.signal, stdout: res.stdout, stderr: res.stderr, timedOut };
  }

  /** The runs under way in a running branch (its init is `target`): each goes into a fork's children, detached. */
  runsIn(target: { pid: number; pidStart: number | null }): { id: string; command: string }[] {
    return [...this.runs].filter((r) => r.target.pid === target.pid && r.target.pidStart === target.pidStart).map(({ id, command }) => ({ id, command }));
  }

  /**
   * The runs detached in the branch: copies a fork or a rollback made of runs
   * under way, each going on without its caller (run-holder.ts); with `run`,
   * that one only, with the newest part of its output. What the branch wrote
   * there is read as the branch's: bounded, and what does not parse is left out.
   */
  async log(target: ExecTarget, run?: string): Promise<{ runs: DetachedRun[]; output: string | null }> {
    if (run !== undefined && !RUN_ID.test(run)) throw new GroveError('E_INVALID_PARAMS', `no run ${run}: a run's id is e and 8 hex digits`);
    const listed = await this.run(target, { argv: ['sh', '-c', LIST_DETACHED, run ?? 'e*'], timeoutMs: 30_000 }, null);
    const runs = parseDetached(listed.stdout);
    if (run === undefined) return { runs, output: null };
    if (runs.length === 0) throw new GroveError('E_NOT_FOUND', `no run ${run} detached in this branch (grove exec --log BRANCH lists them)`);
    const read = await this.run(target, { argv: ['sh', '-c', READ_LOG, run], timeoutMs: 30_000 }, null);
    return { runs, output: read.stdout };
  }

  /**
   * A terminal: a new one running `argv` (a login shell by default), or,
   * with `attach`, the holder of that id already in the branch (a terminal
   * of its source's, copied into it by a fork or a rollback), whose
   * scrollback comes first. Resolves once attached.
   */
  async open(
    target: ExecTarget,
    req: { argv?: string[]; env?: Record<string, string>; cols: number; rows: number; attach?: string },
    owner: object,
    sink: SessionSink,
  ): Promise<string> {
    await checkTarget(target);
    const ownerGone = this.lifetime(owner).signal;
    ownerGone.throwIfAborted();
    if (req.attach !== undefined && (req.argv !== undefined || req.env !== undefined))
      throw new GroveError('E_INVALID_PARAMS', 'a terminal attached to runs what it ran: give no command or environment');
    const holder = req.attach ?? `t${randomBytes(4).toString('hex')}`;
    if (!HOLDER_ID.test(holder)) throw new GroveError('E_INVALID_PARAMS', `no terminal ${holder}: a terminal's id is t and 8 hex digits`);
    const argv = req.argv ?? ['/bin/bash', '-l'];
    // Once started, the holder is hung up through a relay like any other, should its owner be gone by then.
    if (req.attach === undefined) await this.startHolder(target, holder, argv, req);
    const session = `s${this.nextSession++}`;
    const [file, args] = this.enter(target, DEFAULT_CWD, true, ['env', '-i', CONTAINER_PATH, '/bin/sh', '-c', RELAY, holder]);
    const relay = spawn(file, args, { env: { ...TOOL_ENV }, stdio: ['pipe', 'pipe', 'pipe'] });
    relay.stdin!.on('error', () => undefined); // a relay gone is told by its exit
    const entry: Session = {
      relay,
      owner,
      target,
      holder,
      command: req.attach === undefined ? argv.join(' ').slice(0, 80) : `attached ${holder}`,
      hungUp: false,
    };
    this.sessions.set(session, entry);
    const hangUpTerm = () => this.hangUp(entry);
    if (ownerGone.aborted) hangUpTerm();
    else ownerGone.addEventListener('abort', hangUpTerm, { once: true });
    return new Promise<string>((resolve, reject) => {
      let attached = false;
      let exitStatus: number | null = null;
      const text = new StringDecoder('utf8');
      const reader = new FrameReader((kind, payload) => {
        if (kind === 'A') {
          attached = true;
          resolve(session);
        } else if (attached && kind === 'o') sink.output(session, text.write(payload));
        else if (kind === 'x') {
          // The holder ended: the relay's reading half ends with it, its writing half waits for the helper.
          exitStatus = Number(payload.toString('latin1'));
          void killTree(relay.pid!);
        }
      });
      let stderr = '';
      relay.stderr!.on('data', (d: Buffer) => (stderr = (stderr + d.toString('utf8')).slice(-500)));
      relay.stdout!.on('data', (chunk: Buffer) => {
        try {
          reader.push(chunk);
        } catch (err) {
          stderr = (err as Error).message;
          void killTree(relay.pid!);
        }
      });
      relay.on('close', (code, signal) => {
        ownerGone.removeEventListener('abort', hangUpTerm);
        this.sessions.delete(session);
        if (!attached) return reject(new GroveError('E_NOT_FOUND', stderr.trim() || `terminal ${holder} could not be attached (exit ${code ?? signal})`));
        if (exitStatus === null) sink.exit(session, -1, `the terminal's holder went away${signal ? ` (its relay ended by ${signal})` : ''}`);
        else if (exitStatus < 0) sink.exit(session, 128 - exitStatus, `signal ${-exitStatus}`);
        else sink.exit(session, exitStatus, null);
      });
      relay.stdin!.write(sizeFrame(req.cols, req.rows));
      relay.stdin!.write(frame('a'));
    });
  }

  /** Starts the holder of a new terminal inside the branch: it returns once the holder runs, the branch's init its parent. */
  private async startHolder(
    target: ExecTarget,
    holder: string,
    argv: string[],
    req: { env?: Record<string, string>; cols: number; rows: number },
  ): Promise<void> {
    const command = ['python3', '-c', HOLDER, holder, String(req.cols), String(req.rows), ...literalCommand(argv)];
    const [file, args] = this.enter(target, DEFAULT_CWD, true, ['env', '-i', ...envVars(req.env), ...command]);
    const res = await runCollecting(file, args, { input: '', deadlineMs: 30_000, ownerGone: undefined });
    if (res.exitCode !== 0)
      throw new GroveError('E_HOST', `the terminal could not be started in the branch: ${res.stderr.trim().split('\n').at(-1) ?? `exit ${res.exitCode}`}`);
  }

  /** Hangs the terminal up as closing a real one would: its holder closes the PTY (SIGHUP to the session inside) and ends. */
  private hangUp(session: Session): void {
    session.hungUp = true;
    session.relay.stdin!.write(frame('h'));
  }

  /**
   * How to start a program inside the branch whose stdin or stdout the caller
   * joins to something on the host (a copy's tar, host/pipe-programs.ts): as
   * a run is started, in a session of its own, with the branch's PATH only,
   * and TOOL_ENV for grove-enter itself. End it with `end`, which takes what
   * it started with it.
   */
  async inBranchCommand(target: ExecTarget, argv: readonly string[]): Promise<{ command: [string, string[]]; env: NodeJS.ProcessEnv }> {
    await checkTarget(target);
    return { command: this.enter(target, '/', true, ['env', '-i', CONTAINER_PATH, ...literalCommand(argv)]), env: { ...TOOL_ENV } };
  }

  /** Ends a program started from inBranchCommand, and whatever it started. */
  end(child: ChildProcess): void {
    if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) void killTree(child.pid);
  }

  /** The terminals held in the branch (their holders' FIFOs are there), each attached or not; at most a hundred. */
  async terminals(target: ExecTarget): Promise<{ terminals: { id: string; attached: boolean }[] }> {
    const listed = await this.run(target, { argv: ['sh', '-c', LIST_TERMINALS], timeoutMs: 30_000 }, null);
    const attached = new Set(this.terminalsIn({ pid: target.pid, pidStart: target.pidStart ?? null }).map((t) => t.holder));
    const ids = listed.stdout.split('\n').filter((id) => HOLDER_ID.test(id));
    return { terminals: ids.map((id) => ({ id, attached: attached.has(id) })) };
  }

  /** The terminals attached in a running branch (its init is `target`), by their holders' ids. */
  terminalsIn(target: { pid: number; pidStart: number | null }): { holder: string; command: string }[] {
    return [...this.sessions.values()]
      .filter((s) => s.target.pid === target.pid && s.target.pidStart === target.pidStart && !s.hungUp)
      .map((s) => ({ holder: s.holder, command: s.command }));
  }

  write(session: string, owner: object, data: string): void {
    this.owned(session, owner).relay.stdin!.write(frame('i', Buffer.from(data, 'utf8')));
  }

  async resize(session: string, owner: object, cols: number, rows: number): Promise<void> {
    this.owned(session, owner).relay.stdin!.write(sizeFrame(cols, rows));
    return Promise.resolve();
  }

  close(session: string, owner: object): void {
    this.hangUp(this.owned(session, owner));
  }

  /** Ends every terminal and run of a connection (it went away), and any it asked for and has not got yet. */
  closeAll(owner: object): void {
    this.lifetime(owner).abort(new GroveError('E_CONFLICT', 'the connection that asked for this closed'));
  }

  /** Made at the owner's first request or at its close, whichever comes first, so a close is never missed. */
  private lifetime(owner: object): AbortController {
    let lifetime = this.lifetimes.get(owner);
    if (!lifetime) {
      lifetime = new AbortController();
      this.lifetimes.set(owner, lifetime);
    }
    return lifetime;
  }

  /** `command` inside the branch; `cwd` is resolved inside its root. */
  private enter(target: ExecTarget, cwd: string, setsid: boolean, command: readonly string[]): [string, string[]] {
    if (command.length === 0) throw new Error('empty command');
    if (!cwd.startsWith('/')) throw new GroveError('E_INVALID_PARAMS', `working directory must be absolute: ${cwd}`);
    return this.launcher.inBranch({ initPid: target.pid, cgroups: target.cgroups, cwd, setsid, mergeable: target.mergeable }, command);
  }

  private owned(session: string, owner: object): Session {
    const s = this.sessions.get(session);
    if (!s || s.owner !== owner) throw new GroveError('E_NOT_FOUND', `no terminal session ${session} on this connection`);
    return s;
  }
}

/** Each detached run named by the pattern $0 (a run's id, or e*): its id, exit status or `running`, and command, a line each. */
const LIST_DETACHED = [
  `cd ${RUNS_DIR} 2>/dev/null || exit 0`,
  'for run in $0; do [ -f "$run/detached" ] || continue',
  '  printf "%s %s %s\\n" "$run" "$(head -c 20 "$run/status" 2>/dev/null || echo running)" "$(head -c 300 "$run/command" | tr "\\n" " ")"',
  'done | head -n 100',
].join('\n');

/** The id of each terminal's holder in the branch, a line each. */
const LIST_TERMINALS = `cd ${HOLDER_DIR} 2>/dev/null || exit 0; for t in t*; do [ -p "$t/in" ] && echo "$t"; done | head -n 100`;

/** The newest LOG_BYTES of run $0's output: its log after the one before it. */
const READ_LOG = `cd ${RUNS_DIR}/"$0" && cat log.1 log 2>/dev/null | tail -c ${LOG_BYTES}`;

export function parseDetached(listing: string): DetachedRun[] {
  return listing.split('\n').flatMap((line) => {
    const m = /^(e[0-9a-f]{8}) (running|-?\d{1,4}) (.*)$/.exec(line);
    return m ? [{ id: m[1]!, command: m[3]!, exitStatus: m[2] === 'running' ? null : Number(m[2]) }] : [];
  });
}

/** Quotes one word for a POSIX shell: the shell reads it back as exactly `word`. */
export function shellQuote(word: string): string {
  if (word.includes('\0')) throw new GroveError('E_INVALID_PARAMS', 'NUL in argument');
  if (/^[A-Za-z0-9_@%+=:,./-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** A shell command line that runs exactly the argument vector `argv`. */
export function shellJoin(argv: readonly string[]): string {
  return argv.map(shellQuote).join(' ');
}

function envVars(env: Record<string, string> | undefined): string[] {
  const vars = [...BASE_ENV, TERM_ENV, ...Object.entries(env ?? {}).map(([k, v]) => `${k}=${v}`)];
  if (vars.some((v) => v.includes('\0'))) throw new GroveError('E_INVALID_PARAMS', 'NUL in environment');
  return vars;
}

/**
 * env(1) takes a leading NAME=VALUE word as an assignment, not a command: such
 * a command is started through a fixed `exec "$0" "$@"` instead (its words stay
 * separate arguments, never part of the script).
 */
function literalCommand(argv: readonly string[]): string[] {
  if (argv.length === 0) throw new GroveError('E_INVALID_PARAMS', 'empty command');
  return argv[0]!.includes('=') ? ['/bin/sh', '-c', 'exec "$0" "$@"', ...argv] : [...argv];
}

async function checkTarget(target: ExecTarget): Promise<void> {
  if (!Number.isInteger(target.pid) || target.pid <= 1) throw new GroveError('E_HOST', `bad workspace init pid ${target.pid}`);
  const alive =
    target.pidStart == null
      ? await readFile(`/proc/${target.pid}/stat`).then(
          () => true,
          () => false,
        )
      : await isSameProcess(target.pid, target.pidStart);
  if (!alive) throw new GroveError('E_CONFLICT', `workspace init (pid ${target.pid}) is gone`);
}

interface Collected {
  exitCode: number;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** The helper's backstop deadline passed, the output overflowed or the owner went away, and it killed the tree. */
  killedByHelper: boolean;
  /** A run's holder did not start: the command did not run. */
  holderMissing?: boolean;
}

interface RunOptions {
  input: string;
  /** The helper's backstop: past it, the tree is killed. */
  deadlineMs: number | undefined;
  /** Aborted when whoever asked went away: the tree is killed. */
  ownerGone: AbortSignal | undefined;
}

function runCollecting(file: string, args: string[], { input, deadlineMs, ownerGone }: RunOptions): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: { ...TOOL_ENV }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let killedByHelper = false;
    const killAll = (): void => {
      if (killedByHelper || child.pid === undefined) return;
      killedByHelper = true;
      void killTree(child.pid);
    };
    const collect = (into: Buffer[]) => (chunk: Buffer) => {
      if (size >= MAX_OUTPUT) return;
      const room = MAX_OUTPUT - size;
      into.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      size += Math.min(chunk.length, room);
      if (size >= MAX_OUTPUT) killAll();
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    child.stdin.on('error', () => {}); // the command need not read its input
    child.stdin.end(input);
    const timer = deadlineMs === undefined ? undefined : setTimeout(killAll, deadlineMs);
    ownerGone?.addEventListener('abort', killAll, { once: true });
    const settled = (): void => {
      clearTimeout(timer);
      ownerGone?.removeEventListener('abort', killAll);
    };
    child.on('error', (e) => {
      settled();
      reject(new GroveError('E_HOST', `grove-enter failed to start: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      settled();
      resolve({
        exitCode: code ?? -1,
        signal: signal ?? null,
        stdout: Buffer.concat(out).toString('utf8'),
        stderr: Buffer.concat(err).toString('utf8'),
        killedByHelper,
      });
    });
  });
}

/** How long a run's holder may take to end once told to kill its command; past it the helper stops waiting. */
const KILL_GRACE_MS = 5000;

/**
 * A run through its holder's relay (run-holder.ts): the command, the input
 * and its end as frames, then the command's stdout, stderr and exit status from the
 * holder's frames; the relay is ended once the status is in. Killing it
 * (deadline, overflow, owner gone) is the holder's to do, the command being
 * the branch's init's; a holder that does not end then is waited for no
 * longer. Without an exit status (the holder did not start), the relay's exit
 * and its stderr tell what happened.
 */
function runHeld(file: string, args: string[], command: string[], { input, deadlineMs, ownerGone }: RunOptions): Promise<Collected> {
  return new Promise((resolve, reject) => {
    const child = spawn(file, args, { env: { ...TOOL_ENV }, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let killedByHelper = false;
    let status: number | null = null;
    let giveUp: NodeJS.Timeout | undefined;
    const killAll = (): void => {
      if (killedByHelper) return;
      killedByHelper = true;
      child.stdin.write(frame('k'));
      giveUp = setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) void killTree(child.pid);
        child.stdout.destroy();
        child.stderr.destroy();
      }, KILL_GRACE_MS);
    };
    const collect = (into: Buffer[], chunk: Buffer) => {
      if (size >= MAX_OUTPUT) return;
      const room = MAX_OUTPUT - size;
      into.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      size += Math.min(chunk.length, room);
      if (size >= MAX_OUTPUT) killAll();
    };
    const reader = new FrameReader((kind, payload) => {
      if (kind === 'o') collect(out, payload);
      else if (kind === 'e') collect(err, payload);
      else if (kind === 'x') {
        status = Number(payload.toString('latin1'));
        child.stdin.end();
      }
    });
    child.stdout.on('data', (chunk: Buffer) => {
      try {
        reader.push(chunk);
      } catch (e) {
        collect(err, Buffer.from(`grove: ${(e as Error).message}\n`));
        killAll();
      }
    });
    child.stderr.on('data', (chunk: Buffer) => collect(err, chunk)); // the holder's or the relay's own errors, or grove-enter's
    child.stdin.on('error', () => {}); // a relay gone is told by its close
    child.stdin.write(frame('c', Buffer.from(JSON.stringify(command), 'utf8')));
    child.stdin.write(frame('i', Buffer.from(input, 'utf8')));
    child.stdin.write(frame('e'));
    const timer = deadlineMs === undefined ? undefined : setTimeout(killAll, deadlineMs);
    ownerGone?.addEventListener('abort', killAll, { once: true });
    const settled = (): void => {
      clearTimeout(timer);
      clearTimeout(giveUp);
      ownerGone?.removeEventListener('abort', killAll);
      child.stdin.end();
    };
    child.on('error', (e) => {
      settled();
      reject(new GroveError('E_HOST', `grove-enter failed to start: ${e.message}`));
    });
    child.on('close', (code, signal) => {
      settled();
      const ended =
        status === null || !Number.isInteger(status)
          ? { exitCode: code ?? -1, signal: signal ?? null }
          : status >= 0
            ? { exitCode: status, signal: null }
            : { exitCode: -1, signal: signalName(-status) };
      const holderMissing = status === null && code === HOLDER_MISSING_EXIT && !killedByHelper;
      resolve({ ...ended, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), killedByHelper, holderMissing });
    });
  });
}

function signalName(n: number): string {
  return Object.entries(os.constants.signals).find(([, value]) => value === n)?.[0] ?? `signal ${n}`;
}

/**
 * SIGKILLs `root` and every descendant (they live in the container's pid
 * namespace but have host pids too). Stops them first, and waits until they
 * are stopped, so none can fork away between the scan and the kill: a fork
 * under way when the stop is sent still completes, and its child shows up only
 * then. Each pass looks again below what it stopped until nothing new appears.
 */
async function killTree(root: number): Promise<void> {
  const seen = new Set<number>();
  for (let pass = 0; pass < MAX_KILL_PASSES; pass++) {
    const found = await descendants(root);
    found.add(root);
    const fresh = [...found].filter((p) => !seen.has(p));
    if (fresh.length === 0) break;
    for (const p of fresh) seen.add(p);
    await Promise.all(fresh.map(stop));
  }
  for (const p of seen) signal(p, 'SIGKILL');
}

/**
 * The stat file of `entry` under /proc (a pid, or PID/task/TID for one thread) from the field after comm on
 * (state, ppid, pgrp, session, tty_nr, …); empty for a gone process.
 */
async function statFields(entry: number | string): Promise<string[]> {
  const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
  // comm may contain spaces and parentheses: fields count from the last ')'.
  return stat ? stat.slice(stat.lastIndexOf(')') + 2).split(' ') : [];
}

/**
 * SIGSTOP, then waits until every thread of the process is stopped (or gone):
 * a thread in the middle of fork() still makes its child before the signal
 * takes it, and a look at the children before then would miss that child.
 */
async function stop(pid: number): Promise<void> {
  signal(pid, 'SIGSTOP');
  const giveUp = Date.now() + STOP_WAIT_MS;
  while (!(await allThreadsHalted(pid)) && Date.now() < giveUp) await new Promise((r) => setTimeout(r, 5));
}

async function allThreadsHalted(pid: number): Promise<boolean> {
  const threads = await readdir(`/proc/${pid}/task`).catch(() => [] as string[]); // gone: nothing left to stop
  for (const tid of threads) {
    const state = (await statFields(`${pid}/task/${tid}`))[0];
    if (state !== undefined && !HALTED_STATES.has(state)) return false;
  }
  return true;
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // already gone
  }
}
