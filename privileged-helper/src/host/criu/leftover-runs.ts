// CRIU runs that a killed helper left behind. A dump outlives its caller: it
// finishes its freeze and lets the tree run again (killed in the freeze, it
// would leave its parasite in the tree's processes), then ends by itself,
// its twins with it (criu-patches/0023). A restore whose caller is gone
// makes a tree no one will adopt. Start-up waits for the dumps and kills
// the restores before it looks at any branch, so that no operation of the
// new helper meets a tree that an old CRIU still holds.
//
// They are found on /proc by what they are, not by a record made when they
// started: a record is made after the start, and a helper killed in between
// would leave a run no record names.
import { readdir, readFile, readlink } from 'node:fs/promises';
import { pidNamespace, signalIfSame, startTime, waitGone } from '../proc.js';

/** A dump that is still running this long after the helper's start is stuck: it is killed, whatever it leaves. */
const DUMP_END_WAIT_MS = 60_000;

interface LeftoverRun {
  pid: number;
  start: number;
  command: 'dump' | 'restore';
  imagesDir: string;
}

/** Ends every CRIU run (of `binary`) whose images are under one of `dirs` (this instance's), and says what it did. */
export async function endLeftoverRuns(binary: string, dirs: readonly string[], log: (msg: string) => void): Promise<void> {
  const runs = await leftoverRuns(binary, dirs);
  for (const r of runs.filter((r) => r.command === 'restore')) {
    log(`killing a restore the last helper left (pid ${r.pid}, images ${r.imagesDir})`);
    await signalIfSame(r.pid, r.start, 'SIGKILL');
  }
  const deadline = Date.now() + DUMP_END_WAIT_MS;
  for (const r of runs.filter((r) => r.command === 'dump')) {
    log(`waiting for a dump the last helper left to end (pid ${r.pid}, images ${r.imagesDir})`);
    if (await waitGone(r.pid, r.start, Math.max(0, deadline - Date.now()))) continue;
    log(`killing the dump ${r.pid}: it did not end within ${DUMP_END_WAIT_MS / 1000} s`);
    await signalIfSame(r.pid, r.start, 'SIGKILL');
  }
  for (const r of runs) await waitGone(r.pid, r.start, 10_000);
}

async function leftoverRuns(binary: string, dirs: readonly string[]): Promise<LeftoverRun[]> {
  const ownNs = await pidNamespace(process.pid);
  const found: LeftoverRun[] = [];
  for (const entry of (await readdir('/proc')).filter((e) => /^\d+$/.test(e))) {
    const pid = Number(entry);
    // A branch's process may name itself anything; only a CRIU of ours, in the host's pid namespace, is one.
    // Each may exit while it is looked at: it is then no leftover.
    if ((await readlink(`/proc/${pid}/exe`).catch(() => null)) !== binary || (await pidNamespace(pid)) !== ownNs) continue;
    const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).split('\0');
    const command = argv[1];
    const at = argv.indexOf('--images-dir');
    const imagesDir = at < 0 ? '' : (argv[at + 1] ?? '');
    const start = await startTime(pid);
    if ((command !== 'dump' && command !== 'restore') || start === null || !dirs.some((d) => imagesDir.startsWith(`${d}/`))) continue;
    found.push({ pid, start, command, imagesDir });
  }
  return found;
}
