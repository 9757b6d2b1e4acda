// What a merge writes, file by file: for each path a source changed since its
// fork point with the target's line, the base, the target and the source are
// read (inside each tree, host/in-root.ts) and compared. Only the source
// changed it: the source's is taken. Both did: text is merged by git
// (files/three-way.ts); anything else is a conflict, unless --take settles
// it. With several sources, each is merged into what the ones before it made
// of the target.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { kindInRoot, openFileInRoot, readLinkInRoot } from '../host/in-root.js';
import type { MergeChange, MergeConflict, MergeSide } from '../protocol/merge.js';
import { GroveError } from '../protocol/wire.js';
import { mergeText } from '../files/three-way.js';
import { GROVE_OWN_FILES } from './noise.js';

/** A file larger than this is not read into the helper: both sides changing it is a conflict, one side changing it an error. */
export const MAX_MERGE_FILE_BYTES = 64 * 2 ** 20;
/** How much of a conflicting file's marked text a conflict carries, and all conflicts together (the reply stays far below its bound). */
const HUNKS_SHOWN_BYTES = 64 * 1024;
const ALL_HUNKS_SHOWN_BYTES = 4 * 2 ** 20;
/**
 * What one merge may take on: the paths its sources changed, and the bytes of
 * the files it writes (the plan holds them in the helper until they are
 * written). A branch chooses both; past either, the merge is refused before
 * anything is written.
 */
export const MAX_MERGE_PATHS = 50_000;
export const MAX_MERGE_WRITE_BYTES = 512 * 2 ** 20;
/** How much of a file is searched for a NUL byte to call it binary (git's rule). */
const BINARY_SNIFF_BYTES = 8000;

export type Entry =
  | { kind: 'none' }
  | { kind: 'file'; bytes: Buffer; executable: boolean }
  | { kind: 'link'; target: string }
  /** Something not merged: a folder, a fifo or device, a file over the limit. */
  | { kind: 'other'; what: string };

/** What is at `rel` in the tree at `root`, read inside it. */
export async function readEntry(root: string, rel: string): Promise<Entry> {
  const fh = await openFileInRoot(root, rel);
  if (fh) {
    try {
      const st = await fh.stat();
      if (st.size > MAX_MERGE_FILE_BYTES) return { kind: 'other', what: `a file over ${MAX_MERGE_FILE_BYTES >> 20} MiB` };
      const bytes = await fh.readFile();
      if (bytes.length > MAX_MERGE_FILE_BYTES) return { kind: 'other', what: `a file over ${MAX_MERGE_FILE_BYTES >> 20} MiB` };
      return { kind: 'file', bytes, executable: (st.mode & 0o100) !== 0 };
    } finally {
      await fh.close();
    }
  }
  const target = readLinkInRoot(root, rel);
  if (target !== null) return { kind: 'link', target };
  const kind = kindInRoot(root, rel);
  return kind === 'none' ? { kind: 'none' } : { kind: 'other', what: kind === 'dir' ? 'a folder' : 'neither a file nor a link' };
}

function sameEntry(a: Entry, b: Entry): boolean {
  if (a.kind === 'none' || b.kind === 'none') return a.kind === b.kind;
  if (a.kind === 'file' && b.kind === 'file') return a.executable === b.executable && a.bytes.equals(b.bytes);
  if (a.kind === 'link' && b.kind === 'link') return a.target === b.target;
  return false; // 'other' is never read, so never known to be the same
}

function isText(e: Entry): e is Extract<Entry, { kind: 'file' }> {
  return e.kind === 'file' && !e.bytes.subarray(0, BINARY_SNIFF_BYTES).includes(0);
}

export function describeSide(e: Entry): MergeSide {
  switch (e.kind) {
    case 'none':
      return { kind: 'none', bytes: null, sha256: null, detail: null };
    case 'file':
      return { kind: 'file', bytes: e.bytes.length, sha256: sha256(e.bytes), detail: e.executable ? 'executable' : null };
    case 'link':
      return { kind: 'link', bytes: null, sha256: sha256(Buffer.from(e.target)), detail: e.target };
    case 'other':
      return { kind: 'other', bytes: null, sha256: null, detail: e.what };
  }
}

function sha256(b: Buffer): string {
  return createHash('sha256').update(b).digest('hex');
}

/** A path to merge: inside the scope, not Grove's own, a name the helper can name again. */
export function mergeable(rel: string, scope: string): boolean {
  // A folder's removal ('/a/b/', diff.ts) is not merged: its files' removals are.
  if (rel.endsWith('/') || rel.includes('\uFFFD') || rel.includes('\n') || path.posix.normalize(rel) !== rel) return false;
  if (GROVE_OWN_FILES.has(rel)) return false;
  return scope === '/' || rel.startsWith(`${scope}/`);
}

export interface Trees {
  base: string;
  target: string;
  source: string;
}

/** Who is merged, for labels and --take. */
export interface Sides {
  target: { name: string };
  source: { id: string; name: string };
}

