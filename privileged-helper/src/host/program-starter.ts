// The helper's side of grove-spawn (native/grove-spawn.c), the small process
// that starts the helper's programs: Node starting one itself holds the
// helper's main thread while it forks the whole helper, and a
// fork's child waits on several (docs/fork-profile.md). Requests and replies
// are frames over grove-spawn's stdin and stdout; its format is described in
// the C file. grove-spawn is started on the first request and again on the
// first after it died; requests in flight when it dies fail.
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import type { Socket } from 'node:net';
import { constants } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import { GroveError } from '../protocol/wire.js';

export interface ProgramRequest {
  file: string;
  /** argv[1..]: grove-spawn's argv[0] is the file, as Node's. */
  args: readonly string[];
  /** The program's whole environment. */
  env: Record<string, string | undefined>;
  cwd?: string;
  /** Opened read-only and given to the program as its fd 3. */
  fd3Path?: string;
  /** Written to its stdin (otherwise stdin is /dev/null). */
  input?: string;
  /** SIGTERM after this long, SIGKILL 5 s later. */
  timeoutMs?: number;
  /** Called with each line of its stdout and of its stderr, as they come. */
  onLine?: (line: string) => void;
}

export interface ProgramOutcome {
  /** -1 when a signal ended it or it did not start. */
  exitCode: number;
  /** The signal's name when one ended it. */
  signal: string | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  /** Why it could not start (e.g. "ENOENT (No such file or directory)"), or null. */
  startFailure: string | null;
}

const enum Kind {
  Stdout = 1,
  Stderr = 2,
  Exited = 3,
}

/**
 * What is kept of each of a program's streams: past it, the rest is dropped.
 * Some programs print what a branch controls (its X server's keymap, its
 * processes' names), and the helper runs many at once, so no stream may cost
 * it more than this; nothing the helper reads from a tool's output is near it.
 */
export const MAX_OUTPUT_BYTES = 16 * 1024 * 1024;
/** A line longer than this is handed to onLine in pieces, so a stream without newlines is never held whole. */
export const MAX_LINE_CHARS = 64 * 1024;

class Collected {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private partial = '';
  /** A character whose bytes came in two chunks is decoded once it is whole. */
  private readonly decoder = new StringDecoder('utf8');

  constructor(private readonly onLine: ((line: string) => void) | undefined) {}

  add(chunk: Buffer): void {
    if (this.bytes < MAX_OUTPUT_BYTES) this.chunks.push(chunk.subarray(0, MAX_OUTPUT_BYTES - this.bytes));
    this.bytes += chunk.length;
    if (!this.onLine) return;
    const lines = (this.partial + this.decoder.write(chunk)).split('\n');
    this.partial = lines.pop() ?? '';
    for (const line of lines) this.onLine(line);
    while (this.partial.length > MAX_LINE_CHARS) {
      this.onLine(this.partial.slice(0, MAX_LINE_CHARS));
      this.partial = this.partial.slice(MAX_LINE_CHARS);
    }
  }

  /** All of it, without one final newline (as execa's stripFinalNewline). */
  end(): string {
    if (this.partial) this.onLine?.(this.partial);
    return Buffer.concat(this.chunks)
      .toString('utf8')
      .replace(/\r?\n$/, '');
  }
}

interface InFlight {
  stdout: Collected;
  stderr: Collected;
  resolve(outcome: ProgramOutcome): void;
  reject(err: Error): void;
}

type Spawner = ChildProcessByStdio<Writable, Readable, null>;

export class ProgramStarter {
  private child: Spawner | null = null;
  private readonly inFlight = new Map<number, InFlight>();
  private nextId = 1;
  private received: Buffer = Buffer.alloc(0);

  constructor(private readonly binary: string) {}

  /** grove-spawn's pid while it runs (it belongs in the helper's cgroups: host/detach.ts). */
  get pid(): number | null {
    return this.child?.pid ?? null;
  }

  start(req: ProgramRequest): Promise<ProgramOutcome> {
    const child = this.running();
    const id = this.nextId++;
    const frame = encodeRequest(id, req);
    return new Promise<ProgramOutcome>((resolve, reject) => {
      this.inFlight.set(id, { stdout: new Collected(req.onLine), stderr: new Collected(req.onLine), resolve, reject });
      this.holdOpen(true);
      child.stdin.write(frame);
    });
  }

