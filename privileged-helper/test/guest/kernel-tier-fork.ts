// The helper itself forking and rolling back through the kernel tier. It runs
// inside kernel/helper-test.sh's qemu guest, the one place here where
// grove_share can be loaded: a real helper (its own instance, as in the
// system tests) loads the module it is given, builds the desktop image,
// starts a desktop, forks it, forks a child and rolls back. A process in the desktop
// holds 64 MiB of random bytes; through /proc this checks that the children
// and the rolled-back tree hold the fork point's bytes in the source's very
// frames, not KSM's, and that a write on one side stays on that side.
//   node --import tsx kernel-tier-fork.ts MODULE.ko
// Prints one line per check and ends with GROVE-HELPER-GUEST: PASS or FAIL.
import { open, readFile } from 'node:fs/promises';
import { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { purge, startHelper, tail, testInstance } from '../system/helper-process.js';
import { pidNamespaceOf, processesInPidNs } from '../system/leftovers.js';

const PAGE = 4096;
const HELD_BYTES = 64 * 2 ** 20;
/** Pages a child may hold apart from the source's (python's own bookkeeping next to the buffer, at most). */
const SLACK_PAGES = 16;

/** Holds HELD_BYTES of random bytes at a fixed address, says where, and sleeps. */
const HOLDER = `
import ctypes, os, time
buf = bytearray(os.urandom(${HELD_BYTES}))
addr = ctypes.addressof((ctypes.c_char * len(buf)).from_buffer(buf))
with open('/root/held.tmp', 'w') as f:
    f.write('%d %d' % (addr, len(buf)))
os.rename('/root/held.tmp', '/root/held')
while True:
    time.sleep(3600)
`;

let failures = 0;
function check(ok: boolean, what: string, detail = ''): void {
  if (!ok) failures++;
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}${detail ? ` (${detail})` : ''}`);
}

/** The host pid of the holder process in a workspace, and where its bytes are. */
interface Held {
  pid: number;
  address: number;
  pages: number;
}

async function findHeld(client: HelperClient, ws: Workspace): Promise<Held> {
  const where = await client.request('exec.run', { workspace: ws.id, argv: ['cat', '/root/held'], timeoutMs: 60_000 });
  const [address, length] = where.stdout.trim().split(' ').map(Number);
  for (const pid of await processesInPidNs(await pidNamespaceOf(ws.pid!))) {
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmdline.includes('/root/holder.py')) return { pid, address: address!, pages: Math.ceil(length! / PAGE) };
  }
  throw new Error(`no holder process in '${ws.name}'`);
}

/** The physical frame of each page of the held bytes (0: not present). Root reads real frame numbers. */
async function framesOf(held: Held): Promise<bigint[]> {
  const file = await open(`/proc/${held.pid}/pagemap`, 'r');
  try {
    const buf = Buffer.alloc(held.pages * 8);
    await file.read(buf, 0, buf.length, Math.floor(held.address / PAGE) * 8);
    return Array.from({ length: held.pages }, (_, i) => {
      const entry = buf.readBigUInt64LE(i * 8);
      return entry >> 63n ? entry & ((1n << 55n) - 1n) : 0n;
    });
  } finally {
    await file.close();
  }
}

/** How many frames KSM merged (kpageflags bit 21): sharing that is KSM's, not the tier's. */
async function ksmFrames(frames: bigint[]): Promise<number> {
  const file = await open('/proc/kpageflags', 'r');
  try {
    let ksm = 0;
    const entry = Buffer.alloc(8);
    for (const frame of frames) {
      if (frame === 0n) continue;
      await file.read(entry, 0, 8, Number(frame) * 8);
      if ((entry.readBigUInt64LE() >> 21n) & 1n) ksm++;
    }
    return ksm;
  } finally {
    await file.close();
  }
}

async function readHeld(held: Held, offset: number, length: number): Promise<Buffer> {
  const file = await open(`/proc/${held.pid}/mem`, 'r');
  try {
    const buf = Buffer.alloc(length);
    await file.read(buf, 0, length, held.address + offset);
    return buf;
  } finally {
    await file.close();
  }
}

/** Writes into the process's memory as the kernel's ptrace access does: a copy-on-write fault on its side. */
async function writeHeld(held: Held, offset: number, bytes: Buffer): Promise<void> {
  const file = await open(`/proc/${held.pid}/mem`, 'r+');
  try {
    await file.write(bytes, 0, bytes.length, held.address + offset);
  } finally {
    await file.close();
  }
}

function sameFrames(a: bigint[], b: bigint[]): number {
  return a.filter((frame, i) => frame !== 0n && frame === b[i]).length;
}

async function startHolder(client: HelperClient, ws: Workspace): Promise<Held> {
  await client.request('exec.run', { workspace: ws.id, argv: ['tee', '/root/holder.py'], stdin: HOLDER, timeoutMs: 60_000 });
  const res = await client.request('exec.run', {
    workspace: ws.id,
    argv: [
      'sh',
      '-c',
      'setsid python3 /root/holder.py </dev/null >/dev/null 2>&1 & for i in $(seq 600); do [ -f /root/held ] && exit 0; sleep 0.5; done; exit 1',
    ],
    timeoutMs: 300_000,
  });
  if (res.exitCode !== 0) throw new Error(`the holder did not start: ${res.stderr}`);
  return findHeld(client, ws);
}

/** The fork of a desktop whose holder's bytes the children must share. */
async function forkShares(client: HelperClient, source: Workspace, held: Held): Promise<Workspace[]> {
  const before = await framesOf(held);
  const fingerprint = await readHeld(held, 0, HELD_BYTES);
  const anonBefore = await anonymousMiB();
  const report = await client.request('branch.fork', { workspace: source.id, copies: 2 });
  const timings = Object.entries(report.timings).map(([stage, ms]) => `${stage} ${Math.round(ms)}`);
  console.log(
    `# fork into 2 (ms, emulated): ${timings.join(', ')}; the guest's anonymous memory ${anonBefore} MiB before, +${(await anonymousMiB()) - anonBefore} MiB after`,
  );
  check(report.memory.startsWith('shared copy-on-write'), "the fork's report says the children's memory is shared by the kernel tier", report.memory);
  check(sameFrames(before, await framesOf(held)) >= held.pages - SLACK_PAGES, 'the source keeps its frames through the fork');
  const childrenHeld: Held[] = [];
  for (const child of report.children) {
    const childHeld = await findHeld(client, child);
    childrenHeld.push(childHeld);
    const frames = await framesOf(childHeld);
    const shared = sameFrames(before, frames);
    check(shared >= held.pages - SLACK_PAGES, `'${child.name}' holds the fork point's bytes in the source's own frames`, `${shared} of ${held.pages} pages`);
    check((await ksmFrames(frames)) === 0, `none of '${child.name}''s shared frames is KSM's`);
    check((await readHeld(childHeld, 0, HELD_BYTES)).equals(fingerprint), `'${child.name}' reads the fork point's bytes`);
  }
  const [first, second] = childrenHeld;
  const written = Buffer.from('written by the first child only');
  await writeHeld(first!, PAGE * 7, written);
  check((await readHeld(first!, PAGE * 7, written.length)).equals(written), 'a write in a child is seen there');
  check(
    (await readHeld(held, PAGE * 7, written.length)).equals(fingerprint.subarray(PAGE * 7, PAGE * 7 + written.length)),
    "the child's write is not seen in the source",
  );
  check(
    (await readHeld(second!, PAGE * 7, written.length)).equals(fingerprint.subarray(PAGE * 7, PAGE * 7 + written.length)),
    "the child's write is not seen in its sibling",
  );
  check(
    (await framesOf(first!))[7] !== before[7] && (await framesOf(held))[7] === before[7],
    "the written page was copied on write, on the child's side only",
    `source frame ${before[7]}`,
  );
  return report.children;
}

