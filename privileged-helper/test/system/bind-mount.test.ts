// The mounts of a branch's root (host/overlay.ts, made by native/grove-mount.c):
// bind mounts caged (nodev, nosuid) whatever the source's mount is, writable
// and executable even from a read-only, noexec source, and without the mounts
// under the source; an overlay, caged too; several from one program run, none
// from a malformed one. Against real mounts on the host, each removed after
// the test, also when it fails.
import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { bindMount, makeMounts } from '../../src/host/overlay.js';

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

  it('makes an idmapped mount, a bind and an overlay over the idmapped lower from one run, all caged, the overlay writing to its upper', async () => {
    const dir = await scratch();
    const [image, lower, upper, work, home, homeSeen, root] = ['image', 'lower', 'upper', 'work', 'home', 'home-seen', 'root'].map((d) => path.join(dir, d));
    const range = { hostBase: 3_000_000, size: 65_536 };
    for (const d of [image, upper, home]) await mkdir(d!);
    await writeFile(path.join(image!, 'from-lower'), 'lower');
    await writeFile(path.join(home!, 'in-home'), 'home');
    await mkdir(path.join(work!, 'index'), { recursive: true }); // a stale workdir, as a fork's snapshot carries
    mounts.push(lower!, homeSeen!, root!);

    await makeMounts(groveMount, [
      { kind: 'idmap', range, source: image!, target: lower! },
      { kind: 'bind', source: home!, target: homeSeen! },
      { kind: 'overlay', target: root!, layers: { lower: lower!, upper: upper!, work: work! } },
    ]);

    for (const m of [lower!, homeSeen!]) expect(await mountOptions(m)).toEqual(expect.arrayContaining(['rw', 'nodev', 'nosuid']));
    expect((await stat(path.join(lower!, 'from-lower'))).uid).toBe(range.hostBase); // the image's root, as the tree's root
    expect(await mountOptions(root!)).toEqual(expect.arrayContaining(['rw', 'nodev', 'nosuid']));
    expect(await readFile(path.join(homeSeen!, 'in-home'), 'utf8')).toBe('home');
    expect(await readFile(path.join(root!, 'from-lower'), 'utf8')).toBe('lower');
    await writeFile(path.join(root!, 'written'), 'through the overlay');
    expect(await readFile(path.join(upper!, 'written'), 'utf8')).toBe('through the overlay');
    await expect(readFile(path.join(image!, 'written'), 'utf8')).rejects.toThrow(/ENOENT/);
  });

  it('mounts nothing from a run with a malformed operation, even after a good one', async () => {
    const dir = await scratch();
    const [source, target] = [path.join(dir, 'source'), path.join(dir, 'target')];
    await mkdir(source);
    await mkdir(target);
    mounts.push(target);
    for (const args of [
      ['bind', source, target, '+', 'remount', target],
      ['bind', source, target, '+'],
      ['bind', source],
      ['idmap', '0', '5', source, target],
    ]) {
      const res = await execa(groveMount, args, { reject: false });
      expect(res.exitCode, args.join(' ')).toBe(2);
      expect(res.stderr).toMatch(/^usage: grove-mount/);
      expect(await mountOptions(target)).toBeNull();
    }
    await expect(
      makeMounts(groveMount, [
        { kind: 'bind', source, target },
        { kind: 'overlay', target: 'relative', layers: { lower: source, upper: source, work: source } },
      ]),
    ).rejects.toThrow(/must be absolute: relative/);
    expect(await mountOptions(target)).toBeNull();
  });
});
