// Two running programs joined by the helper: what one writes is what the other
// reads (a copy's tar on the host and its tar in a branch), with the helper in
// between only to count the bytes for progress. Node's pipe pauses the reader
// while the writer is behind, so nothing is buffered beyond a chunk or two.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { GroveError } from '../protocol/wire.js';

/** How much of each program's stderr is kept for the error: its end, where tar says what went wrong. */
const STDERR_TAIL = 16 << 10;

/** One end: the program, what it is called in an error, and how to end it (and what it started) early. */
export interface PipeEnd {
  command: readonly [string, readonly string[]];
  name: string;
  /** Its whole environment (default: the helper's). */
  env?: NodeJS.ProcessEnv;
  end?: (child: ChildProcess) => void;
}

export interface PipeEnds {
  /** What writes the stream (its stdout). */
  from: PipeEnd;
  /** What reads it (its stdin). */
  to: PipeEnd;
  /** The bytes so far, as they pass. */
  onBytes?: (total: number) => void;
  /** Ends both (whoever asked went away). */
  signal?: AbortSignal;
}

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * Exit codes by which the scripts at either end (files/file-copy.ts) say the
 * request cannot be done, in a last stderr line that starts "grove: ".
 */
export const SAID_INVALID = 3;
export const SAID_NOT_FOUND = 4;

/**
 * Resolves with the bytes that went through once both ended well; throws the
 * failure that caused the other's: the writer's, unless it only died because
 * its reader had stopped reading (SIGPIPE).
 */
export async function pipePrograms(ends: PipeEnds): Promise<number> {
  // Both are started, and watched, in one turn of the event loop: a program
  // that ends before its exit is watched is never seen to end, and the output
  // of one that ends before anything reads it is thrown away by Node.
  const writer = start(ends.from, ['ignore', 'pipe', 'pipe']);
  const reader = start(ends.to, ['pipe', 'ignore', 'pipe']);
  const exits = [exited(writer), exited(reader)] as const;
  let bytes = 0;
  writer.stdout!.on('data', (chunk: Buffer) => {
    bytes += chunk.length;
    ends.onBytes?.(bytes);
  });
  reader.stdin!.on('error', () => undefined); // EPIPE once the reader ended first: its own exit says why
  // A reader that ends first stops the writer: its output, read by nobody, would otherwise fill the pipe and
  // block it for ever. Closing our end gives it SIGPIPE, as a shell's pipe would.
  let readerFirst = false;
  reader.on('exit', () => {
    readerFirst = writer.exitCode === null && writer.signalCode === null;
    writer.stdout!.destroy();
  });
  writer.stdout!.pipe(reader.stdin!);
  const endBoth = () => {
    endOne(ends.from, writer);
    endOne(ends.to, reader);
  };
  ends.signal?.addEventListener('abort', endBoth, { once: true });
  try {
    const [wrote, read] = await Promise.all(exits);
    ends.signal?.throwIfAborted();
    // A writer that failed because its reader had stopped reading is not the cause; the reader then decides.
    const writerFailedFirst = !ok(wrote) && !readerFirst && !brokenPipe(wrote);
    if (writerFailedFirst) throw failure(ends.from.name, wrote);
    if (!ok(read)) throw failure(ends.to.name, read);
    if (!ok(wrote) && !readerFirst) throw failure(ends.from.name, wrote);
    return bytes;
  } finally {
    ends.signal?.removeEventListener('abort', endBoth);
  }
}

function start(end: PipeEnd, stdio: StdioOptions): ChildProcess {
  const [file, args] = end.command;
  return spawn(file, [...args], { stdio, env: end.env ?? process.env });
}

function endOne(end: PipeEnd, child: ChildProcess): void {
  if (end.end) end.end(child);
  else child.kill('SIGKILL');
}

function ok(e: Exit): boolean {
  return e.code === 0 && e.signal === null;
}

/**
 * Ended by writing to a pipe nobody reads any more: killed by SIGPIPE (or a
 * wrapper relaying it, 128 + 13), or, where SIGPIPE is ignored as Node leaves
 * it for its children, failing with EPIPE (ECONNRESET: Node's stdio pipes
 * are socket pairs) and saying so.
 */
function brokenPipe(e: Exit): boolean {
  return e.signal === 'SIGPIPE' || e.code === 141 || /Broken pipe|Connection reset by peer/.test(e.stderr);
}

function failure(name: string, e: Exit): GroveError {
  const lines = e.stderr.trim().split('\n');
  const said = lines.at(-1)?.startsWith('grove: ') ? lines.at(-1)!.slice('grove: '.length) : null;
  if (said && e.code === SAID_INVALID) return new GroveError('E_INVALID_PARAMS', said);
  if (said && e.code === SAID_NOT_FOUND) return new GroveError('E_NOT_FOUND', said);
  const how = e.signal ? `killed by ${e.signal}` : `exit ${e.code}`;
  const told = lines.slice(-6).join('; ');
  return new GroveError('E_HOST', `${name} failed (${how})${told ? `: ${told}` : ''}`);
}

function exited(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    let stderr = '';
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (s: string) => {
      stderr = (stderr + s).slice(-STDERR_TAIL);
    });
    child.on('error', (err) => resolve({ code: -1, signal: null, stderr: `could not start: ${err.message}` }));
    child.on('close', (code, signal) => resolve({ code, signal, stderr }));
  });
}
