// The bind mounts of a branch's directories (host/overlay.ts bindMount, made
// by native/grove-mount.c in one program): caged (nodev, nosuid) whatever
// the source's mount is, writable and executable even from a read-only,
// noexec source, and without the mounts under the source. Against real
// mounts on the host, each removed after the test, also when it fails.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { bindMount } from '../../src/host/overlay.js';

const { groveMount } = loadConfig();

/** The per-mount options (mountinfo's sixth field) of the mount at `target`. */
async function mountOptions(target: string): Promise<string[] | null> {
  const line = (await readFile('/proc/self/mountinfo', 'utf8')).split('\n').find((l) => l.split(' ')[4] === target);
  return line ? line.split(' ')[5]!.split(',') : null;
}

describe('bind mounts of a branch directory', () => {
  const mounts: string[] = [];
  const dirs: string[] = [];

  afterEach(async () => {
    for (const m of mounts.splice(0).reverse()) await execa('umount', ['-l', m], { reject: false });
    for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
  });

  async function scratch(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'bind-mount-'));
    dirs.push(dir);
    return dir;
  }

  it('is nodev and nosuid, and neither read-only nor noexec though its source is, and leaves out the mounts under the source', async () => {
    const dir = await scratch();
    const source = path.join(dir, 'source');
    const target = path.join(dir, 'target');
    await mkdir(source);
    mounts.push(source);
    await execa('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'src', source]);
    await writeFile(path.join(source, 'file'), 'made before');
    await mkdir(path.join(source, 'under'));
    mounts.push(path.join(source, 'under'));
    await execa('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'under', path.join(source, 'under')]);
    await writeFile(path.join(source, 'under', 'hidden'), 'on the mount under the source');
    await execa('mount', ['-o', 'remount,bind,ro,noexec', source]); // this mount's flags, not its file system's
    expect(await mountOptions(source)).toEqual(expect.arrayContaining(['ro', 'noexec']));

    mounts.push(target);
    await bindMount(groveMount, source, target);

    const options = await mountOptions(target);
    expect(options).toEqual(expect.arrayContaining(['rw', 'nodev', 'nosuid']));
    expect(options).not.toContain('ro');
    expect(options).not.toContain('noexec');
    expect(await readFile(path.join(target, 'file'), 'utf8')).toBe('made before');
    await writeFile(path.join(target, 'written'), 'through the bind'); // the file system is read-only only through the source's mount
    await expect(readFile(path.join(target, 'under', 'hidden'), 'utf8')).rejects.toThrow(/ENOENT/);
  });

  it('refuses a relative path and a missing source, saying which, and mounts nothing', async () => {
    const dir = await scratch();
    await expect(bindMount(groveMount, 'relative/source', path.join(dir, 'a'))).rejects.toThrow(/must be absolute: relative\/source/);
    const target = path.join(dir, 'b');
    mounts.push(target);
    await expect(bindMount(groveMount, path.join(dir, 'missing'), target)).rejects.toThrow(/open_tree .*missing/);
    expect(await mountOptions(target)).toBeNull();
  });
});
