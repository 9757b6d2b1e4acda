// The difference between two branches' root filesystems, as the helper reports
// it. One definition: branches/diff.ts returns this type, clients validate with it.
import { z } from 'zod';

/** A path relative to the branch's root, starting with '/'; a directory's ends with '/'. */
const RootPath = z.string().startsWith('/');

export const TextDiff = z.strictObject({
  path: RootPath,
  /** A unified diff (`diff -u`), labelled a/PATH and b/PATH (/dev/null for a side that does not exist). */
  diff: z.string(),
});
export type TextDiff = z.infer<typeof TextDiff>;

export const TreeDiff = z.strictObject({
  /** Files, symlinks and special files that exist only in the "to" tree (no directories). */
  added: z.array(RootPath),
  /** Non-directories present in both trees whose content, target or type differs. */
  changed: z.array(RootPath),
  /** Non-directories and directories (trailing '/') that exist only in the "from" tree. */
  removed: z.array(RootPath),
  /** Unified diffs of the added and changed files that are small UTF-8 text files. */
  textDiffs: z.array(TextDiff),
  /** True when text diffs were left out because of the file-count cap. */
  truncated: z.boolean(),
});
export type TreeDiff = z.infer<typeof TreeDiff>;
