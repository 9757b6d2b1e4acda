// The first real error of a failed CRIU run, from logs CRIU wrote on this host.
import { describe, expect, it } from 'vitest';
import { criuFailure, transientDumpFailure } from '../../src/host/criu/criu-errors.js';

describe('criuFailure', () => {
  it('skips the lines every run prints and finds the cause, the host pid and advice in a dump log', () => {
    const log = [
      "Error (criu/util.c:1534): rlimit: Can't setup RLIMIT_NOFILE for self: Operation not permitted",
      'Error (criu/sk-netlink.c:77): netlink: The socket has data to read',
      'Error (criu/cr-dump.c:1545): Dump files (pid: 30959) failed with -1',
      'Error (criu/cr-dump.c:1975): Dumping FAILED.',
    ].join('\n');
    expect(criuFailure(log)).toEqual({
      cause: 'netlink: The socket has data to read',
      pid: { host: 30959 },
      advice: 'a program had not read its network events yet; try again in a moment',
      noSpace: false,
    });
    expect(transientDumpFailure(log)).toBe(true);
    expect(transientDumpFailure('Error (criu/cr-dump.c:1655): Timeout reached. Try to interrupt: 0')).toBe(false);
    // A task of a tree restored a moment ago, still in tracing stop; a stopped one (T) is no passing state.
    expect(transientDumpFailure('(00.012) Error (compel/src/lib/infect.c:146): Unseizable non-zombie 18387 found, state t, err -1/10')).toBe(true);
    expect(transientDumpFailure('(00.012) Error (compel/src/lib/infect.c:146): Unseizable non-zombie 18387 found, state T, err -1/10')).toBe(false);
    // A socket handed to another process that has not read it yet, with data of its own still queued.
    expect(transientDumpFailure('Error (criu/sk-unix.c:482): unix: Non-empty write queue on an in-flight socket 0xd03e0a')).toBe(true);
    // A message with its sender's credentials, not read yet by a process that asked for them (SO_PASSCRED).
    expect(transientDumpFailure('Error (criu/sk-queue.c:144): skqueue: Control messages in queue, not supported')).toBe(true);
  });

  it("names the restored tree's task and drops the timestamps of a verbose log", () => {
    const log = [
      "(00.023319) Error (criu/util.c:1534): rlimit: Can't setup RLIMIT_NOFILE for self: Operation not permitted",
      '(00.040735)      1: Error (criu/mount-v2.c:319): mnt-v2: Failed to open_tree /run/grove/sys: Permission denied',
      '(00.042106) Error (criu/cr-restore.c:2360): Restoring FAILED.',
      '(00.042737) Error (criu/cgroup.c:2055): cg: cgroupd: recv req error: No such file or directory',
    ].join('\n');
    expect(criuFailure(log)).toEqual({
      cause: 'mnt-v2: Failed to open_tree /run/grove/sys: Permission denied',
      pid: { inside: 1 },
      advice: null,
      noSpace: false,
    });
  });

  it('says what to do when the pool is full', () => {
    const log =
      '   173: Error (criu/files-reg.c:900): Unable to write ghost: No space left on device\n   172: Error (criu/cr-restore.c:1265): 173 exited, status=1';
    expect(criuFailure(log)).toMatchObject({ pid: { inside: 173 }, advice: expect.stringMatching(/pool is full/), noSpace: true });
  });

  it('says what to do about a file a fork cannot take along, as CRIU named it', () => {
    const landlock =
      "(00.371902) Error (criu/files.c:621): Can't dump file 3 of that type [600] (anon anon_inode:[landlock-ruleset])\n(00.372046) Error (criu/cr-dump.c:1706): Dump files (pid: 2717) failed with -1";
    expect(criuFailure(landlock)).toEqual({
      cause: "Can't dump file 3 of that type [600] (anon anon_inode:[landlock-ruleset])",
      pid: { host: 2717 },
      advice: 'a process holds a kind of file a fork cannot take along (named above); close it or end the process, then try again',
      noSpace: false,
    });
    const secret =
      "(00.301116) Error (criu/files-reg.c:1905): Can't lookup mount=15 for fd=3 path=/secretmem (deleted)\n(00.301200) Error (criu/cr-dump.c:1706): Dump files (pid: 2718) failed with -1";
    expect(criuFailure(secret)?.advice).toMatch(/a file from outside the branch/);
  });

  it("says what to do about a message with its sender's credentials that its process has not read", () => {
    const log =
      '(00.912) Error (criu/sk-queue.c:144): skqueue: Control messages in queue, not supported\n(00.913) Error (criu/cr-dump.c:1706): Dump files (pid: 4711) failed with -1';
    expect(criuFailure(log)).toMatchObject({
      cause: 'skqueue: Control messages in queue, not supported',
      pid: { host: 4711 },
      advice: expect.stringMatching(/has not read a message/),
    });
  });

  it('carries the lines a failed page read adds to its error: the page and what is mapped there', () => {
    const log = [
      "(00.006453) pie: 22056: Error (criu/pie/restorer.c:1696): Can't read pages data (-14) into 0x7fc37695b000+0x2000 (6 iovs): vma 0x7fc37695a000-0x7fc37695d000 prot 0x3 flags 0x2 status 0x10000041 fd 11 pgoff 0x0",
      '(00.006459) pie: 22056: Error (criu/pie/restorer.c:1672):   page 0x7fc37695b000 of it reads -14',
      '(00.006549) pie: 22056: Error (criu/pie/restorer.c:1633):   mapped now: 7fc37695a000-7fc37695d000 rw-p 00000000 fe:00 2147147                    /tmp/mapped (file size 0x1000)',
      '(00.006600) pie: 22056: Error (criu/pie/restorer.c:2379): Restorer fail 22056',
      '(00.006700) pie: 22056: Error (criu/pie/restorer.c:1633):   not a detail of the first error',
    ].join('\n');
    expect(criuFailure(log)?.pid).toEqual({ inside: 22056 });
    expect(criuFailure(log)?.cause).toBe(
      "Can't read pages data (-14) into 0x7fc37695b000+0x2000 (6 iovs): vma 0x7fc37695a000-0x7fc37695d000 prot 0x3 flags 0x2 status 0x10000041 fd 11 pgoff 0x0" +
        '; page 0x7fc37695b000 of it reads -14; mapped now: 7fc37695a000-7fc37695d000 rw-p 00000000 fe:00 2147147 /tmp/mapped (file size 0x1000)',
    );
  });

  it('says a process maps a file past its end when the page that failed lies beyond what the file now holds', () => {
    const log = (size: string) =>
      [
        "pie: 7: Error (criu/pie/restorer.c:1696): Can't read pages data (-14) into 0x7f16a7157000+0x1000 (9 iovs): vma 0x7f16a7155000-0x7f16a7158000 prot 0x1 flags 0x2 status 0x41 fd 62 pgoff 0x45000",
        'pie: 7: Error (criu/pie/restorer.c:1672):   page 0x7f16a7157000 of it reads -14',
        `pie: 7: Error (criu/pie/restorer.c:1633):   mapped now: 7f16a7155000-7f16a7158000 rw-p 00045000 00:28 2180075    /usr/lib/x86_64-linux-gnu/libfoo.so.1 (file size ${size})`,
      ].join('\n');
    const shortened =
      'a process maps /usr/lib/x86_64-linux-gnu/libfoo.so.1 past its end: the file was made shorter after the process mapped it; restart that process (or put the file back as it was), then try again';
    // The failed page is at 0x47000 of the file.
    expect(criuFailure(log('0x46fff'))?.advice).toBe(shortened);
    expect(criuFailure(log('0x47000'))?.advice).toBe(shortened);
    expect(criuFailure(log('0x47001'))?.advice).toBeNull();
  });

  it('says a process maps a deleted file past the end of its saved copy, from the warning the restore gives when it opens the copy', () => {
    // The lines of CI's failure (criu-patches/0005): the deleted file's path cannot be measured any more.
    const log = (copy: string) =>
      [
        `(00.003100)    134: Warn  (criu/files-reg.c:2484): Mapping 7ff615836000-7ff615837000 at 0x1d000 of /tmp/.org.chromium.Chromium.vHGDrh, a file deleted before the dump, reaches past the end of its restored copy (${copy} bytes)`,
        "pie: 134: Error (criu/pie/restorer.c:1696): Can't read pages data (-14) into 0x7ff615836000+0x2000 (7 iovs): vma 0x7ff615836000-0x7ff615837000 prot 0x1 flags 0x2 status 0x41 fd 8 pgoff 0x1d000",
        'pie: 134: Error (criu/pie/restorer.c:1672):   page 0x7ff615836000 of it reads -14',
        'pie: 134: Error (criu/pie/restorer.c:1633):   mapped now: 7ff615836000-7ff615837000 rw-p 0001d000 00:48 2976    /tmp/.org.chromium.Chromium.vHGDrh (deleted) (file size 0xfffffffffffffffe)',
      ].join('\n');
    expect(criuFailure(log('0x1d000'))?.advice).toBe(
      'a process maps /tmp/.org.chromium.Chromium.vHGDrh, a file deleted before the dump, past the end of the copy saved with it (0x1d000 bytes, the page that failed at 0x1d000); restart that process, then try again',
    );
    expect(criuFailure(log('0x1d001'))?.advice).toBeNull(); // the failed page is within the copy: not the cause
  });

  it('has nothing to say about a log with only noise', () => {
    expect(criuFailure("Error (criu/util.c:1534): rlimit: Can't setup RLIMIT_NOFILE for self: Operation not permitted\n")).toBeNull();
  });
});
