import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { formatGeneration, nextGeneration, parseGeneration, renewGeneration } from '../../src/workspaces/generation.js';

describe('fork generation', () => {
  let root: string;
  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'generation-'));
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('reads back what it writes, and takes nothing else for a generation', () => {
    const g = nextGeneration(null);
    expect(g.counter).toBe(1);
    expect(g.id).toMatch(/^[0-9a-f]{32}$/);
    expect(parseGeneration(formatGeneration(g))).toEqual(g);
    for (const bad of [
      '',
      '1',
      `1 ${'g'.repeat(32)}\n`,
      `-1 ${'a'.repeat(32)}\n`,
      `1 ${'a'.repeat(31)}\n`,
      `${'9'.repeat(16)} ${'a'.repeat(32)}\n`,
      `1 ${'a'.repeat(32)}\nmore`,
    ])
      expect(parseGeneration(bad), JSON.stringify(bad)).toBeNull();
  });

  it('counts on from the one in the root, with a new id each time', async () => {
    const first = await renewGeneration(root, null);
    const second = await renewGeneration(root, null);
    expect(first.counter).toBe(1);
    expect(second.counter).toBe(2);
    expect(second.id).not.toBe(first.id);
    expect(await readFile(path.join(root, 'run/grove/generation'), 'utf8')).toBe(formatGeneration(second));
  });

  it('starts again at 1 over what a branch wrote there, and never follows a link it planted', async () => {
    await mkdir(path.join(root, 'run/grove'), { recursive: true });
    await writeFile(path.join(root, 'run/grove/generation'), 'anything\n');
    expect((await renewGeneration(root, null)).counter).toBe(1);
    const outside = path.join(root, 'outside');
    await writeFile(outside, 'kept');
    await rm(path.join(root, 'run/grove/generation'));
    await symlink(outside, path.join(root, 'run/grove/generation'));
    await expect(renewGeneration(root, null)).rejects.toThrow();
    expect(await readFile(outside, 'utf8')).toBe('kept');
  });
});
