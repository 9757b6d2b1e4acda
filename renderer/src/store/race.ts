// Which branches race: siblings, as a fork into N makes them. The selected
// ones when they are siblings; else the focused branch's children; else the
// focused branch and its siblings.
import type { TreeDiff, Workspace } from '../../../main/src/api/contract.js';

export function racersOf(branches: readonly Workspace[], selection: readonly string[], focus: string | null): Workspace[] {
  const chosen = branches.filter((b) => selection.includes(b.id));
  if (chosen.length >= 2 && chosen.every((b) => b.parent !== null && b.parent === chosen[0]!.parent)) return chosen;
  const focused = branches.find((b) => b.id === focus);
  if (!focused) return [];
  const children = branches.filter((b) => b.parent === focused.id);
  if (children.length >= 2) return children;
  const siblings = focused.parent === null ? [] : branches.filter((b) => b.parent === focused.parent);
  return siblings.length >= 2 ? siblings : [];
}

/** Files every fork changes by design (its own name and identity): not what its agent did. */
const IDENTITY_FILES: ReadonlySet<string> = new Set(['/etc/hostname', '/etc/hosts', '/etc/machine-id']);

/** What a branch changed since it was forked, without the files that only say which branch it is. */
export function workDone(diff: TreeDiff): { path: string; kind: 'added' | 'changed' | 'removed' }[] {
  return [
    ...diff.added.map((path) => ({ path, kind: 'added' as const })),
    ...diff.changed.map((path) => ({ path, kind: 'changed' as const })),
    ...diff.removed.map((path) => ({ path, kind: 'removed' as const })),
  ].filter((f) => !IDENTITY_FILES.has(f.path));
}
