// A caller's files measured as the copy will move them: callerBytes is the
// size of the very tar callerTarCommand streams, so a copy's progress never
// passes its total.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { callerBytes, callerPath, callerTarCommand } from '../../src/host/caller-files.js';

const root = { uid: 0 };
const dir = mkdtempSync(path.join(os.tmpdir(), 'grove-caller-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('callerBytes', () => {
  it('is the size of the tar the copy streams, headers and padding included', async () => {
    const project = path.join(dir, 'project');
    mkdirSync(path.join(project, 'src'), { recursive: true });
    for (let i = 0; i < 40; i++) writeFileSync(path.join(project, 'src', `f${i}.txt`), 'x'.repeat(i * 100));
    const found = await callerPath(root, project);
    const [file, args] = await callerTarCommand(root, found);
    const streamed = execFileSync(file, args, { maxBuffer: 64 << 20 }).length;
    expect(await callerBytes(root, found)).toBe(streamed);
    expect(streamed).toBeGreaterThan(40 * 512 + 78_000); // more than the files' bytes: a header each
  });
});
