// A caller's files on the host, as the caller sees them: what they are, how
// big, and a tar stream of them, every program run with the caller's own
// credentials (host/as-caller.ts), so the helper reads nothing on a client's
// behalf that the client could not read itself.
import path from 'node:path';
import { GroveError } from '../protocol/wire.js';
import { asCaller, type Caller } from './as-caller.js';
import { pipePrograms } from './pipe-programs.js';
import { run } from './run.js';

export interface CallerPath {
  /** The path with every link resolved, as the caller resolves it. */
  real: string;
  kind: 'directory' | 'file';
}

/** Where `p` really is and what it is, as the caller sees it; a clear error if they cannot see it, or it is neither a file nor a folder. */
export async function callerPath(caller: Caller, p: string): Promise<CallerPath> {
  const [file, args] = await asCaller(caller, ['stat', '--dereference', '--format', '%F', '--', p]);
  const stat = await run(file, args, { allowFailure: true });
  if (stat.exitCode !== 0) throw new GroveError('E_NOT_FOUND', `${p}: ${lastLine(stat.stderr) || 'not found'}`);
  const kind = stat.stdout.trim();
  if (kind !== 'directory' && kind !== 'regular file' && kind !== 'regular empty file') {
    throw new GroveError('E_INVALID_PARAMS', `${p} is a ${kind}: only files and folders are copied`);
  }
  const [rfile, rargs] = await asCaller(caller, ['realpath', '--canonicalize-existing', '--', p]);
  const real = (await run(rfile, rargs)).stdout.trim();
  return { real, kind: kind === 'directory' ? 'directory' : 'file' };
}

/**
 * The size of the tar callerTarCommand makes of it, as the caller: what a
 * copy moves and its progress counts (the files' bytes, a 512-byte header for
 * each entry, padding). GNU tar writing to /dev/null reads no file's data.
 */
export async function callerBytes(caller: Caller, p: CallerPath): Promise<number> {
  const [file, args] = await asCaller(caller, ['tar', '--create', '--totals', ...tarOf(p, '/dev/null')]);
  const res = await run(file, args, { allowFailure: true });
  const bytes = /^Total bytes written: (\d+)/m.exec(res.stderr)?.[1];
  if (res.exitCode !== 0 || bytes === undefined) throw new GroveError('E_HOST', `could not measure ${p.real}: ${lastLine(res.stderr)}`);
  return Number(bytes);
}

/** How to make a tar of the caller's file or folder on stdout, as the caller. */
export async function callerTarCommand(caller: Caller, p: CallerPath): Promise<[string, string[]]> {
  return asCaller(caller, ['tar', '--create', ...tarOf(p, '-')]);
}

/** tar's arguments for a tar of `p` in `archive`, its one top-level entry named after it. */
function tarOf(p: CallerPath, archive: string): string[] {
  return ['--file', archive, '--directory', path.dirname(p.real), '--', path.basename(p.real)];
}

/** Copies the caller's file or folder into `dir` (the helper's own, under the pool), as `dir/NAME`; read as the caller, written by root without CAP_MKNOD. */
export async function stageFromCaller(caller: Caller, p: CallerPath, dir: string): Promise<string> {
  const from = await callerTarCommand(caller, p);
  const to = await asCaller({ uid: 0 }, ['tar', '--extract', '--no-same-owner', '--file', '-', '--directory', dir]);
  await pipePrograms({ from: { command: from, name: `reading ${p.real}` }, to: { command: to, name: 'staging it' } });
  return path.join(dir, path.basename(p.real));
}

function lastLine(text: string): string {
  return text.trim().split('\n').at(-1) ?? '';
}