/**
 * A fork of a child (its memory itself attached from a capture), whose
 * parent is then discarded: the grandchild holds the parent's frames, its
 * write included, and keeps them when the parent is gone.
 */
async function grandchildShares(client: HelperClient, child: Workspace): Promise<void> {
  const parentHeld = await findHeld(client, child);
  const parentFrames = await framesOf(parentHeld);
  const parentBytes = await readHeld(parentHeld, 0, HELD_BYTES);
  const report = await client.request('branch.fork', { workspace: child.id, copies: 1 });
  check(report.memory.startsWith('shared copy-on-write'), "a child's fork is shared too", report.memory);
  const grandchild = report.children[0]!;
  const held = await findHeld(client, grandchild);
  const shared = sameFrames(parentFrames, await framesOf(held));
  check(
    shared >= parentHeld.pages - SLACK_PAGES,
    `'${grandchild.name}' holds its parent's frames, the page its parent wrote included`,
    `${shared} of ${parentHeld.pages} pages`,
  );
  await client.request('workspace.delete', { workspace: child.id });
  check((await readHeld(held, 0, HELD_BYTES)).equals(parentBytes), `'${grandchild.name}' reads its parent's bytes after its parent was discarded`);
  await client.request('workspace.delete', { workspace: grandchild.id });
}

