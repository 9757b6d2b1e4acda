// Noise against a real tree on disk (its .gitignore files read inside it,
// host/in-root.ts): git's rules for nested files, re-inclusion and ignored
// folders; Grove's own files; and the bounds that keep a hostile .gitignore
// from hiding or stalling anything.
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_GITIGNORE_BYTES, Noise } from '../../src/branches/noise.js';

let root: string;
const project = '/root/work';
beforeEach(() => {
  root = mkdtempSync(path.join(os.tmpdir(), 'grove-noise-'));
  mkdirSync(path.join(root, project, 'src/gen'), { recursive: true });
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const put = (rel: string, text: string) => writeFileSync(path.join(root, project, rel), text);
const noiseOf = (paths: string[]) => new Noise(root, project).keep(paths.map((p) => `${project}/${p}`));

describe('Noise', () => {
  it("follows git's rules: nested files, re-inclusion, anchors, folders' contents", async () => {
    put('.gitignore', 'node_modules/\n*.log\n/top.txt\nbuild/\n!build/keep.txt\n# a comment\n');
    put('src/.gitignore', '!important.log\ngen/\n');
    const kept = await noiseOf([
      'node_modules/pkg/index.js',
      'lib/node_modules/x.js',
      'app.log',
      'src/important.log',
      'src/other.log',
      'top.txt',
      'src/top.txt',
      'build/keep.txt',
      'src/gen/out.c',
      'gen/out.c',
      'src/main.c',
      'build/',
      '.gitignore',
      'src/.gitignore',
      '.git/objects/ab/cdef',
    ]);
    expect(kept).toEqual([
      `${project}/src/important.log`,
      `${project}/src/top.txt`,
      `${project}/gen/out.c`,
      `${project}/src/main.c`,
      `${project}/.gitignore`,
      `${project}/src/.gitignore`,
    ]);
  });

  it("leaves out Grove's own files everywhere, and consults no .gitignore outside the project or without one", async () => {
    put('.gitignore', '*\n');
    mkdirSync(path.join(root, 'srv'));
    writeFileSync(path.join(root, 'srv/.gitignore'), '*\n');
    expect(await new Noise(root, project).keep(['/etc/hostname', '/etc/hosts', '/etc/machine-id', '/srv/a.txt', '/root/other.txt'])).toEqual([
      '/srv/a.txt',
      '/root/other.txt',
    ]);
    expect(await new Noise(root, null).keep([`${project}/a.txt`, '/etc/hosts'])).toEqual([`${project}/a.txt`]);
  });

  it('shows what a hostile .gitignore would hide past its bounds, and stays fast on rules made to backtrack', async () => {
    put('.gitignore', `${'#'.repeat(MAX_GITIGNORE_BYTES)}\n*.txt\n`);
    expect(await noiseOf(['a.txt'])).toEqual([`${project}/a.txt`]);
    put('.gitignore', `${'a*'.repeat(12)}b\n`);
    const long = `${'a'.repeat(250)}/`.repeat(8) + `${'a'.repeat(250)}c`;
    const started = performance.now();
    expect(await noiseOf([long])).toEqual([`${project}/${long}`]);
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it('reads a .gitignore inside the tree: a link to the host is not followed out', async () => {
    const outside = path.join(root, '..', `${path.basename(root)}-outside`);
    writeFileSync(outside, '*\n');
    try {
      symlinkSync(outside, path.join(root, project, '.gitignore'));
      expect(await noiseOf(['a.txt'])).toEqual([`${project}/a.txt`]);
    } finally {
      rmSync(outside);
    }
  });
});
