// The one place the helper runs system tools to their end: argument arrays
// only (never through a shell), started by grove-spawn
// (host/program-starter.ts), and a failure becomes an E_HOST error that says
// which tool failed and what it printed. (What the helper talks to while it
// runs, an exec session's process or the kernel tier's holder, it starts
// itself: exec/exec-service.ts, host/share-holder.ts.)
import { groveSpawnPath } from '../tool-paths.js';
import { GroveError } from '../protocol/wire.js';
import { ProgramStarter } from './program-starter.js';

export interface RunOptions {
  input?: string;
  /** Added to the helper's own environment. */
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
  /** Resolve with the failed result instead of throwing. */
  allowFailure?: boolean;
  /** Called with each line of its output, stdout's and stderr's (for progress). */
  onLine?: (line: string) => void;
  /** A file the program gets open (read-only) as its fd 3. */
  fd3Path?: string;
}

export interface RunResult {
  /** -1 when a signal ended it or it did not start. */
  exitCode: number;
  /** The signal that ended it, by name. */
  signal: string | null;
  stdout: string;
  stderr: string;
}

let starter: ProgramStarter | null = null;

/** The process that starts the helper's programs (one per helper process, from GROVE_SPAWN or the cache). */
export function programStarter(): ProgramStarter {
  starter ??= new ProgramStarter(groveSpawnPath(process.env));
  return starter;
}

export async function run(file: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const res = await programStarter().start({
    file,
    args,
    env: { ...process.env, ...opts.env },
    cwd: opts.cwd,
    fd3Path: opts.fd3Path,
    input: opts.input,
    timeoutMs: opts.timeoutMs,
    onLine: opts.onLine,
  });
  // A program that could not start says why where its own words would be.
  const result = {
    exitCode: res.exitCode,
    signal: res.signal,
    stdout: res.stdout,
    stderr: res.startFailure ? `could not start: ${res.startFailure}` : res.stderr,
  };
  if (result.exitCode !== 0 && !opts.allowFailure) {
    const why = res.timedOut ? 'timed out' : res.signal ? `killed by ${res.signal}` : res.startFailure ? null : `exit ${result.exitCode}`;
    const output = (result.stderr || result.stdout).trim().split('\n').slice(-6).join('\n');
    throw new GroveError('E_HOST', `${file} ${args.slice(0, 4).join(' ')}: ${[why, output].filter(Boolean).join(': ')}`);
  }
  return result;
}
