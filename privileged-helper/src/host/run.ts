// The one place the helper starts system tools: argument arrays only (execa
// never goes through a shell), and a failure becomes an E_HOST error that says
// which tool failed and what it printed.
import { execa, type Options } from 'execa';
import { GroveError } from '../protocol/wire.js';

export interface RunOptions {
  input?: string;
  env?: Record<string, string>;
  cwd?: string;
  timeoutMs?: number;
  /** Resolve with the failed result instead of throwing. */
  allowFailure?: boolean;
  /** Called with each line of combined output (for progress). */
  onLine?: (line: string) => void;
}

export interface RunResult {
  exitCode: number;
  stdout: string;
  stderr: string;
}

export async function run(file: string, args: readonly string[], opts: RunOptions = {}): Promise<RunResult> {
  const options: Options = {
    reject: false,
    stripFinalNewline: true,
    input: opts.input,
    env: opts.env,
    cwd: opts.cwd,
    timeout: opts.timeoutMs,
    stdin: opts.input === undefined ? 'ignore' : undefined,
    all: opts.onLine !== undefined,
    buffer: true,
  };
  const child = execa(file, args, options);
  if (opts.onLine) streamLines(child.all, opts.onLine);
  const res = await child;
  const result = {
    exitCode: typeof res.exitCode === 'number' ? res.exitCode : -1,
    stdout: String(res.stdout ?? ''),
    stderr: String(res.stderr ?? ''),
  };
  if (result.exitCode !== 0 && !opts.allowFailure) {
    const why = res.timedOut ? 'timed out' : res.failed && res.exitCode === undefined ? res.shortMessage : `exit ${result.exitCode}`;
    const output = (result.stderr || result.stdout).trim().split('\n').slice(-6).join('\n');
    throw new GroveError('E_HOST', `${file} ${args.slice(0, 4).join(' ')}: ${why}${output ? `: ${output}` : ''}`);
  }
  return result;
}

function streamLines(stream: NodeJS.ReadableStream | undefined, onLine: (line: string) => void): void {
  if (!stream) return;
  let rest = '';
  stream.on('data', (chunk: Buffer) => {
    const lines = (rest + chunk.toString('utf8')).split('\n');
    rest = lines.pop() ?? '';
    for (const line of lines) onLine(line);
  });
  stream.on('end', () => rest && onLine(rest));
}
