// CRIU's --pages-after-thaw (build/host/criu-patches/0022), against a plain
// process on the host, outside any workspace: the process rewrites its
// memory all the time, its pages are saved from a copy-on-write twin after
// the thaw, and the restored process must find the memory of the freeze
// instant, not a page of later. Memory fork(2) empties is copied into the
// twin; a process with memory fork(2) leaves out gets no twin and is saved
// the old way, and so is one whose pids limit refuses the clone() that
// makes it. A thread inside a restartable sequence has it aborted before
// the twin is made (0022), and goes on being aborted after. A SysV shared
// memory segment, saved with its IPC namespace, comes back whole. A restore
// told to wait for the word that the pages are saved (criu-patches/0022)
// waits for it; a dump told to say so (0022) says it once the pages are
// saved. (fidelity.test.ts has the same process in a forked desktop
// workspace.)
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rename, rm, rmdir, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { CGROUP_ROOT } from '../../src/host/cgroups.js';
import { CRIU_ENV } from '../../src/host/criu/criu.js';
import { NO_REPORT_YET, readRewriterReport, REWRITER, WHOLE, type RewriterReport } from './fixtures/rewriter.js';
import { commandsOf, killIfThere, pidTaken, processesOf } from './host-processes.js';
import { waitFor } from './support.js';

const { criu, groveAction } = loadConfig();
/** A thread that is always inside a restartable sequence, built by the test that runs it. */
const RSEQ_SPINNER = path.join(import.meta.dirname, 'fixtures', 'rseq-spinner.c');

const readReport = (file: string): Promise<RewriterReport | null> => readRewriterReport(() => readFile(file, 'utf8').catch(() => 'null'));

