import { mkdir, mkdtemp, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { diffTrees } from '../../src/branches/diff.js';
import { TreeDiff } from '../../src/protocol/diff.js';

const OLD = new Date('2024-01-01T00:00:00Z');
const NEW = new Date('2024-06-01T00:00:00Z');

let tmp: string;
let a: string;
let b: string;

async function put(root: string, rel: string, content: string | Buffer, mtime = OLD): Promise<void> {
  const file = path.join(root, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
  await utimes(file, mtime, mtime);
}

async function link(root: string, rel: string, target: string): Promise<void> {
  const file = path.join(root, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await symlink(target, file);
}

/** Both trees get it, identical (same bytes, same mtime). */
async function both(rel: string, content: string | Buffer): Promise<void> {
  await put(a, rel, content);
  await put(b, rel, content);
}

const SPACED = '/home/user/my notes/été.txt';
const ODD = '/srv/new\nline \\#134 back'; // a newline, and a backslash rsync must escape
const bigA = 'line\n'.repeat(60_000); // 300 000 bytes: over the 256 KiB default
const bigB = `${bigA}one more\n`;

beforeAll(async () => {
  tmp = await mkdtemp(path.join(os.tmpdir(), 'grove-diff-test-'));
  a = path.join(tmp, 'a');
  b = path.join(tmp, 'b');

  await both('/etc/unchanged.conf', 'same\n');
  // Same content, only the mtime differs: not a change.
  await put(a, '/etc/touched.conf', 'touched\n');
  await put(b, '/etc/touched.conf', 'touched\n', NEW);
  // Same size, other mtime, other bytes: found by reading both.
  await put(a, '/etc/app.conf', 'host=a\nport=80\nmode=x\n');
  await put(b, '/etc/app.conf', 'host=a\nport=81\nmode=x\n', NEW);
  await put(b, '/etc/new.conf', 'hello\nworld\n', NEW);
  await put(a, '/etc/old.conf', 'bye\n');
  await put(a, '/usr/lib/blob.bin', Buffer.from([1, 2, 0, 3]));
  await put(b, '/usr/lib/blob.bin', Buffer.from([1, 2, 0, 3, 4]), NEW);
  await put(a, SPACED, 'bonjour\n');
  await put(b, SPACED, 'bonjour\nau revoir\n', NEW);
  await put(b, ODD, 'odd\n', NEW);
  await link(a, '/usr/bin/editor', 'vim');
  await link(b, '/usr/bin/editor', 'nano');
  await link(a, '/usr/bin/same-link', 'x');
  await link(b, '/usr/bin/same-link', 'x');
  // File -> symlink: changed.
  await put(a, '/etc/resolv.conf', 'nameserver 1.1.1.1\n');
  await link(b, '/etc/resolv.conf', '../run/resolv.conf');
  // Directory -> file: the directory (and its contents) removed, the file added.
  await put(a, '/var/cache/thing/inner', 'i\n');
  await put(b, '/var/cache/thing', 'now a file\n', NEW);
  // A removed directory with files (and a subdirectory).
  await put(a, '/opt/tool/README', 'readme\n');
  await put(a, '/opt/tool/bin/run', '#!/bin/sh\n');
  // An added directory: only its files are listed.
  await put(b, '/opt/other/file', 'x\n', NEW);
  // Over the text-diff size cap: changed, but no text diff.
  await put(a, '/var/lib/big.txt', bigA);
  await put(b, '/var/lib/big.txt', bigB, NEW);
  // Excluded: never reported.
  await put(b, '/tmp/.X11-unix/X0', 'socket\n');
  await put(b, '/tmp/.X0-lock', '42\n');
  await put(b, '/proc/x', 'x\n');
  await put(a, '/run/gone', 'x\n');
  await put(a, '/var/log/grove-session.log', 'run 1\n');
  await put(b, '/var/log/grove-session.log', 'run 1\nrun 2\n', NEW);
  await put(b, '/root/.cache/grove-chromium/Default/Cache/data_0', Buffer.from([0, 1]));
  await link(b, '/root/.config/grove-chromium/SingletonLock', 'host-123');
  await both('/root/.config/grove-chromium/Default/Preferences', '{}\n');
});

afterAll(async () => {
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

describe('diffTrees', () => {
  it('lists added, changed and removed entries and skips excluded paths', async () => {
    const diff = await diffTrees(a, b);
    expect(TreeDiff.parse(diff)).toEqual(diff);
    expect(diff.added).toEqual(['/etc/new.conf', '/opt/other/file', ODD, '/var/cache/thing']);
    expect(diff.changed).toEqual(['/etc/app.conf', '/etc/resolv.conf', SPACED, '/usr/bin/editor', '/usr/lib/blob.bin', '/var/lib/big.txt']);
    expect(diff.removed).toEqual([
      '/etc/old.conf',
      '/opt/tool/',
      '/opt/tool/README',
      '/opt/tool/bin/',
      '/opt/tool/bin/run',
      '/var/cache/thing/',
      '/var/cache/thing/inner',
    ]);
    expect(diff.truncated).toBe(false);
    // Text diffs for small text files only (not the binary, the symlinks or the big file).
    expect(diff.textDiffs.map((d) => d.path)).toEqual(['/etc/app.conf', '/etc/new.conf', SPACED, '/opt/other/file', ODD, '/var/cache/thing']);
  });

  it('produces unified diffs with the right lines and labels', async () => {
    const diff = await diffTrees(a, b);
    const byPath = new Map(diff.textDiffs.map((d) => [d.path, d.diff]));

    const app = byPath.get('/etc/app.conf')!;
    expect(app.split('\n').slice(0, 2)).toEqual(['--- a/etc/app.conf', '+++ b/etc/app.conf']);
    expect(app).toContain('\n-port=80\n+port=81\n');
    expect(app).toContain('\n host=a\n');
    expect(app.endsWith('\n')).toBe(true);

    const added = byPath.get('/etc/new.conf')!;
    expect(added).toBe('--- /dev/null\n+++ b/etc/new.conf\n@@ -0,0 +1,2 @@\n+hello\n+world\n');

    const spaced = byPath.get(SPACED)!;
    expect(spaced.split('\n').slice(0, 2)).toEqual([`--- a${SPACED}`, `+++ b${SPACED}`]);
    expect(spaced).toContain('\n bonjour\n+au revoir\n');

    expect(byPath.get(ODD)).toContain('\n+odd\n');
    expect(byPath.get('/var/cache/thing')).toContain('\n+now a file\n');
  });

  it('caps the number of text diffs and says so', async () => {
    const diff = await diffTrees(a, b, { maxFiles: 2 });
    expect(diff.textDiffs.map((d) => d.path)).toEqual(['/etc/app.conf', '/etc/new.conf']);
    expect(diff.truncated).toBe(true);
    expect(diff.changed).toContain(SPACED);
  });

  it('honours maxTextBytes', async () => {
    const diff = await diffTrees(a, b, { maxTextBytes: 400_000 });
    const big = diff.textDiffs.find((d) => d.path === '/var/lib/big.txt');
    expect(big?.diff).toContain('\n+one more\n');
  });

  it('sees a file rewritten to the same size within the second it was written', async () => {
    const [x, y] = [path.join(tmp, 'same-second-x'), path.join(tmp, 'same-second-y')];
    for (const [root, text] of [
      [x, 'a from main\n'],
      [y, 'a from left\n'],
    ] as const) {
      await mkdir(root);
      await writeFile(path.join(root, 'a.txt'), text);
    }
    // The same second, other nanoseconds: as a branch's edit right after its fork looks.
    await utimes(path.join(x, 'a.txt'), 1_767_225_600.1, 1_767_225_600.1);
    await utimes(path.join(y, 'a.txt'), 1_767_225_600.9, 1_767_225_600.9);
    expect((await diffTrees(x, y)).changed).toEqual(['/a.txt']);
  });

  it('reports nothing for identical trees', async () => {
    expect(await diffTrees(a, a)).toEqual({ added: [], changed: [], removed: [], textDiffs: [], truncated: false });
  });

  it('reverses when the trees are swapped', async () => {
    const diff = await diffTrees(b, a);
    expect(diff.added).toEqual(['/etc/old.conf', '/opt/tool/README', '/opt/tool/bin/run', '/var/cache/thing/inner']);
    expect(diff.removed).toEqual(['/etc/new.conf', '/opt/other/', '/opt/other/file', '/srv/', ODD, '/var/cache/thing']);
  });

  it('refuses relative paths and non-directories', async () => {
    await expect(diffTrees('relative/a', b)).rejects.toThrow(/from root must be an absolute path/);
    await expect(diffTrees(a, './b')).rejects.toThrow(/to root must be an absolute path/);
    await expect(diffTrees(path.join(a, 'etc/unchanged.conf'), b)).rejects.toThrow(/is not a directory/);
    await expect(diffTrees(a, path.join(tmp, 'missing'))).rejects.toThrow(/does not exist/);
  });
});