/** A person's checkpoint, a write in the source, and a rollback that must attach the checkpoint's frames. */
async function rollbackShares(client: HelperClient, source: Workspace, held: Held): Promise<void> {
  const atCheckpoint = await readHeld(held, 0, HELD_BYTES);
  const version = await client.request('branch.checkpoint', { workspace: source.id, label: 'guest' });
  await writeHeld(held, 0, Buffer.from('written after the checkpoint'));
  const framesBefore = await framesOf(held);
  const t0 = performance.now();
  const rolledBack = await client.request('branch.rollback', { workspace: source.id, version: version.id });
  console.log(`# rollback: ${Math.round(performance.now() - t0)} ms`);
  const restored = await findHeld(client, rolledBack);
  check((await readHeld(restored, 0, HELD_BYTES)).equals(atCheckpoint), "the rolled-back tree reads the checkpoint's bytes, not the later write");
  const shared = sameFrames(framesBefore, await framesOf(restored));
  // Page 0 was written after the checkpoint: the capture kept its old frame, the rest are the very frames the source had.
  check(shared >= held.pages - SLACK_PAGES, "the rollback attached the checkpoint's frames instead of copying them", `${shared} of ${held.pages} pages`);
}

/** Fields of the guest's /proc/meminfo, in MiB. */
async function meminfoMiB(fields: readonly string[]): Promise<number[]> {
  const info = await readFile('/proc/meminfo', 'utf8');
  return fields.map((field) => Math.round(Number(new RegExp(`^${field}:\\s+(\\d+)`, 'm').exec(info)?.[1] ?? NaN) / 1024));
}

async function anonymousMiB(): Promise<number> {
  return (await meminfoMiB(['AnonPages']))[0]!;
}

async function guestMemory(): Promise<string> {
  const fields = ['MemTotal', 'MemAvailable', 'AnonPages', 'Shmem', 'Committed_AS', 'CommitLimit'];
  const values = await meminfoMiB(fields);
  return `${fields.map((f, i) => `${f} ${values[i]}`).join(', ')} (MiB)`;
}

/** A CRIU log's lines up to its first error: what it was doing when it failed. */
function leadUpToFirstError(log: string): string {
  const lines = log.split('\n');
  const first = lines.findIndex((line) => line.startsWith('Error'));
  return (first < 0 ? lines.slice(-30) : lines.slice(Math.max(0, first - 30), first + 1)).join('\n');
}

async function main(): Promise<void> {
  const [module] = process.argv.slice(2);
  if (!module) throw new Error('usage: kernel-tier-fork.ts MODULE.ko');
  const t = testInstance('kg');
  t.env.GROVE_KERNEL_MODULE = module;
  await startHelper(t);
  const client = await HelperClient.connect({ socketPath: t.socketPath, name: 'kernel-guest', kind: 'test' });
  try {
    const doctor = await client.request('host.doctor', {});
    const tier = doctor.checks.find((c) => c.name === 'kernel tier');
    check(tier?.detail.includes('grove_share loaded') === true, 'the helper loaded the module it was given', tier?.detail);
    await client.subscribe(['progress']);
    client.on('progress', (p) => console.log(`# [${p.stage}] ${p.message}`));
    await client.request('image.build', { name: 'desktop' });
    const source = await client.request('workspace.create', { name: 'source' });
    const held = await startHolder(client, source);
    console.log(`# the source's holder: pid ${held.pid}, ${held.pages} pages`);
    const [first, second] = await forkShares(client, source, held);
    await grandchildShares(client, first!);
    await client.request('workspace.delete', { workspace: second!.id });
    await rollbackShares(client, source, held);
  } catch (err) {
    check(false, 'the run went through', (err as Error).stack ?? String(err));
    console.log(tail(t.logFile, 40));
    console.log(`# guest memory: ${await guestMemory()}`);
    // The guest and its files end with the run: what failed is printed here or nowhere.
    const criuLog = /\(log: ([^)]+)\)/.exec((err as Error).message)?.[1];
    if (criuLog) console.log(leadUpToFirstError(await readFile(criuLog, 'utf8').catch(() => '(no log)')));
  } finally {
    client.close();
    await purge(t).catch((err: Error) => check(false, 'the instance was purged', err.message));
  }
}

await main().catch((err: Error) => check(false, 'the helper started', `${err.message}`));
console.log(`GROVE-HELPER-GUEST: ${failures === 0 ? 'PASS' : 'FAIL'}`);