/** A merge under way: what each path will be in the target, once every source is merged. */
export class MergePlan {
  /** The target's path as it will be written (only paths that change). */
  readonly planned = new Map<string, Entry>();
  /** What each changed path is in the target now: what an undo writes back. */
  readonly original = new Map<string, Entry>();
  readonly conflicts: MergeConflict[] = [];
  /** Each changed path's change, in the order it was last planned. */
  private readonly changed = new Map<string, MergeChange>();
  /** Bytes of marked text the conflicts carry so far. */
  private hunksShown = 0;
  private pathsSeen = 0;
  private plannedBytes = 0;

  /** `takes`: path → 'target', or the id of the source whose side settles it. */
  constructor(
    private readonly takes: ReadonlyMap<string, string>,
    private readonly bounds = { paths: MAX_MERGE_PATHS, writeBytes: MAX_MERGE_WRITE_BYTES },
  ) {}

  get changes(): MergeChange[] {
    return [...this.changed.values()];
  }

  /** Merges one path a source changed into the plan. */
  async mergePath(rel: string, trees: Trees, sides: Sides): Promise<void> {
    if (++this.pathsSeen > this.bounds.paths) {
      throw new GroveError(
        'E_INVALID_PARAMS',
        `the sources changed more than ${this.bounds.paths} paths: merge a narrower --scope, or bring the project home with grove export`,
      );
    }
    const [base, source] = await Promise.all([readEntry(trees.base, rel), readEntry(trees.source, rel)]);
    if (sameEntry(base, source)) return; // touched, not changed
    const target = await this.current(rel, trees.target);
    if (sameEntry(target, source)) return;
    const take = this.takes.get(rel);
    if (take === sides.source.id) return this.plan(rel, source, sides, 'taken');
    if (take !== undefined) return; // the target's side, or another source's: this source's change is not taken
    const conflict = (kind: MergeConflict['kind'], hunks: string | null = null) =>
      this.conflicts.push({ path: rel, source: sides.source.name, kind, target: describeSide(target), sourceSide: describeSide(source), hunks });
    // A socket, fifo or device (a running desktop's), a folder where a file was, a file over the limit: never written.
    if (source.kind === 'other') return void conflict('special');
    if (sameEntry(target, base)) return this.plan(rel, source, sides, 'source');
    if (target.kind === 'none' || source.kind === 'none') return void conflict('edit-delete');
    if (target.kind !== source.kind) return void conflict('kind');
    if (!isText(target) || !isText(source) || (base.kind !== 'none' && !isText(base))) return void conflict(target.kind === 'file' ? 'binary' : 'kind');
    const merged = await mergeText(
      { base: base.kind === 'file' ? base.bytes : Buffer.alloc(0), target: target.bytes, source: source.bytes },
      { target: sides.target.name, source: sides.source.name },
    );
    if (merged.conflicts > 0) return void conflict('text', this.shown(merged.text));
    this.plan(rel, { kind: 'file', bytes: merged.text, executable: source.executable }, sides, 'merged');
  }

  /** The start of a conflicting file's marked text, while the conflicts' budget lasts (then none: the conflict is still listed). */
  private shown(text: Buffer): string | null {
    const part = text.subarray(0, Math.min(HUNKS_SHOWN_BYTES, ALL_HUNKS_SHOWN_BYTES - this.hunksShown));
    if (part.length === 0) return null;
    this.hunksShown += part.length;
    return part.toString('utf8');
  }

  /** The path in the target as the sources merged so far left it. */
  private async current(rel: string, targetRoot: string): Promise<Entry> {
    const planned = this.planned.get(rel);
    if (planned) return planned;
    const now = await readEntry(targetRoot, rel);
    this.original.set(rel, now);
    return now;
  }

  private plan(rel: string, entry: Entry, sides: Sides, how: MergeChange['how']): void {
    if (entry.kind === 'other') throw new GroveError('E_PRECONDITION', `${rel} in '${sides.source.name}' is ${entry.what}: it cannot be merged`);
    this.plannedBytes += bytesOf(entry) - bytesOf(this.planned.get(rel));
    if (this.plannedBytes > this.bounds.writeBytes) {
      throw new GroveError(
        'E_INVALID_PARAMS',
        `the merge would write more than ${mib(this.bounds.writeBytes)} MiB of files: merge a narrower --scope, or bring the project home with grove export`,
      );
    }
    this.planned.set(rel, entry);
    const action = entry.kind === 'none' ? 'delete' : 'write';
    this.changed.delete(rel); // a later source's change of the path comes after the others
    this.changed.set(rel, { path: rel, source: sides.source.name, action, how });
  }
}

function mib(bytes: number): string {
  return (bytes / 2 ** 20).toFixed(bytes < 2 ** 20 ? 2 : 0);
}

function bytesOf(entry: Entry | undefined): number {
  return entry?.kind === 'file' ? entry.bytes.length : 0;
}
