// Keeps the egress gate's process alive: spawns `daemon.ts --gate` as the
// unprivileged gate user (no capabilities, no supplementary groups, a clean
// environment, no descriptor of the helper's but its IPC channel), validates
// what it says, and starts it again when it dies, waiting longer after each
// quick death. A dead gate never takes the helper with it.
import { fork, type ChildProcess } from 'node:child_process';
import { FromGate, ToGate } from './gate-protocol.js';

export interface GateUser {
  name: string;
  uid: number;
  gid: number;
}

export interface GateChildOptions {
  user: GateUser;
  /** The gate's whole environment (besides what it needs to run at all). */
  env: Record<string, string>;
  /** Every valid message of the running gate process. */
  onMessage(m: FromGate): void;
  /** A gate process became ready (the first, or one started again after a death). */
  onReady(): void;
  /** The gate process died: whatever it was serving is gone. */
  onExit(): void;
  log(msg: string): void;
}

const READY_TIMEOUT_MS = 60_000; // generous: node starts slowly on a host busy restoring desktops, and only a hung gate waits it out
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
/** A gate that ran this long before it died is started again at once. */
const STABLE_MS = 60_000;

export class GateChild {
  private child: ChildProcess | null = null;
  private ready: Promise<void> | null = null;
  private backoffMs = MIN_BACKOFF_MS;
  private stopping = false;
  private restartTimer: NodeJS.Timeout | null = null;

  constructor(private readonly o: GateChildOptions) {}

  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  /** Starts the gate unless it runs; resolves once it is ready. */
  start(): Promise<void> {
    this.stopping = false;
    this.ready ??= this.spawn();
    return this.ready;
  }

  /** Sends a message to the running gate; false when there is none (it is starting again). */
  send(m: ToGate): boolean {
    const child = this.child;
    if (!child?.connected) return false;
    child.send(ToGate.parse(m));
    return true;
  }

  /** Ends the gate for good (the helper is stopping). */
  stop(): void {
    this.stopping = true;
    if (this.restartTimer) clearTimeout(this.restartTimer);
    this.child?.kill('SIGTERM');
    this.child = null;
    this.ready = null;
  }

  private spawn(): Promise<void> {
    const startedAt = Date.now();
    const passOn = ['ELECTRON_RUN_AS_NODE'].filter((k) => process.env[k] !== undefined).map((k) => [k, process.env[k]!]);
    const child = fork(process.argv[1]!, ['--gate'], {
      execArgv: process.execArgv,
      uid: this.o.user.uid,
      gid: this.o.user.gid,
      cwd: '/',
      env: { PATH: '/usr/bin:/bin', HOME: '/nonexistent', ...Object.fromEntries(passOn), ...this.o.env },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      serialization: 'json',
    });
    this.child = child;
    const ready = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`the egress gate did not start within ${READY_TIMEOUT_MS / 1000} s`)), READY_TIMEOUT_MS);
      child.on('message', (raw: unknown) => {
        const parsed = FromGate.safeParse(raw);
        if (!parsed.success) return this.o.log(`egress gate: ignored a malformed message: ${parsed.error.message}`);
        if (parsed.data.type === 'ready') {
          clearTimeout(timer);
          resolve();
          this.o.onReady();
        } else this.o.onMessage(parsed.data);
      });
      child.once('exit', (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`the egress gate exited (${signal ?? `code ${code}`}) before it was ready`));
      });
    });
    child.once('exit', (code, signal) => this.onExit(child, Date.now() - startedAt, signal ?? `code ${code}`));
    child.on('error', (err) => this.o.log(`egress gate: ${err.message}`));
    return ready;
  }

  private onExit(child: ChildProcess, ranMs: number, how: string): void {
    if (this.child !== child) return;
    this.child = null;
    this.ready = null;
    this.o.onExit();
    if (this.stopping) return;
    this.backoffMs = ranMs >= STABLE_MS ? MIN_BACKOFF_MS : Math.min(this.backoffMs * 2, MAX_BACKOFF_MS);
    this.o.log(`egress gate exited (${how}); branches reach nothing outside until it is back, in ${this.backoffMs} ms`);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = null;
      this.start().catch((err: Error) => this.o.log(`egress gate: ${err.message}`));
    }, this.backoffMs);
  }
}
