// What changed between two branches' root filesystems ("from" a, "to" b).
//
// Finding the differences: one `rsync --dry-run` from b to a (what rsync would
// do to turn a into b), which walks both trees reading metadata only (so a whole
// desktop rootfs is compared without reading its files' bytes). rsync's
// quick check compares size and modification time, so:
//   - a file whose size differs is changed;
//   - a file with the same size but another mtime is read on both sides and
//     reported only if the bytes differ (a `touch` is not a change);
//   - a file rewritten with the same size AND the same mtime is missed (the
//     quick-check blind spot; --checksum would read every file of both trees).
// Permissions, ownership, atime, xattrs/ACLs and hard-link structure are not
// compared (no -p/-o/-g/-X/-A/-H): only content, symlink targets and type.
//
// What is reported (paths relative to the root, starting with '/'):
//   added    non-directories (files, symlinks, fifos, sockets, devices) only in b;
//            new directories are not listed, their contents are.
//   changed  non-directories in both trees whose content, symlink target or type
//            (file <-> symlink <-> special) differs.
//   removed  non-directories only in a, and directories only in a with a
//            trailing '/' (a removed directory is listed with all its contents,
//            so an emptied-then-removed directory is still visible).
//   A directory replaced by a non-directory (or the reverse) is both removed
//   (the old one) and added (the new one).
//   textDiffs  `diff -u` of added and changed regular files that are text on
//            both sides (no NUL in the first 8 KiB, valid UTF-8) and at most
//            maxTextBytes; at most maxFiles of them, then `truncated` is set.
//
// Safety: the trees belong to workspaces (untrusted, possibly running), and a
// branch may swap a folder for a link (renameat2 RENAME_EXCHANGE) while the
// helper walks it. rsync runs in a sandbox of its own (bubblewrap: a private
// mount namespace holding only the two trees, read-only, and /usr; no
// capability but reading), so a link it is raced into follows leads nowhere
// on the host. Every file the helper itself looks at or reads is opened with
// openat2(RESOLVE_IN_ROOT) (host/in-root.ts): inside its tree whatever the
// links say, never as the helper's controlling terminal, never blocking on a
// fifo; contents are copied into a private temp directory for diff(1).
// Names that are not valid UTF-8 are reported with U+FFFD and get no text diff.
import { mkdir, mkdtemp, realpath, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { kindInRoot, openFileInRoot } from '../host/in-root.js';
import { run } from '../host/run.js';
import type { TreeDiff } from '../protocol/diff.js';
import type { Noise } from './noise.js';
import { GroveError } from '../protocol/wire.js';

export type { TreeDiff } from '../protocol/diff.js';

/**
 * Paths never meaningful to a person comparing two branches, as rsync patterns
 * anchored at the root. They are skipped on both sides (never added, changed or
 * removed):
 *  - /proc /sys /dev /run: mount points of kernel and runtime filesystems; what
 *    is under them on disk is whatever the last run left behind.
 *  - /tmp/.X11-unix /tmp/.X*-lock /tmp/.ICE-unix: the X server's socket and lock
 *    of the desktop session, recreated at every start.
 *  - /var/log/grove-session.log: the session's own log (oci-spec.ts SESSION_LOG),
 *    rewritten by every run.
 *  - Chromium's caches (/root/.cache/grove-chromium is the disk cache of the
 *    profile session.sh uses, /root/.cache/chromium the default one), the
 *    compiled-shader and code caches inside the profile, and its Singleton*
 *    symlinks (host name and pid of the last run).
 */
export const DIFF_EXCLUDES: readonly string[] = [
  '/proc',
  '/sys',
  '/dev',
  '/run',
  '/tmp/.X11-unix',
  '/tmp/.X*-lock',
  '/tmp/.ICE-unix',
  '/var/log/grove-session.log',
  '/root/.cache/chromium',
  '/root/.cache/grove-chromium',
  '/root/.config/grove-chromium/Singleton*',
  '/root/.config/grove-chromium/**/Code Cache',
  '/root/.config/grove-chromium/**/GPUCache',
  '/root/.config/grove-chromium/**/DawnCache',
  '/root/.config/grove-chromium/GrShaderCache',
  '/root/.config/grove-chromium/ShaderCache',
  '/root/.config/grove-chromium/GraphiteDawnCache',
  '/root/.config/grove-chromium/component_crx_cache',
];

export const DEFAULT_MAX_TEXT_BYTES = 256 * 1024;
export const DEFAULT_MAX_FILES = 200;
/** How much of a file is searched for a NUL byte to call it binary. */
const BINARY_SNIFF_BYTES = 8 * 1024;

/**
 * rsync flags: -r recurse; -l copy symlinks as symlinks (compare targets, never
 * follow); -t times, so mtime is part of the quick check and visible in %i;
 * -D devices and specials (reported like files, and no "skipping non-regular
 * file" noise); -n dry run; --delete so entries only in a are listed
 * ("*deleting"); -8 pass non-ASCII names through raw (only control characters
 * and a backslash before '#' are escaped, as \#ooo); --out-format '%i %n': the
 * fixed-width 11-character itemize string, a space, then the name up to the end
 * of the line (names with newlines arrive escaped, so lines split safely).
 */
// --modify-window=-1: modification times compared to the nanosecond. To the
// second (rsync's default), a file edited within the second it was last
// written, to the same size, looked unchanged: a merge missed it.
const RSYNC_FLAGS = ['-r', '-l', '-t', '-D', '-n', '--delete', '-8', '--modify-window=-1', '--out-format=%i %n'];

interface Item {
  /** The 11-character itemize string, e.g. ">f.st......" or "*deleting  ". */
  flags: string;
  /** Relative to the root, without a leading '/'; a directory's ends with '/'. */
  name: string;
}

/**
 * `under`: only what is below this folder of both trees (a project's path),
 * when it is a folder in both; otherwise the whole trees. The paths reported
 * are from the roots either way. `noise`: what of it is left out (noise.ts).
 */
export async function diffTrees(
  a: string,
  b: string,
  opts: { maxTextBytes?: number; maxFiles?: number; under?: string; noise?: Noise } = {},
): Promise<TreeDiff> {
  const maxTextBytes = opts.maxTextBytes ?? DEFAULT_MAX_TEXT_BYTES;
  const maxFiles = opts.maxFiles ?? DEFAULT_MAX_FILES;
  const rootA = await checkRoot(a, 'from');
  const rootB = await checkRoot(b, 'to');
  const under = scanned(rootA, rootB, opts.under);

  // rsync anchors an exclude at the folder it walks: those below it, made relative to it.
  const excludes = DIFF_EXCLUDES.filter((p) => under === '' || p.startsWith(`${under}/`)).map((p) => p.slice(under.length));
  const args = [...RSYNC_FLAGS, ...excludes.map((p) => `--exclude=${p}`), `/to${under}/`, `/from${under}/`];
  const res = await run('bwrap', [...sandboxWith({ '/from': rootA, '/to': rootB }), '--', 'rsync', ...args], { allowFailure: true });
  if (res.exitCode !== 0 && !changedDuringScan(res.exitCode, res.stderr)) {
    const output = res.stderr.trim().split('\n').slice(-6).join('\n');
    throw new GroveError('E_HOST', `rsync (diff of ${rootA} and ${rootB}): exit ${res.exitCode}${output ? `: ${output}` : ''}`);
  }

  const added: string[] = [];
  const changed: string[] = [];
  const removed: string[] = [];
  /** Same size, other mtime: changed only if the bytes differ. */
  const maybeChanged: string[] = [];

  for (const item of parseItems(res.stdout)) {
    const { flags, name } = item;
    const rel = `${under}/${name}`;
    if (flags.startsWith('*deleting')) {
      removed.push(rel);
      continue;
    }
    const update = flags[0];
    const type = flags[1];
    // '.': nothing to transfer (attributes only, e.g. a directory's mtime).
    if (update === '.' || update === '*' || update === undefined) continue;
    const isNew = flags.slice(2) === '+++++++++';
    if (type === 'd') {
      // A new directory is not listed, but one replacing a non-directory removes it.
      if (isNew && kindInRoot(rootA, rel.slice(0, -1)) === 'other') removed.push(rel.slice(0, -1));
      continue;
    }
    if (isNew) {
      // rsync replaces a different type in place without a "*deleting" line.
      const before = kindInRoot(rootA, rel);
      if (before === 'other') changed.push(rel);
      else {
        if (before === 'dir') removed.push(`${rel}/`);
        added.push(rel);
      }
      continue;
    }
    if (type === 'f') {
      if (flags[3] === 's') changed.push(rel);
      else maybeChanged.push(rel);
    } else if (flags[2] === 'c') {
      // A symlink's target (or a device's numbers) differs; a 't' alone is not a change.
      changed.push(rel);
    }
  }

  for (const rel of maybeChanged) {
    if (!(await sameContent(rootA, rootB, rel))) changed.push(rel);
  }

  if (opts.noise) {
    const noise = opts.noise;
    for (const list of [added, changed, removed]) list.splice(0, list.length, ...(await noise.keep(list)));
  }
  added.sort(byCodeUnit);
  changed.sort(byCodeUnit);
  removed.sort(byCodeUnit);

  const { textDiffs, truncated } = await textDiffsOf(rootA, rootB, added, changed, maxTextBytes, maxFiles);
  return { added, changed, removed, textDiffs, truncated };
}

/**
 * Whether rsync failed only because a running branch changed under it: 24,
 * files vanished; 23 when every error is a folder that became a link (rsync
 * refuses to follow it: ELOOP) or went (ENOENT) between its look and its
 * opendir. The diff is then of what rsync saw.
 */
function changedDuringScan(exitCode: number, stderr: string): boolean {
  if (exitCode === 24) return true;
  if (exitCode !== 23) return false;
  const errors = stderr.split('\n').filter((l) => l.startsWith('rsync: ') || l.startsWith('rsync error: '));
  const raced = (l: string) => /failed: (Too many levels of symbolic links \(40\)|No such file or directory \(2\))$/.test(l);
  return errors.every((l) => l.startsWith('rsync error: some files/attrs were not transferred') || raced(l));
}

/**
 * bubblewrap's arguments for a sandbox holding only `trees` (read-only, at the
 * given places) and the host's /usr for the tools; its own pid, ipc, uts,
 * network and cgroup namespaces (no user namespace: the trees' files belong to
 * the branches' host ids), and of root's capabilities only reading.
 */
function sandboxWith(trees: Record<string, string>): string[] {
  return [
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/bin',
    '/bin',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    ...Object.entries(trees).flatMap(([at, tree]) => ['--ro-bind', tree, at]),
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-net',
    '--unshare-cgroup-try',
    '--die-with-parent',
    '--new-session',
    '--cap-drop',
    'ALL',
    '--cap-add',
    'CAP_DAC_READ_SEARCH',
  ];
}

/**
 * The folder to walk, '' for the roots: `under` when it and every folder
 * above it are folders, not links, in both trees. rsync follows the folder it
 * is given if it is a link: a branch that swaps one in after this look has it
 * walk whatever its sandbox holds there instead (the other tree, /usr), and
 * only names come of that: whoever reads the files reads them inside the trees.
 */
function scanned(rootA: string, rootB: string, under: string | undefined): string {
  if (under === undefined) return '';
  const folder = path.posix.normalize(under).replace(/\/+$/, '');
  if (folder === '') return '';
  if (!folder.startsWith('/') || folder.split('/').includes('..'))
    throw new GroveError('E_INVALID_PARAMS', `diff: ${JSON.stringify(under)} is not a folder's absolute path`);
  const folders = folder
    .split('/')
    .slice(1)
    .map((_, i, parts) => `/${parts.slice(0, i + 1).join('/')}`);
  return folders.every((f) => kindInRoot(rootA, f) === 'dir' && kindInRoot(rootB, f) === 'dir') ? folder : '';
}

async function checkRoot(dir: string, which: string): Promise<string> {
  if (!path.isAbsolute(dir)) {
    throw new GroveError('E_INVALID_PARAMS', `diff: the ${which} root must be an absolute path, got ${JSON.stringify(dir)}`);
  }
  let st;
  try {
    st = await stat(dir);
  } catch (err) {
    const why = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new GroveError('E_INVALID_PARAMS', `diff: the ${which} root ${dir} does not exist (${why})`);
  }
  if (!st.isDirectory()) throw new GroveError('E_INVALID_PARAMS', `diff: the ${which} root ${dir} is not a directory`);
  const real = await realpath(dir);
  return real === '/' ? '' : real;
}

/** Parses `%i %n` lines, undoing rsync's \#ooo escapes. */
function parseItems(stdout: string): Item[] {
  const items: Item[] = [];
  for (const line of stdout.split('\n')) {
    if (line.length < 13 || line[11] !== ' ') continue;
    const name = line.slice(12).replace(/\\#([0-7]{3})/g, (_m, oct: string) => String.fromCharCode(parseInt(oct, 8)));
    if (name === './' || name === '.') continue;
    items.push({ flags: line.slice(0, 11), name });
  }
  return items;
}

function byCodeUnit(x: string, y: string): number {
  return x < y ? -1 : x > y ? 1 : 0;
}

/** Whether a file has the same bytes in both trees (false if either cannot be read as a regular file). */
async function sameContent(rootA: string, rootB: string, rel: string): Promise<boolean> {
  const fa = await openFileInRoot(rootA, rel);
  const fb = fa && (await openFileInRoot(rootB, rel));
  try {
    if (!fa || !fb) return false;
    const [sa, sb] = await Promise.all([fa.stat(), fb.stat()]);
    if (sa.size !== sb.size) return false;
    const size = 1 << 20;
    const ba = Buffer.alloc(size);
    const bb = Buffer.alloc(size);
    for (;;) {
      const [ra, rb] = await Promise.all([fa.read(ba, 0, size, null), fb.read(bb, 0, size, null)]);
      if (ra.bytesRead !== rb.bytesRead) return false;
      if (ra.bytesRead === 0) return true;
      if (!ba.subarray(0, ra.bytesRead).equals(bb.subarray(0, rb.bytesRead))) return false;
    }
  } finally {
    await fa?.close();
    await fb?.close();
  }
}

/** The file's bytes if it is a regular file of at most maxBytes that is text; otherwise null. */
async function readText(root: string, rel: string, maxBytes: number): Promise<Buffer | null> {
  const fh = await openFileInRoot(root, rel);
  if (!fh) return null;
  try {
    const { size } = await fh.stat();
    if (size > maxBytes) return null;
    // Read one byte more than allowed, to notice a file that grew meanwhile.
    const buf = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, length, buf.length - length, null);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > maxBytes) return null;
    }
    const bytes = buf.subarray(0, length);
    if (bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0)) return null;
    try {
      new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    } catch {
      return null;
    }
    return bytes;
  } finally {
    await fh.close();
  }
}

