// A patch (git format-patch's text) taken apart for a review: the files it
// touches, and how many of its lines a view shows at once.

/** A view shows at most this many lines of a patch; the count of the rest is told. */
export const PATCH_LINES_SHOWN = 4000;

/** The paths a patch touches, in its order ('a/x b/y' as written when a file was renamed or its name is ambiguous). */
export function filesOfPatch(patch: string): string[] {
  const files: string[] = [];
  for (const line of patch.split('\n')) {
    if (!line.startsWith('diff --git ')) continue;
    const names = line.slice('diff --git '.length);
    const same = /^a\/(.+) b\/\1$/.exec(names);
    files.push(same ? same[1]! : names);
  }
  return files;
}

export function shownLines(patch: string): { lines: string[]; more: number } {
  const lines = patch.split('\n');
  if (lines.at(-1) === '') lines.pop();
  return { lines: lines.slice(0, PATCH_LINES_SHOWN), more: Math.max(0, lines.length - PATCH_LINES_SHOWN) };
}
