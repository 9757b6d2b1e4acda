// Files in and out of a running branch as bytes in the protocol (base64), for
// agents that have no host path to share with the helper: the file is written
// and read inside the branch (coreutils there, as exec runs them), so its
// path is resolved in the branch's own root and nothing on the host is
// touched. Both directions are bounded by MAX_TRANSFER_BYTES.
import type { ExecService, ExecTarget } from '../exec/exec-service.js';
import { MAX_TRANSFER_BYTES } from '../protocol/desktop.js';
import { GroveError } from '../protocol/wire.js';

const TIMEOUT_MS = 60_000;
const NOT_A_FILE = 3;
const TOO_LARGE = 4;

/** Writes stdin (base64) into "$1", replacing it (its folders made if missing), and prints the size written. */
const UPLOAD_SH = `mkdir -p -- "$(dirname -- "$1")" && base64 -d > "$1" && stat -c %s -- "$1"`;

/** Prints "$1" as base64 if it is a regular file of at most MAX_TRANSFER_BYTES; a file growing meanwhile is cut one byte past that. */
const DOWNLOAD_SH = `[ -f "$1" ] || { echo "$1 is not a file in the branch" >&2; exit ${NOT_A_FILE}; }
size=$(stat -L -c %s -- "$1") || exit 1
[ "$size" -le ${MAX_TRANSFER_BYTES} ] || { echo "$1 is $size bytes: a download is at most ${MAX_TRANSFER_BYTES}" >&2; exit ${TOO_LARGE}; }
head -c ${MAX_TRANSFER_BYTES + 1} -- "$1" | base64 -w 0`;

export async function uploadFile(
  exec: ExecService,
  target: ExecTarget,
  p: { path: string; data: string },
  owner: object,
): Promise<{ path: string; bytes: number }> {
  const res = await exec.run(target, { argv: ['sh', '-c', UPLOAD_SH, 'upload', p.path], stdin: p.data, timeoutMs: TIMEOUT_MS }, owner);
  if (res.exitCode !== 0)
    throw new GroveError('E_CONFLICT', `could not write ${p.path} in the branch: ${firstLine(res.stderr) || `exit code ${res.exitCode}`}`);
  return { path: p.path, bytes: Number(res.stdout.trim()) };
}

export async function downloadFile(
  exec: ExecService,
  target: ExecTarget,
  p: { path: string },
  owner: object,
): Promise<{ path: string; bytes: number; data: string }> {
  const res = await exec.run(target, { argv: ['sh', '-c', DOWNLOAD_SH, 'download', p.path], timeoutMs: TIMEOUT_MS }, owner);
  if (res.exitCode === NOT_A_FILE) throw new GroveError('E_NOT_FOUND', firstLine(res.stderr));
  if (res.exitCode === TOO_LARGE) throw new GroveError('E_TOO_LARGE', firstLine(res.stderr));
  if (res.exitCode !== 0) throw new GroveError('E_HOST', `could not read ${p.path} in the branch: ${firstLine(res.stderr) || `exit code ${res.exitCode}`}`);
  const bytes = Buffer.from(res.stdout, 'base64');
  if (bytes.length > MAX_TRANSFER_BYTES) throw new GroveError('E_TOO_LARGE', `${p.path} grew past ${MAX_TRANSFER_BYTES} bytes while it was read`);
  // Re-encoded: what the branch printed is passed on only as the bytes it decoded to.
  return { path: p.path, bytes: bytes.length, data: bytes.toString('base64') };
}

function firstLine(text: string): string {
  return text.trim().split('\n')[0]!.slice(0, 500);
}