interface Candidate {
  rel: string;
  /** null: the file is new (diffed against /dev/null). */
  before: Buffer | null;
  after: Buffer;
}

async function textDiffsOf(
  rootA: string,
  rootB: string,
  added: string[],
  changed: string[],
  maxTextBytes: number,
  maxFiles: number,
): Promise<{ textDiffs: TreeDiff['textDiffs']; truncated: boolean }> {
  const wanted = new Set(changed);
  const order = [...added, ...changed].sort(byCodeUnit);
  const candidates: Candidate[] = [];
  let truncated = false;
  for (const rel of order) {
    if (rel.includes('\uFFFD')) continue; // not a name we can open again
    const isChange = wanted.has(rel);
    const after = await readText(rootB, rel, maxTextBytes);
    if (!after || (!isChange && after.length === 0)) continue;
    const before = isChange ? await readText(rootA, rel, maxTextBytes) : null;
    if (isChange && !before) continue;
    if (candidates.length === maxFiles) {
      truncated = true;
      break;
    }
    candidates.push({ rel, before, after });
  }
  if (candidates.length === 0) return { textDiffs: [], truncated };
  return { textDiffs: await unifiedDiffs(candidates), truncated };
}

/**
 * `diff -u` of every candidate in one diff(1) run (a process per file would
 * cost a program start for each): copies of both sides go to a private temp directory as a/N and
 * b/N (so diff never opens a path inside the trees), `diff -r -u -N -a a b`
 * compares them all (-N: a missing a/N is an added file; -a: our text test is
 * the rule, not diff's), and the output is split at its "diff ... a/N b/N"
 * lines, which no unified-diff content line can look like (those start with
 * ' ', '+', '-', '@' or '\'); each file's two header lines are replaced by
 * the labels a/PATH and b/PATH, or /dev/null for a new file.
 */