describe("CRIU's pages saved after the thaw", () => {
  const pids = new Set<number>();
  const dirs: string[] = [];
  /** pids cgroups made for a test, removed once the rewriters in them are gone. */
  const cgroups: string[] = [];
  /** Dumps that keep twins (startTwinsDump): killed, their twins die with them (PTRACE_O_EXITKILL). */
  const dumps = new Set<ResultPromise>();

  afterEach(async () => {
    for (const dump of dumps) dump.kill('SIGKILL');
    await Promise.all([...dumps].map((d) => d.catch(() => undefined)));
    dumps.clear();
    for (const pid of pids) killIfThere(pid);
    await waitFor('the rewriters to end', async () => (await processesOf(REWRITER)).length === 0, 10_000);
    pids.clear();
    for (const group of cgroups.splice(0)) {
      await waitFor(
        `${group} to be removed`,
        async () =>
          await rmdir(group).then(
            () => true,
            (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
          ),
        10_000,
      );
    }
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  type RewriterMode = 'plain' | 'wipeonfork' | 'dontfork' | 'sysvshm' | 'reserved';

  /** A rewriter in MODE, started and reporting, with an empty images dir next to its report. */
  async function startRewriter(mode: RewriterMode): Promise<{ dir: string; pid: number; report: string; images: string }> {
    const dir = await mkdtemp(path.join(tmpdir(), 'criu-twin-'));
    dirs.push(dir);
    const report = path.join(dir, 'report.json');
    const rewriter = ['/usr/bin/python3', REWRITER, report, mode];
    // A SysV segment is saved with its IPC namespace, and CRIU saves only a namespace that is not its own. (unshare execs: the pid stays.)
    const argv = mode === 'sysvshm' ? ['/usr/bin/unshare', '--ipc', ...rewriter] : rewriter;
    const child = spawn(argv[0]!, argv.slice(1), { detached: true, stdio: 'ignore' });
    const pid = child.pid!;
    pids.add(pid);
    child.unref();
    await waitFor('the rewriter to report', async () => ((await readReport(report))?.rounds ?? 0) >= 20, 10_000);
    const images = path.join(dir, 'images');
    await mkdir(images);
    return { dir, pid, report, images };
  }

  /** Kills the source and waits until its pid is free for a restore, whose rewriter finds the report file as the source held it. */
  async function endSource(pid: number, report: string): Promise<void> {
    killIfThere(pid);
    await waitFor('the source and its session to end', async () => !(await pidTaken(pid)), 30_000);
    // The restore opens the file the source held open, which must have the size it had then: cleared, not removed.
    await writeFile(report, NO_REPORT_YET);
  }

  /** Dumps a running rewriter with --pages-after-thaw, checks it runs on whole, then kills it; `around` runs just before and after the dump. */
  async function dumpRewriter(
    mode: RewriterMode,
    extraDumpArgs: string[] = [],
    around: { before(pid: number): Promise<void>; after(): Promise<void> } = { before: async () => {}, after: async () => {} },
  ): Promise<{ pid: number; images: string; report: string; dumpLog: string; source: RewriterReport }> {
    const { dir, pid, report, images } = await startRewriter(mode);
    await around.before(pid);
    const dumpArgs = [
      'dump',
      '-t',
      String(pid),
      '-D',
      images,
      '-o',
      'dump.log',
      '-v4',
      '--leave-running',
      '--pages-after-thaw',
      '--action-script',
      groveAction,
      ...extraDumpArgs,
    ];
    const thawed = path.join(dir, 'thawed');
    const dump = await execa(criu, dumpArgs, { env: { ...CRIU_ENV, GROVE_THAWED_FILE: thawed }, reject: false });
    await around.after();
    const dumpLog = await readFile(path.join(images, 'dump.log'), 'utf8');
    expect(dump.exitCode, dumpLog.slice(-2000)).toBe(0);
    // The post-resume action ran once the tree was thawed (what a checkpoint returns at), before the pages were saved.
    expect(existsSync(thawed)).toBe(true);
    expect(dumpLog.indexOf('Running post-resume scripts')).toBeGreaterThan(dumpLog.indexOf('Unfreezing tasks'));
    expect(dumpLog.indexOf('Running post-resume scripts')).toBeLessThan(dumpLog.lastIndexOf('Writing stats'));
    // The twin is gone with the dump: the source is the only rewriter left.
    expect(await processesOf(REWRITER)).toEqual([pid]);
    const atDump = (await readReport(report))!.rounds;
    await waitFor('the source to run on', async () => ((await readReport(report))?.rounds ?? 0) > atDump + 40, 10_000);
    const source = (await readReport(report))!;
    await endSource(pid, report);
    return { pid, images, report, dumpLog, source };
  }

  /** CRIU's restore of the dump in IMAGES, started; `args` are added to it. */
  function startRestore(images: string, args: string[] = []) {
    return execa(criu, ['restore', '-D', images, '-o', 'restore.log', '-v4', '--restore-detached', ...args], { env: CRIU_ENV, reject: false });
  }

  /** What the restored rewriter reports once it has run on for a while. */
  async function restoredReport(images: string, report: string, exitCode: number | undefined): Promise<RewriterReport> {
    expect(exitCode, (await readFile(path.join(images, 'restore.log'), 'utf8')).slice(-2000)).toBe(0);
    await waitFor('the restored rewriter to report', async () => ((await readReport(report))?.rounds ?? 0) > 0, 10_000);
    const first = (await readReport(report))!.rounds;
    await waitFor('the restored rewriter to run on', async () => ((await readReport(report))?.rounds ?? 0) > first + 40, 10_000);
    return (await readReport(report))!;
  }

  async function dumpAndRestore(mode: Parameters<typeof dumpRewriter>[0]): Promise<{ dumpLog: string; source: RewriterReport; restored: RewriterReport }> {
    const { images, report, dumpLog, source } = await dumpRewriter(mode);
    const restore = await startRestore(images);
    return { dumpLog, source, restored: await restoredReport(images, report, restore.exitCode) };
  }

  it('saves the instant of the freeze from a twin while the process rewrites every page, and the restored process finds it whole', async () => {
    const { dumpLog, source, restored } = await dumpAndRestore('plain');
    expect(dumpLog).toMatch(/Twin of \d+ is \d+/);
    expect(dumpLog).not.toMatch(/No twin/);
    expect(source).toEqual(WHOLE);
    expect(restored).toEqual(WHOLE);
  });

  it('copies into the twin what fork empties (MADV_WIPEONFORK), and that memory comes back', async () => {
    const { dumpLog, restored } = await dumpAndRestore('wipeonfork');
    expect(dumpLog).toMatch(/Twin of \d+ is \d+/);
    expect(restored).toEqual(WHOLE);
  });

  it('keeps the pages of a SysV shared memory segment, which the IPC namespace saves in a child of CRIU during the freeze', async () => {
    // That child numbers the segment's pages image from its copy of CRIU's counter; a twin's images opened after the thaw took the same number.
    const { dumpLog, restored } = await dumpAndRestore('sysvshm');
    expect(dumpLog).toMatch(/Twin of \d+ is \d+/);
    expect(dumpLog).toMatch(/IPC shared memory segments: 1\n/);
    expect(restored).toEqual(WHOLE);
  });

  it("saves a process that reserves terabytes of address space, though CRIU's page lists are sized by it and its action scripts fork meanwhile", async () => {
    // 8 TiB reserved: a list of 32 GiB, more than this host's memory; committed (before criu-patches/0010) it failed the dump.
    const { dumpLog, restored } = await dumpAndRestore('reserved');
    expect(dumpLog).toMatch(/Twin of \d+ is \d+/);
    expect(restored).toEqual(WHOLE);
  });

  it('saves a process holding memory fork leaves out (MADV_DONTFORK) in the freeze, and that memory comes back too', async () => {
    const { dumpLog, restored } = await dumpAndRestore('dontfork');
    expect(dumpLog).toMatch(/No twin for \d+: fork does not copy/);
    expect(dumpLog).not.toMatch(/Twin of \d+ is/);
    expect(restored).toEqual(WHOLE);
  });

  it('saves in the freeze the pages of a process that may not clone (its pids limit), and that memory comes back', async () => {
    // The twins are made by clone()s injected into the task (criu-patches/0022): refused, the task's pages are saved the old way.
    const group = path.join(CGROUP_ROOT, 'pids', `grove-test-twin-${process.pid}`);
    cgroups.push(group);
    const limit = (max: string) => writeFile(path.join(group, 'pids.max'), max);
    const { images, report, dumpLog, source } = await dumpRewriter('plain', [], {
      before: async (pid) => {
        await mkdir(group);
        await writeFile(path.join(group, 'cgroup.procs'), String(pid));
        await limit((await readFile(path.join(group, 'pids.current'), 'utf8')).trim());
      },
      after: () => limit('max'),
    });
    expect(source).toEqual(WHOLE);
    const restore = await startRestore(images);
    const restored = await restoredReport(images, report, restore.exitCode);
    expect(dumpLog).toMatch(/No twin for \d+ \(clone: Resource temporarily unavailable\): its pages are saved in the freeze/);
    expect(dumpLog).not.toMatch(/Twin of \d+ is/);
    expect(restored).toEqual(WHOLE);
  });

  it("aborts the restartable sequence a thread is in before it runs the twin's clone there: the source and its restored copy are aborted at each preemption still", async () => {
    // Run at another address without that, the kernel clears the sequence's descriptor and the thread goes on inside it with none (fixtures/rseq-spinner.c).
    const dir = await mkdtemp(path.join(tmpdir(), 'criu-twin-rseq-'));
    dirs.push(dir);
    const spinner = path.join(dir, 'rseq-spinner');
    await execa('cc', ['-O2', '-Wall', '-Werror', '-pthread', '-o', spinner, RSEQ_SPINNER]);
    const report = path.join(dir, 'aborts');
    const aborts = async () => Number((await readFile(report, 'utf8').catch(() => '')).trim() || 0);
    const abortedOn = async (what: string) => {
      await waitFor(`${what} to report`, async () => (await aborts()) > 0, 10_000);
      const from = await aborts();
      await waitFor(`${what} to be aborted again`, async () => (await aborts()) > from + 10, 10_000);
    };
    const child = spawn(spinner, [report], { detached: true, stdio: 'ignore' });
    const pid = child.pid!;
    pids.add(pid);
    child.unref();
    await abortedOn('the spinner');
    const images = path.join(dir, 'images');
    await mkdir(images);
    const dump = await execa(criu, ['dump', '-t', String(pid), '-D', images, '-o', 'dump.log', '-v4', '--leave-running', '--pages-after-thaw'], {
      env: CRIU_ENV,
      reject: false,
    });
    const dumpLog = await readFile(path.join(images, 'dump.log'), 'utf8');
    expect(dump.exitCode, dumpLog.slice(-2000)).toBe(0);
    expect(dumpLog).toMatch(/Twin of \d+ is \d+/);
    await abortedOn('the source');
    killIfThere(pid);
    await waitFor('the source to end', async () => !(await pidTaken(pid)), 30_000);
    await writeFile(report, `${'0'.repeat(20)}\n`); // the spinner's record, as long as at the dump (fixtures/rseq-spinner.c)
    const restore = await startRestore(images);
    expect(restore.exitCode, (await readFile(path.join(images, 'restore.log'), 'utf8')).slice(-2000)).toBe(0);
    await abortedOn('the restored copy');
  });

  it('restores with --pages-ready-file only once the file says the pages are saved, and not at all when it says they are not', async () => {
    // A fork's restores start while the dump still saves its pages (criu-patches/0022); here the "dump" is long done, and the file alone decides.
    const { pid, images, report } = await dumpRewriter('plain');
    const say = async (word: string) => {
      await writeFile(path.join(images, 'ready.tmp'), word);
      await rename(path.join(images, 'ready.tmp'), path.join(images, 'ready'));
    };

    const refused = startRestore(images, ['--pages-ready-file', 'ready']);
    await new Promise((r) => setTimeout(r, 1500));
    expect(refused.exitCode).toBeNull(); // still running: waiting
    expect(await processesOf(REWRITER)).toEqual([]);
    await say('not saved: the test says so');
    expect((await refused).exitCode).not.toBe(0);
    expect(await readFile(path.join(images, 'restore.log'), 'utf8')).toContain("The dump's private pages were not saved: not saved: the test says so");
    expect(await processesOf(REWRITER)).toEqual([]);
    // The failed restore had made the process under its pid, and killed it: the pid must be free again first.
    await waitFor('the failed restore to free the pid', async () => !(await pidTaken(pid)), 30_000);

    await rm(path.join(images, 'ready'));
    const restore = startRestore(images, ['--pages-ready-file', 'ready']);
    await new Promise((r) => setTimeout(r, 500));
    expect(restore.exitCode).toBeNull();
    await say('ok');
    const restored = await restoredReport(images, report, (await restore).exitCode);
    expect(restored).toEqual(WHOLE);
    const log = await readFile(path.join(images, 'restore.log'), 'utf8');
    // It waited before the first page of the task was read, not after.
    expect(log).toMatch(/The dump's private pages are saved \(waited \d+ ms\)/);
    expect(log.indexOf("The dump's private pages are saved")).toBeLessThan(log.indexOf('Opened local page read'));
  });

  it('says itself that the pages are saved, with a dump given --pages-ready-file: once they are, before the twins go, readable to all', async () => {
    const { images, report, dumpLog } = await dumpRewriter('plain', ['--pages-ready-file', 'ready']);
    expect(await readFile(path.join(images, 'ready'), 'utf8')).toBe('ok');
    expect((await stat(path.join(images, 'ready'))).mode & 0o777).toBe(0o644); // a restore in a user namespace reads it
    expect(existsSync(path.join(images, 'ready.criu'))).toBe(false);
    const said = dumpLog.indexOf('Told the restores the pages are saved (ready)');
    expect(said).toBeGreaterThan(dumpLog.lastIndexOf('Twin of'));
    expect(said).toBeLessThan(dumpLog.indexOf('Killing the twins'));
    const restore = startRestore(images, ['--pages-ready-file', 'ready']);
    expect(await restoredReport(images, report, (await restore).exitCode)).toEqual(WHOLE);
  });

  it('refuses a --pages-ready-file that is not a plain name in the images dir', async () => {
    const res = await execa(criu, ['restore', '-D', '/nonexistent', '--pages-ready-file', '../ready'], { env: CRIU_ENV, reject: false });
    expect(res.exitCode).not.toBe(0);
    expect(res.stderr).toContain('--pages-ready-file names a file in the images dir: ../ready');
  });

  // --pages-in-twins / --pages-from-twins (criu-patches/0023): a fork's restores read the pages from the twins, which the dump keeps until
  // released. A twin is in its source's session, so a restore here (of the same pid, in the host's pid namespace) cannot be made while it
  // lives: the restores that read a twin are in fidelity.test.ts, in forks of a desktop (each child in a pid namespace of its own).

  /** A dump of a running rewriter that keeps the pages in its twin, started (through `wrap`, if given) and past saying they are ready. */
  async function startTwinsDump(wrap: string[] = []) {
    const { pid, report, images } = await startRewriter('wipeonfork');
    const args = [
      'dump',
      '-t',
      String(pid),
      '-D',
      images,
      '-o',
      'dump.log',
      '-v4',
      '--leave-running',
      '--pages-after-thaw',
      '--pages-ready-file',
      'ready',
      '--pages-in-twins',
      'release',
    ];
    const [file, ...argv] = [...wrap, criu, ...args];
    const dump = execa(file!, argv, { env: CRIU_ENV, reject: false });
    dumps.add(dump);
    await waitFor('the dump to say the pages are ready', async () => existsSync(path.join(images, 'ready')) || dump.exitCode !== null, 30_000);
    expect(dump.exitCode, await readFile(path.join(images, 'dump.log'), 'utf8').catch(() => '')).toBeNull(); // keeping the twin
    const twins = (await processesOf(REWRITER)).filter((p) => p !== pid);
    expect(twins).toHaveLength(1);
    return { pid, report, images, dump, twin: twins[0]! };
  }

  const restoreLog = (images: string) => readFile(path.join(images, 'restore.log'), 'utf8');

  it('keeps the pages in the twin until released, writing none of them, and images so made are refused by a restore that would read them there', async () => {
    const { pid, images, dump, twin } = await startTwinsDump();
    const pagesImages = (await readdir(images)).filter((f) => /^pages-\d+\.img$/.test(f));
    const pageBytes = (await Promise.all(pagesImages.map(async (f) => (await stat(path.join(images, f))).size))).reduce((a, b) => a + b, 0);
    expect(pagesImages.length).toBeGreaterThan(0);
    expect(pageBytes).toBe(0);
    expect(await readFile(path.join(images, 'ready'), 'utf8')).toBe('ok');
    expect(await readFile(path.join(images, 'twins-list'), 'utf8')).toMatch(new RegExp(`^${pid} ${twin} \\d+\n$`));

    const refused = await startRestore(images, ['--pages-ready-file', 'ready']);
    expect(refused.exitCode).not.toBe(0);
    expect(await restoreLog(images)).toContain('The dump left the pages in its twins: restore it with --pages-from-twins');
    await new Promise((r) => setTimeout(r, 500));
    expect(dump.exitCode).toBeNull(); // still keeping the twin for the restores to come
    expect(await processesOf(REWRITER)).toEqual([pid, twin].sort((a, b) => a - b));

    await writeFile(path.join(images, 'release'), 'done');
    const ended = await dump;
    const dumpLog = await readFile(path.join(images, 'dump.log'), 'utf8');
    expect(ended.exitCode, dumpLog.slice(-2000)).toBe(0);
    expect(dumpLog).toContain('The twins are released (release)');
    expect(await processesOf(REWRITER)).toEqual([pid]); // the twin went with the dump; the source runs on
  });

  it('fails a restore whose twin is gone, saying so, before it makes a process', async () => {
    // The source runs on: the restore fails before it would find the source's pid taken.
    const { pid, images, dump, twin } = await startTwinsDump();
    process.kill(twin, 'SIGKILL');
    const restore = await startRestore(images, ['--pages-ready-file', 'ready', '--pages-from-twins']);
    expect(restore.exitCode).not.toBe(0);
    expect(await restoreLog(images)).toMatch(new RegExp(`The dump's twin ${twin} of task ${pid} is gone: its pages are lost`));
    expect(await processesOf(REWRITER)).toEqual([pid]);
    await writeFile(path.join(images, 'release'), 'done');
    expect((await dump).exitCode).toBe(0);
  });

  it('ends with its caller, and the twin with it, if the caller dies before it released them', async () => {
    // The dump's parent is a shell that does not exec it (a command follows); killing the shell is the caller's death.
    const { pid, images, dump } = await startTwinsDump(['/bin/sh', '-c', '"$@"; exit $?', 'sh']);
    dump.kill('SIGKILL');
    await dump;
    await waitFor('the twin to go', async () => (await processesOf(REWRITER)).every((p) => p === pid), 10_000);
    await waitFor('the dump to end', async () => (await commandsOf(criu)).every((p) => !p.argv.includes(images)), 10_000);
    expect(await processesOf(REWRITER)).toEqual([pid]); // the source runs on
  });

  it('refuses --pages-in-twins that is not a plain name in the images dir, or without the pages saved after the thaw and said ready', async () => {
    const images = await mkdtemp(path.join(tmpdir(), 'criu-twin-'));
    dirs.push(images);
    const dump = (args: string[]) => execa(criu, ['dump', '-t', '1', '-D', images, ...args], { env: CRIU_ENV, reject: false });
    const notPlain = await dump(['--pages-in-twins', '../release']);
    expect(notPlain.exitCode).not.toBe(0);
    expect(notPlain.stderr).toContain('--pages-in-twins names a file in the images dir: ../release');
    const alone = await dump(['--pages-after-thaw', '--pages-in-twins', 'release']);
    expect(alone.exitCode).not.toBe(0);
    expect(alone.stderr).toContain('--pages-in-twins needs --pages-after-thaw and --pages-ready-file');
  });
});
