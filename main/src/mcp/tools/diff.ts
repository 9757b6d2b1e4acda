// diff: what a branch changed in its files, against its parent or another branch.
import type { TreeDiff } from '../../../../privileged-helper/src/protocol/diff.js';
import { bounded, firstItems } from '../bounded.js';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

const MAX_PATHS = 200;
const MAX_DIFF_CHARS = 60_000;

export const diffTool = defineTool({
  name: 'diff',
  title: 'Diff two branches',
  description: `Files added, changed and removed in a branch against its parent (or another branch), with unified diffs of small text files (the first ${MAX_PATHS} paths of each kind; diffs cut at ${MAX_DIFF_CHARS} characters in all).`,
  input: { branch: Branch, other: Branch.optional().describe('the branch to compare with (default: its parent)') },
  annotations: { readOnlyHint: true },
  async run(args, h) {
    const d = await h.request('branch.diff', { workspace: args.branch, other: args.other });
    const lists = { added: firstItems(d.added, MAX_PATHS), changed: firstItems(d.changed, MAX_PATHS), removed: firstItems(d.removed, MAX_PATHS) };
    const diffs = bounded(d.textDiffs.map((t) => t.diff).join('\n'), MAX_DIFF_CHARS);
    return textResult(`${summary(d)}\n${pathLines(lists)}\n${diffs.text}`, {
      added: lists.added.items,
      changed: lists.changed.items,
      removed: lists.removed.items,
      counts: { added: d.added.length, changed: d.changed.length, removed: d.removed.length },
      diffs: diffs.text,
      cut: diffs.cut || d.truncated || Object.values(lists).some((l) => l.more > 0),
    });
  },
});

function summary(d: TreeDiff): string {
  return `${d.added.length} added, ${d.changed.length} changed, ${d.removed.length} removed${d.truncated ? ' (some text diffs left out)' : ''}`;
}

function pathLines(lists: Record<'added' | 'changed' | 'removed', { items: string[]; more: number }>): string {
  const mark = { added: '+', changed: '~', removed: '-' } as const;
  return (Object.keys(mark) as (keyof typeof mark)[])
    .flatMap((kind) => [...lists[kind].items.map((p) => `${mark[kind]} ${p}`), ...(lists[kind].more ? [`${mark[kind]} … ${lists[kind].more} more`] : [])])
    .join('\n');
}
