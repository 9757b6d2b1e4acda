import { describe, expect, it } from 'vitest';
import { CRUN_MASKED_FILES, externalMountKey, forkDumpArgs, forkRestoreArgs, MASKED_FILE_SOURCES } from '../../src/host/criu/criu-commands.js';
import { overlayOptions } from '../../src/host/overlay.js';

const externals = (args: string[]) => args.flatMap((a, i) => (args[i - 1] === '--external' ? [a] : []));

describe('CRIU arguments for a fork', () => {
  it('declares each bind of the branch as an external mount at dump and binds the child’s own source at restore', () => {
    const dump = forkDumpArgs({ initPid: 42, imagesDir: '/i', netnsInode: 7, logFile: '/i/d.log', externalMounts: [...CRUN_MASKED_FILES, '/root'] });
    expect(externals(dump)).toEqual(['net[7]:extnet', 'mnt[/proc/keys]:ext_proc_keys', 'mnt[/proc/timer_list]:ext_proc_timer_list', 'mnt[/root]:ext_root']);
    const restore = forkRestoreArgs({
      imagesDir: '/i',
      workDir: '/i/restore-b',
      rootfs: '/run/roots/b',
      pidFile: '/i/p',
      netnsFd: 3,
      logFile: '/i/r.log',
      externalMounts: [...MASKED_FILE_SOURCES, { containerPath: '/root', source: '/pool/workspaces/b/home' }],
    });
    expect(externals(restore)).toEqual(['mnt[ext_proc_keys]:/dev/null', 'mnt[ext_proc_timer_list]:/dev/null', 'mnt[ext_root]:/pool/workspaces/b/home']);
    // Loopback connections come back established, those to the outside closed (criu-patches/0002).
    expect(restore).toEqual(expect.arrayContaining(['--tcp-established', '--tcp-close-external']));
    expect(restore).not.toContain('--tcp-close');
    // Its stats go to a work dir of its own: restores from one dump run at once.
    expect(restore.join(' ')).toContain('--work-dir /i/restore-b');
    expect(dump).toEqual(expect.arrayContaining(['--leave-running', '--tcp-established', '--skip-in-flight']));
    expect(dump).not.toContain('--tcp-close');
    // The dump leaves cgroups out only because no restore reads them (criu-patches/0012).
    expect(dump).toContain('--manage-cgroups=ignore');
    expect(restore).toContain('--manage-cgroups=ignore');
  });

  it('leaves anonymous memory to the kernel tier only when asked, at dump and restore alike (criu-patches/0006)', () => {
    const restore = { imagesDir: '/i', workDir: '/i/w', rootfs: '/r', pidFile: '/p', netnsFd: 3, logFile: '/l' };
    const dump = { initPid: 42, imagesDir: '/i', netnsInode: 7, logFile: '/i/d.log' };
    expect(forkRestoreArgs(restore)).not.toContain('--skip-private-anon-pages');
    expect(forkDumpArgs(dump)).not.toContain('--skip-private-anon-pages');
    expect(forkRestoreArgs({ ...restore, leaveAnonymousMemory: true })).toContain('--skip-private-anon-pages');
    expect(forkDumpArgs({ ...dump, leaveAnonymousMemory: true })).toContain('--skip-private-anon-pages');
  });

  it('saves the pages after the thaw only when asked, and only at dump (criu-patches/0022)', () => {
    const dump = { initPid: 42, imagesDir: '/i', netnsInode: 7, logFile: '/i/d.log' };
    expect(forkDumpArgs(dump)).not.toContain('--pages-after-thaw');
    expect(forkDumpArgs({ ...dump, pagesAfterThaw: true })).toContain('--pages-after-thaw');
  });

  it('has a restore wait for the word that the pages are saved only when asked, and only by a plain name (criu-patches/0022)', () => {
    const restore = { imagesDir: '/i', workDir: '/i/w', rootfs: '/r', pidFile: '/p', netnsFd: 3, logFile: '/l' };
    expect(forkRestoreArgs(restore)).not.toContain('--pages-ready-file');
    expect(forkRestoreArgs({ ...restore, pagesReadyFile: 'grove-pages-ready' }).join(' ')).toContain('--pages-ready-file grove-pages-ready');
    for (const bad of ['../ready', 'a/b', '.hidden', '', 'x y']) expect(() => forkRestoreArgs({ ...restore, pagesReadyFile: bad })).toThrow(/plain file name/);
  });

  it('keeps the pages in the twins, and reads them there, only when asked, with a plain name for the release (criu-patches/0023)', () => {
    const dump = { initPid: 42, imagesDir: '/i', netnsInode: 7, logFile: '/i/d.log', pagesAfterThaw: true, pagesReadyFile: 'ready' };
    expect(forkDumpArgs(dump)).not.toContain('--pages-in-twins');
    expect(forkDumpArgs({ ...dump, twinsReleaseFile: 'grove-twins-release' }).join(' ')).toContain('--pages-in-twins grove-twins-release');
    for (const bad of ['../release', 'a/b', '.hidden', '', 'x y']) expect(() => forkDumpArgs({ ...dump, twinsReleaseFile: bad })).toThrow(/plain file name/);
    const restore = { imagesDir: '/i', workDir: '/i/w', rootfs: '/r', pidFile: '/p', netnsFd: 3, logFile: '/l' };
    expect(forkRestoreArgs(restore)).not.toContain('--pages-from-twins');
    expect(forkRestoreArgs({ ...restore, pagesFromTwins: true })).toContain('--pages-from-twins');
  });

  it("has CRIU restore the UTS namespace under the child's own hostname, and takes no name a hostname cannot be (criu-patches/0019)", () => {
    const restore = { imagesDir: '/i', workDir: '/i/w', rootfs: '/r', pidFile: '/p', netnsFd: 3, logFile: '/l' };
    expect(forkRestoreArgs(restore)).not.toContain('--uts-hostname');
    expect(forkRestoreArgs({ ...restore, hostname: 'web-2' }).join(' ')).toContain('--uts-hostname web-2');
    expect(forkRestoreArgs({ ...restore, hostname: 'a'.repeat(32) })).toContain('a'.repeat(32));
    for (const bad of ['', '-x', 'x-', 'Web', 'a.b', 'a b', '../x', 'a/b', 'x\n', 'a'.repeat(33), 'é'])
      expect(() => forkRestoreArgs({ ...restore, hostname: bad }), bad).toThrow(/bad hostname/);
  });

  it('has CRIU run the action script for the actions named only, at dump and restore alike (criu-patches/0015)', () => {
    const script = { path: '/s/action.sh', actions: ['post-dump', 'post-resume'] };
    const dump = forkDumpArgs({ initPid: 42, imagesDir: '/i', netnsInode: 7, logFile: '/i/d.log', actionScript: script });
    expect(dump.join(' ')).toContain('--action-script /s/action.sh --action-script-actions post-dump,post-resume');
    const restore = { imagesDir: '/i', workDir: '/i/w', rootfs: '/r', pidFile: '/p', netnsFd: 3, logFile: '/l' };
    expect(forkRestoreArgs({ ...restore, actionScript: { path: '/s/action.sh', actions: ['pre-resume'] } }).join(' ')).toContain(
      '--action-script /s/action.sh --action-script-actions pre-resume',
    );
    expect(forkRestoreArgs(restore)).not.toContain('--action-script-actions');
    for (const actions of [[], ['pre-resume,post-dump'], ['Pre resume']])
      expect(() => forkRestoreArgs({ ...restore, actionScript: { path: '/s/a', actions } })).toThrow(/actions/);
    expect(() => forkRestoreArgs({ ...restore, actionScript: { path: 's/a', actions: ['pre-resume'] } })).toThrow(/absolute/);
  });

  it('keys are the same for the same container path and never contain brackets or colons', () => {
    expect(externalMountKey('/root')).toBe(externalMountKey('/root'));
    expect(externalMountKey('/a:b[c]')).toMatch(/^[A-Za-z0-9_]+$/);
  });

  it('refuses relative paths and bad pids', () => {
    expect(() => forkDumpArgs({ initPid: 1, imagesDir: '/i', netnsInode: 7, logFile: '/l' })).toThrow(/pid/);
    expect(() => forkDumpArgs({ initPid: 9, imagesDir: 'i', netnsInode: 7, logFile: '/l' })).toThrow(/absolute/);
    expect(() => forkRestoreArgs({ imagesDir: '/i', workDir: '/i/w', rootfs: 'r', pidFile: '/p', netnsFd: 3, logFile: '/l' })).toThrow(/absolute/);
  });
});

describe('overlay options for a branch root', () => {
  it('stack one lower under the branch’s upper, with the options CRIU needs for file handles', () => {
    expect(overlayOptions({ lower: '/pool/images/desktop-1', upper: '/pool/workspaces/b/upper', work: '/pool/workspaces/b/work' })).toBe(
      'lowerdir=/pool/images/desktop-1,upperdir=/pool/workspaces/b/upper,workdir=/pool/workspaces/b/work,index=on,nfs_export=on',
    );
  });

  it('refuse a layer path that would change the option string’s meaning', () => {
    for (const bad of ['/a,upperdir=/x', '/a:/b', 'relative', '/a\\b']) {
      expect(() => overlayOptions({ lower: bad, upper: '/u', work: '/w' })).toThrow(/unusable/);
    }
  });
});
