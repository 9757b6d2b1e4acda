// A merge of branches into a live branch (branches/merge.ts): what it asks for,
// and what it did or would do, file by file, with every conflict's two sides.
import { z } from 'zod';
import { BranchPath, Id, WorkspaceRef } from './names.js';

/** Where a failure may be injected (tests): after the target's checkpoint, after the files are written. */
export const MergeStage = z.enum(['checkpoint', 'write']);
export type MergeStage = z.infer<typeof MergeStage>;

export const MAX_MERGE_SOURCES = 16;

export const MergeRequest = z.strictObject({
  /** The branch merged into: a live branch. */
  workspace: WorkspaceRef,
  sources: z.array(WorkspaceRef).min(1).max(MAX_MERGE_SOURCES),
  /** Only say what would be written, and what conflicts; write nothing. */
  dryRun: z.boolean().optional(),
  /** Every file of the branch, not only those under its project's path. */
  all: z.boolean().optional(),
  /** Settles a conflicting file: the whole file as the target has it ('target') or as a source has it (its name or id). */
  take: z
    .array(z.strictObject({ path: BranchPath, side: z.union([z.literal('target'), WorkspaceRef]) }))
    .max(10_000)
    .optional(),
});
export type MergeRequest = z.infer<typeof MergeRequest>;

/** One side of a conflicting file: what it is there. */
export const MergeSide = z.strictObject({
  kind: z.enum(['file', 'link', 'none', 'other']),
  bytes: z.number().int().nullable(),
  /** sha256 of a file's bytes, a link's target: to tell two binaries apart. */
  sha256: z.string().nullable(),
  /** A link's target, or what an 'other' is (a folder, a fifo, a file too large). */
  detail: z.string().nullable(),
});
export type MergeSide = z.infer<typeof MergeSide>;

export const MergeConflict = z.strictObject({
  path: z.string(),
  /** The source (by name) whose change conflicts with the target's. */
  source: z.string(),
  /**
   * text: both changed the same lines; edit-delete: one deleted what the
   * other changed; binary: both changed a file that is not text; kind: both
   * changed it into different kinds of thing (a file and a link…); special:
   * the source's is neither file nor link (a socket, a fifo, a folder, a file
   * over the size limit), which a merge never writes: take the target's.
   */
  kind: z.enum(['text', 'edit-delete', 'binary', 'kind', 'special']),
  target: MergeSide,
  sourceSide: MergeSide,
  /**
   * For text: the file with git's conflict markers around each conflicting
   * hunk, diff3 style (the target's lines, '||||||| fork point' and the
   * base's, '=======' and the source's), cut at 64 KiB; null once the
   * conflicts before it showed 4 MiB.
   */
  hunks: z.string().nullable(),
});
export type MergeConflict = z.infer<typeof MergeConflict>;

export const MergeChange = z.strictObject({
  path: z.string(),
  source: z.string(),
  action: z.enum(['write', 'delete']),
  /** source: only the source changed it; merged: both did, git merged them; taken: a conflict settled by --take. */
  how: z.enum(['source', 'merged', 'taken']),
});
export type MergeChange = z.infer<typeof MergeChange>;

export const MergeResult = z.strictObject({
  target: Id,
  sources: z.array(z.strictObject({ id: Id, name: z.string(), base: z.string() })),
  /** The path merged under ('/' with all). */
  scope: z.string(),
  dryRun: z.boolean(),
  /** Whether the changes were written (false: a dry run, or conflicts left unsettled). */
  merged: z.boolean(),
  /** The checkpoint of the target taken before writing ("before merging …"): a rollback to it undoes the merge. */
  version: Id.nullable(),
  changes: z.array(MergeChange),
  conflicts: z.array(MergeConflict),
  ms: z.number(),
});
export type MergeResult = z.infer<typeof MergeResult>;
