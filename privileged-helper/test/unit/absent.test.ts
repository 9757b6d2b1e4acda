import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { readFile, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { whenAbsent } from '../../src/host/absent.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'grove-absent-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('whenAbsent', () => {
  it('gives the fallback when nothing is at the path, or a part of it is no folder', async () => {
    writeFileSync(path.join(dir, 'file'), 'x');
    await expect(readFile(path.join(dir, 'missing'), 'utf8').catch(whenAbsent(''))).resolves.toBe('');
    await expect(readFile(path.join(dir, 'file', 'below'), 'utf8').catch(whenAbsent(''))).resolves.toBe('');
  });

  it('passes any other failure on', async () => {
    writeFileSync(path.join(dir, 'file'), 'x');
    await expect(readFile(dir, 'utf8').catch(whenAbsent(''))).rejects.toMatchObject({ code: 'EISDIR' });
    await expect(rmdir(dir).catch(whenAbsent(undefined))).rejects.toMatchObject({ code: 'ENOTEMPTY' });
  });
});
