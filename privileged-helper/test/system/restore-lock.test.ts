// The lock that keeps a netns silent while CRIU restores into it
// (host/netns.ts lockForRestore, native/grove-netlock.c), opened by the
// restore's action program at pre-resume (native/grove-action.c), on a real
// netns: a UDP datagram to the loopback is refused while it holds, goes
// through once the action opened it, and is refused again when a second restore (a rollback) locks the same
// netns; what the tool is asked wrongly changes nothing.
import { randomBytes } from 'node:crypto';
import { execa } from 'execa';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { lockForRestore, netnsPath, RESTORE_LOCK_TABLE, unlockRestore } from '../../src/host/netns.js';

const SEND = 'import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", 9))';
let netns = '';
const { groveNetlock, groveAction } = loadConfig();

/** Whether a datagram from inside the netns leaves its socket (a drop at output is EPERM to the sender). */
async function sends(): Promise<boolean> {
  const res = await execa('ip', ['netns', 'exec', netns, 'python3', '-c', SEND], { reject: false });
  if (res.exitCode !== 0) expect(res.stderr).toContain('PermissionError');
  return res.exitCode === 0;
}

async function openAsTheActionDoes(): Promise<void> {
  await execa(groveAction, [], {
    env: { CRTOOLS_SCRIPT_ACTION: 'pre-resume', GROVE_LOCKED_NETNS: netnsPath(netns), GROVE_LOCK_TABLE: RESTORE_LOCK_TABLE, GROVE_NETLOCK_TOOL: groveNetlock },
  });
}

async function lockTables(): Promise<string[]> {
  const { stdout } = await execa('ip', ['netns', 'exec', netns, 'nft', 'list', 'tables']);
  return stdout.split('\n').filter((l) => l.includes(RESTORE_LOCK_TABLE));
}

describe('the restore lock', () => {
  beforeEach(async () => {
    netns = `grove-locktest-${randomBytes(3).toString('hex')}`;
    await execa('ip', ['netns', 'add', netns]);
    await execa('ip', ['netns', 'exec', netns, 'ip', 'link', 'set', 'lo', 'up']);
  });
  afterEach(async () => {
    await execa('ip', ['netns', 'del', netns], { reject: false });
  });

  it('holds every packet until the pre-resume action opens it, and holds again for the next restore', async () => {
    expect(await sends()).toBe(true);
    await lockForRestore(groveNetlock, netnsPath(netns));
    expect(await sends()).toBe(false);
    await openAsTheActionDoes();
    expect(await sends()).toBe(true);
    // A rollback restores into the same netns, whose opened lock is still there.
    await lockForRestore(groveNetlock, netnsPath(netns));
    expect(await sends()).toBe(false);
    expect(await lockTables()).toHaveLength(1);
    await openAsTheActionDoes();
    expect(await sends()).toBe(true);
  });

  it('refuses what it is asked wrongly, and changes nothing', async () => {
    await lockForRestore(groveNetlock, netnsPath(netns));
    for (const args of [
      [],
      ['open'],
      ['shut', netnsPath(netns), RESTORE_LOCK_TABLE],
      ['open', 'relative/netns', RESTORE_LOCK_TABLE],
      ['open', netnsPath(netns), 'bad;table'],
      ['open', netnsPath(netns), ''],
      ['open', netnsPath(netns), RESTORE_LOCK_TABLE, 'extra'],
    ]) {
      const res = await execa(groveNetlock, args, { reject: false });
      expect(res.exitCode, args.join(' ')).toBe(2);
      expect(res.stderr).toMatch(/^usage: grove-netlock/);
    }
    // A table that is not there cannot be opened; a netns that is not there cannot be locked.
    const missing = await execa(groveNetlock, ['open', netnsPath(netns), 'grove_no_such_lock'], { reject: false });
    expect(missing).toMatchObject({ exitCode: 1 });
    expect(missing.stderr).toMatch(/cannot open the lock .*grove_no_such_lock.*No such file/);
    await expect(lockForRestore(groveNetlock, netnsPath(`${netns}-gone`))).rejects.toThrow(/cannot open the netns .*-gone/);
    expect(await lockTables()).toHaveLength(1);
    expect(await sends()).toBe(false);
  });

  it('is gone after a restore that failed', async () => {
    await lockForRestore(groveNetlock, netnsPath(netns));
    await unlockRestore(groveNetlock, netnsPath(netns));
    expect(await lockTables()).toEqual([]);
    expect(await sends()).toBe(true);
  });
});
