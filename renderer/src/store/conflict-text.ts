// A conflicting file as the helper shows it (git merge-file's diff3 markers:
// the target's lines, '||||||| fork point' and the base's, '=======' and the
// source's), taken apart into what both sides agree on and each conflicting
// hunk's three versions, for the side-by-side view. Only markers that carry
// the merge's own labels count: a file of the branch may hold lines that look
// like markers, and those stay text.

export type Segment =
  | { kind: 'same'; lines: string[] }
  /** base: null when the text has no fork point's part (git's plain markers). */
  | { kind: 'conflict'; target: string[]; base: string[] | null; source: string[] };

export interface MarkedText {
  segments: Segment[];
  /** The text ended inside a conflict: the helper cut it short. */
  cut: boolean;
}

const BASE_LABEL = 'fork point';

export function parseMarkedText(text: string, labels: { target: string; source: string }): MarkedText {
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const segments: Segment[] = [];
  let same: string[] = [];
  let hunk: { target: string[]; base: string[] | null; source: string[] } | null = null;
  let part: 'target' | 'base' | 'source' = 'target';
  for (const line of lines) {
    if (hunk === null) {
      if (line === `<<<<<<< ${labels.target}`) {
        if (same.length > 0) segments.push({ kind: 'same', lines: same });
        same = [];
        hunk = { target: [], base: null, source: [] };
        part = 'target';
      } else same.push(line);
      continue;
    }
    if (part === 'target' && line === `||||||| ${BASE_LABEL}`) {
      hunk.base = [];
      part = 'base';
    } else if (part !== 'source' && line === '=======') part = 'source';
    else if (part === 'source' && line === `>>>>>>> ${labels.source}`) {
      segments.push({ kind: 'conflict', ...hunk });
      hunk = null;
    } else if (part === 'base') hunk.base!.push(line);
    else hunk[part].push(line);
  }
  if (hunk) segments.push({ kind: 'conflict', ...hunk });
  if (same.length > 0) segments.push({ kind: 'same', lines: same });
  return { segments, cut: hunk !== null };
}

/** How many lines of agreed text a side-by-side view shows around each conflict; the rest is folded. */
export const CONTEXT_LINES = 3;

/**
 * The lines of an agreed segment worth showing: its first ones when a
 * conflict comes before it, its last ones when one comes after it; how many
 * lines are folded between them.
 */
export function contextOf(lines: string[], conflictBefore: boolean, conflictAfter: boolean): (string | { folded: number })[] {
  const head = conflictBefore ? lines.slice(0, CONTEXT_LINES) : [];
  const tail = conflictAfter ? lines.slice(Math.max(head.length, lines.length - CONTEXT_LINES)) : [];
  const folded = lines.length - head.length - tail.length;
  return folded > 0 ? [...head, { folded }, ...tail] : [...head, ...tail];
}