async function unifiedDiffs(candidates: Candidate[]): Promise<TreeDiff['textDiffs']> {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'grove-diff-'));
  try {
    await mkdir(path.join(tmp, 'a'), { mode: 0o700 });
    await mkdir(path.join(tmp, 'b'), { mode: 0o700 });
    for (const [i, c] of candidates.entries()) {
      if (c.before) await writeFile(path.join(tmp, 'a', String(i)), c.before, { mode: 0o600 });
      await writeFile(path.join(tmp, 'b', String(i)), c.after, { mode: 0o600 });
    }
    const res = await run('diff', ['-r', '-u', '-N', '-a', '--', 'a', 'b'], { cwd: tmp, allowFailure: true });
    if (res.exitCode === 0) return [];
    if (res.exitCode !== 1) {
      throw new GroveError('E_HOST', `diff -r: exit ${res.exitCode}: ${res.stderr.trim().split('\n').slice(-6).join('\n')}`);
    }

    const textDiffs: TreeDiff['textDiffs'] = [];
    let current: { c: Candidate; lines: string[] } | null = null;
    const flush = () => {
      if (current) textDiffs.push({ path: current.c.rel, diff: `${current.lines.join('\n')}\n` });
    };
    const lines = res.stdout.split('\n');
    for (let n = 0; n < lines.length; n++) {
      const line = lines[n]!;
      const header = /^diff .* a\/(\d+) b\/(\d+)$/.exec(line);
      if (header) {
        flush();
        const c = candidates[Number(header[1])];
        if (!c || header[1] !== header[2]) throw new GroveError('E_INTERNAL', `diff -r: unexpected line ${JSON.stringify(line)}`);
        current = { c, lines: [c.before ? `--- a${c.rel}` : '--- /dev/null', `+++ b${c.rel}`] };
        n += 2; // the "--- a/N <time>" and "+++ b/N <time>" lines
        continue;
      }
      if (!current) throw new GroveError('E_INTERNAL', `diff -r: unexpected line ${JSON.stringify(line)}`);
      current.lines.push(line);
    }
    flush();
    return textDiffs.sort((x, y) => byCodeUnit(x.path, y.path));
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
