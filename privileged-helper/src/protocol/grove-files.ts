// Where Grove's own files are (package.json, the image recipes, the CLI's
// launcher, the renderer's build, the compiled programs), for the helper and
// its clients alike. The same module runs from its TypeScript source (vitest,
// tsx), from the compiled programs in dist/ (build/compile.sh) and from the
// Electron package's bundles, each at another depth: counting ../ from a
// module would hold for one of them only. The root is the nearest directory
// above this module whose package.json is Grove's.
import { readFileSync } from 'node:fs';
import path from 'node:path';

let root: string | undefined;

/** The root of Grove's files: the checkout (or what the Electron package carries in its place). */
export function groveRoot(): string {
  root ??= rootAbove(import.meta.dirname);
  return root;
}

/** A file of Grove's by its path from the root, e.g. 'main/bin/grove'. */
export function groveFile(relative: string): string {
  return path.join(groveRoot(), relative);
}

/** Where build/compile.sh puts the program whose source is `source` (from the root, e.g. 'privileged-helper/src/daemon.ts'). */
export function compiledProgram(source: string): string {
  return groveFile(path.join('dist', source.replace(/\.ts$/, '.js')));
}

function rootAbove(start: string): string {
  for (let dir = start; ; dir = path.dirname(dir)) {
    if (isGrovePackage(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`Grove's files are missing: no package.json named "grove" above ${start}`);
  }
}

function isGrovePackage(file: string): boolean {
  try {
    return (JSON.parse(readFileSync(file, 'utf8')) as { name?: unknown }).name === 'grove';
  } catch {
    return false;
  }
}