  private running(): Spawner {
    if (this.child) return this.child;
    const child = spawn(this.binary, [], { stdio: ['pipe', 'pipe', 'inherit'] });
    this.child = child;
    this.received = Buffer.alloc(0);
    child.stdout.on('data', (chunk: Buffer) => this.receive(chunk));
    child.stdin.on('error', () => undefined); // it died: its 'exit' fails what was in flight
    child.on('error', (err) => this.lost(child, `${this.binary} could not start: ${err.message} (run build/host/setup.sh)`));
    child.on('exit', (code, signal) => this.lost(child, `${this.binary} (which starts the helper's programs) exited: ${signal ?? `code ${code}`}`));
    // An idle grove-spawn keeps no process alive: a command-line run of the helper's code ends when its work does
    // (its pipes are let go with the last program in flight: holdOpen).
    child.unref();
    return child;
  }

  /** Keeps the event loop alive while a program runs, and only then. */
  private holdOpen(busy: boolean): void {
    // A child's pipes are sockets (libuv's socketpairs), which can be unreferenced.
    for (const pipe of this.child ? [this.child.stdin as Socket, this.child.stdout as Socket] : []) {
      if (busy) pipe.ref();
      else pipe.unref();
    }
  }

  private lost(child: Spawner, why: string): void {
    if (this.child !== child) return;
    this.child = null;
    const failed = [...this.inFlight.values()];
    this.inFlight.clear();
    for (const run of failed) run.reject(new GroveError('E_HOST', why));
  }

  private receive(chunk: Buffer): void {
    this.received = this.received.length ? Buffer.concat([this.received, chunk]) : chunk;
    let at = 0;
    while (this.received.length - at >= 4) {
      const length = this.received.readUInt32LE(at);
      if (this.received.length - at - 4 < length) break;
      this.handle(this.received.subarray(at + 4, at + 4 + length));
      at += 4 + length;
    }
    this.received = this.received.subarray(at);
  }

  private handle(body: Buffer): void {
    const id = body.readUInt32LE(0);
    const run = this.inFlight.get(id);
    if (!run) return;
    const kind = body.readUInt8(4);
    const payload = body.subarray(5);
    if (kind === Kind.Stdout) return run.stdout.add(payload);
    if (kind === Kind.Stderr) return run.stderr.add(payload);
    if (kind !== Kind.Exited) return;
    this.inFlight.delete(id);
    if (this.inFlight.size === 0) this.holdOpen(false);
    const signal = payload.readInt32LE(4);
    const startFailure = payload.subarray(9).toString('utf8');
    run.resolve({
      exitCode: payload.readInt32LE(0),
      signal: signal ? signalName(signal) : null,
      stdout: run.stdout.end(),
      stderr: run.stderr.end(),
      timedOut: payload.readUInt8(8) === 1,
      startFailure: startFailure || null,
    });
  }
}

function signalName(signal: number): string {
  return Object.entries(constants.signals).find(([, n]) => n === signal)?.[0] ?? `signal ${signal}`;
}

function encodeRequest(id: number, req: ProgramRequest): Buffer {
  const env = Object.entries(req.env)
    .filter((e): e is [string, string] => e[1] !== undefined)
    .map(([k, v]) => `${k}=${v}`);
  const strings = [req.file, req.cwd ?? '', req.fd3Path ?? '', req.file, ...req.args, ...env];
  if (strings.some((s) => s.includes('\0'))) throw new GroveError('E_INVALID_PARAMS', `a program's argument or environment holds a NUL byte: ${req.file}`);
  const packed = Buffer.from(strings.map((s) => `${s}\0`).join(''), 'utf8');
  const input = Buffer.from(req.input ?? '', 'utf8');
  const head = Buffer.alloc(28);
  head.writeUInt32LE(24 + packed.length + input.length, 0);
  head.writeUInt32LE(id, 4);
  head.writeUInt32LE(req.timeoutMs ?? 0, 8);
  head.writeUInt32LE(req.input === undefined ? 0 : 1, 12);
  head.writeUInt32LE(1 + req.args.length, 16);
  head.writeUInt32LE(env.length, 20);
  head.writeUInt32LE(packed.length, 24);
  return Buffer.concat([head, packed, input]);
}
