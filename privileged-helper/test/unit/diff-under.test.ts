// diffTrees limited to one folder of both trees (a merge's project path):
// paths still from the roots, the excludes below that folder still applied,
// and the whole trees when the folder is a link in either.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { diffTrees } from '../../src/branches/diff.js';

let dir: string;
const tree = (name: string) => path.join(dir, name);

function put(root: string, rel: string, text: string): void {
  mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
  writeFileSync(path.join(root, rel), text);
}

beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'grove-diff-under-'));
  for (const side of ['a', 'b']) {
    put(tree(side), 'root/work/kept.txt', 'same\n');
    // Sizes differ, so rsync's quick check sees the change whatever the times.
    const text = side === 'a' ? 'a\n' : 'bb\n';
    put(tree(side), 'root/work/edited.txt', text);
    put(tree(side), 'root/.cache/chromium/blob', text);
    put(tree(side), 'srv/outside.txt', text);
  }
  put(tree('b'), 'root/work/new/file.txt', 'new\n');
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('diffTrees under a folder', () => {
  it('walks only that folder, and says paths from the roots', async () => {
    const d = await diffTrees(tree('a'), tree('b'), { maxFiles: 0, under: '/root/work' });
    expect(d).toMatchObject({ added: ['/root/work/new/file.txt'], changed: ['/root/work/edited.txt'], removed: [] });
  });

  it('keeps the excludes below the folder', async () => {
    const d = await diffTrees(tree('a'), tree('b'), { maxFiles: 0, under: '/root' });
    expect(d.changed).toEqual(['/root/work/edited.txt']);
  });

  it('walks the whole trees when the folder is a link in one of them, or missing', async () => {
    rmSync(path.join(tree('b'), 'root/work'), { recursive: true });
    mkdirSync(path.join(tree('b'), 'elsewhere'));
    symlinkSync('/elsewhere', path.join(tree('b'), 'root/work'));
    const linked = await diffTrees(tree('a'), tree('b'), { maxFiles: 0, under: '/root/work' });
    // The folder that became a link is removed and the link added; outside it is walked too.
    expect(linked).toMatchObject({ added: ['/root/work'], changed: ['/srv/outside.txt'] });
    expect(linked.removed).toContain('/root/work/');
    expect(await diffTrees(tree('a'), tree('b'), { maxFiles: 0, under: '/nowhere' })).toMatchObject({ added: ['/root/work'], changed: ['/srv/outside.txt'] });
  });

  it('refuses a folder that is not an absolute path', async () => {
    await expect(diffTrees(tree('a'), tree('b'), { under: 'root/work' })).rejects.toThrow(/absolute path/);
  });
});
