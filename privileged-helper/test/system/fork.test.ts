// Live forks of a running desktop, for real: CRIU dump + restore into new
// namespaces, versions and rollback, promote, discard, depth, and every fault
// injection stage leaving the source unharmed and nothing behind.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { access, readdir, readFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import { execa } from 'execa';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import { ForkStage, type Workspace } from '../../src/protocol/entities.js';
import type { GroveError } from '../../src/protocol/wire.js';
import { thawSignalDir } from '../../src/host/criu/criu.js';
import { commandsOf } from './host-processes.js';
import { linkNames, mountPointsUnder, netnsNames, pidNamespaceOf, processesInPidNs } from './leftovers.js';
import { isMounted, onTmpfs } from '../../src/host/mounts.js';
import { VNC_PORT } from '../../src/workspaces/runtime.js';
import { connect, createWorkspace, fullPool, hostPort, httpGet, instance, sh, track, vncSocket, waitFor } from './support.js';
import { launchBrowser, watchDesktop } from './vnc-viewer.js';

/** A loopback service whose only state is in memory: a counter. */
const COUNTER = `
import http.server
count = 0
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global count
        if self.path == '/inc':
            count += 1
        body = str(count).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
http.server.HTTPServer(('0.0.0.0', 3000), Handler).serve_forever()
`;

const counter = (ws: Workspace, path = '/') => httpGet(hostPort(ws, 3000), 30_000, path);

async function startCounter(client: HelperClient, ws: Workspace): Promise<void> {
  await client.request('exec.run', { workspace: ws.id, argv: ['tee', '/root/counter.py'], stdin: COUNTER });
  await sh(client, ws, 'setsid python3 /root/counter.py </dev/null >/dev/null 2>&1 &');
  expect(await counter(ws)).toBe('0');
}

/** How many connections the host has open to a branch's VNC server. */
async function vncConnections(ws: Workspace): Promise<number> {
  const { stdout } = await execa('ss', ['-Htn', 'state', 'established', 'dst', `${ws.address}:${VNC_PORT}`]);
  return stdout.split('\n').filter(Boolean).length;
}

/** The branches whose VNC server gains a connection while a viewer is connected to `socket`. */
async function reachedThrough(socket: string, candidates: Workspace[]): Promise<string[]> {
  const before = await Promise.all(candidates.map(vncConnections));
  const viewer = net.connect(socket);
  try {
    await once(viewer, 'data'); // the server's banner, relayed
    const during = await Promise.all(candidates.map(vncConnections));
    return candidates.filter((_, i) => during[i]! > before[i]!).map((c) => c.name);
  } finally {
    viewer.destroy();
  }
}

/** A fork's CRIU dump in SCRATCH, as soon as one runs; null if none did within a minute. */
async function dumpIn(scratch: string): Promise<{ pid: number; images: string } | null> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    for (const dir of await readdir(scratch).catch(() => [])) {
      const images = `${scratch}/${dir}`;
      if (!dir.startsWith('fork-') || dir.endsWith('.thaw')) continue;
      const dump = (await commandsOf(images)).find((p) => p.argv[1] === 'dump');
      if (dump) return { pid: dump.pid, images };
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  return null;
}

/**
 * Whether a fork's first dump try failed within a minute: its log (CRIU's
 * -o, in the images dir) was there, then gone with the images dir emptied for
 * the next try (host/criu/criu.ts). Watched through that file alone: a try
 * that fails lasts less than a look through every process takes on a busy
 * machine.
 */
async function firstDumpTryFailed(scratch: string): Promise<boolean> {
  const deadline = Date.now() + 60_000;
  let images: string | null = null;
  while (Date.now() < deadline) {
    if (images && !existsSync(`${images}/dump.log`)) return existsSync(images);
    if (!images) {
      const dir = (await readdir(scratch).catch(() => [])).find((d) => d.startsWith('fork-') && existsSync(`${scratch}/${d}/dump.log`));
      images = dir === undefined ? null : `${scratch}/${dir}`;
    }
    await new Promise((r) => setTimeout(r, 2));
  }
  return false;
}

/**
 * Stops the fork's CRIU dump the moment its tree runs again (its post-resume
 * action leaves grove-thawed next to the images dir), before or just after
 * it has listed the pages its twins keep; null if no dump got there within a
 * minute.
 */
async function stopDumpOnceThawed(scratch: string): Promise<{ pid: number; images: string } | null> {
  const dump = await dumpIn(scratch);
  if (!dump) return null;
  // Found, it is watched through its signal file alone: looking for it among the processes takes longer than it saves its pages.
  const thawed = `${thawSignalDir(dump.images)}/grove-thawed`;
  while (!existsSync(thawed)) {
    if (!existsSync(`/proc/${dump.pid}`)) return null;
    await new Promise((r) => setImmediate(r));
  }
  process.kill(dump.pid, 'SIGSTOP');
  return dump;
}

/**
 * Holds a message on a socket that asks for its senders' credentials and
 * reads it only once told to (SIGUSR1).
 */
const CREDENTIALS_READER = `
import signal, socket
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1})
sender, receiver = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
receiver.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
sender.send(b'waiting')
print('queued', flush=True)
signal.sigwait({signal.SIGUSR1})
print('read', receiver.recv(64), flush=True)
signal.pause()
`;

async function fileIn(client: HelperClient, ws: Workspace, file: string): Promise<string | null> {
  const res = await client.request('exec.run', { workspace: ws.id, argv: ['cat', file] });
  return res.exitCode === 0 ? res.stdout : null;
}

describe('live fork of a running desktop', () => {
  let client: HelperClient;
  let browser: Browser;
  let source: Workspace;
  let children: Workspace[] = [];
  const made: string[] = [];

  beforeAll(async () => {
    client = await connect();
    browser = await launchBrowser();
    source = await createWorkspace(client, 'src');
    made.push(source.id);
    await startCounter(client, source);
    for (let i = 0; i < 5; i++) await counter(source, '/inc');
    await sh(client, source, 'echo before-fork > /root/before.txt; echo system-before > /srv/before.txt');
    // The fork point must have Chromium's window up, so the children can show it.
    const { server } = await watchDesktop(browser, vncSocket(source));
    server.close();
  });

  afterAll(async () => {
    await browser?.close();
    for (const id of made.reverse()) await client.request('workspace.delete', { workspace: id }).catch(() => undefined);
    client.close();
  });

  it('forks into 3 live siblings while the source keeps running', async () => {
    const report = await client.request('branch.fork', { workspace: source.id, copies: 3 });
    children = await Promise.all(report.children.map(track));
    made.push(...children.map((c) => c.id));
    expect(children.map((c) => c.name)).toEqual(['src-1', 'src-2', 'src-3']);
    expect(report.timings.dump).toBeGreaterThan(0);
    expect(report.timings.sourceFrozen).toBeGreaterThan(0);
    expect(report.timings.firstFrame).toBeGreaterThan(0);
    // Without the kernel tier in use, the report says the memory was copied, and why.
    expect(report.memory).toMatch(/^copied by CRIU from the dump \(KSM merges the copies later\): \S/);

    const after = await client.request('workspace.get', { workspace: source.id });
    expect(after).toMatchObject({ state: 'running', pid: source.pid });
    for (const child of children) {
      expect(child).toMatchObject({ state: 'running', parent: source.id, tree: source.tree, main: false });
      expect(child.pid).not.toBe(source.pid);
      expect(await pidNamespaceOf(child.pid!)).not.toBe(await pidNamespaceOf(source.pid!));
      expect(hostPort(child, 3000)).not.toBe(hostPort(source, 3000));
      expect((await sh(client, child, 'hostname')).trim()).toBe(child.name);
      expect((await sh(client, child, 'cat /etc/machine-id')).trim()).toBe(child.machineId);
    }
    expect(new Set(children.map((c) => c.machineId)).size).toBe(3);
  });

  it('marks the source and every restored child mergeable for KSM (memory sharing)', async () => {
    for (const ws of [source, ...children]) {
      expect(await readFile(`/proc/${ws.pid}/ksm_stat`, 'utf8')).toContain('ksm_merge_any: yes');
    }
    expect(await readFile('/sys/kernel/mm/ksm/run', 'utf8')).toBe('1\n');
  });

  it("continues the service's in-memory state in each child, then diverges", async () => {
    for (const ws of [source, ...children]) expect(await counter(ws)).toBe('5');
    await counter(children[0]!, '/inc');
    await counter(children[0]!, '/inc');
    await counter(children[1]!, '/inc');
    await counter(source, '/inc');
    await counter(source, '/inc');
    await counter(source, '/inc');
    expect(await counter(children[0]!)).toBe('7');
    expect(await counter(children[1]!)).toBe('6');
    expect(await counter(children[2]!)).toBe('5');
    expect(await counter(source)).toBe('8');
  });

  it("has the source's files as of the fork, and keeps later writes to itself", async () => {
    // /root is the branch's bound home, the rest its overlay upper: both are the branch's own.
    await sh(client, source, 'echo after-fork > /root/after.txt; echo system-after > /srv/before.txt');
    await sh(client, children[0]!, 'echo mine > /root/child0.txt; echo mine > /srv/child0.txt; echo changed > /etc/motd');
    for (const child of children) {
      expect(await fileIn(client, child, '/root/before.txt')).toBe('before-fork\n');
      expect(await fileIn(client, child, '/srv/before.txt')).toBe('system-before\n');
      expect(await fileIn(client, child, '/root/after.txt')).toBeNull();
    }
    for (const other of [source, children[1]!]) {
      expect(await fileIn(client, other, '/root/child0.txt')).toBeNull();
      expect(await fileIn(client, other, '/srv/child0.txt')).toBeNull();
      expect(await fileIn(client, other, '/etc/motd')).not.toBe('changed\n');
    }
    const diff = await client.request('branch.diff', { workspace: children[0]!.id });
    expect(diff.added).toContain('/root/child0.txt');
    expect(diff.added).not.toContain('/root/after.txt');
    expect(diff.removed).toContain('/root/after.txt'); // present in the parent, not in the child
    expect(diff.added).toContain('/srv/child0.txt');
    expect(diff.changed).toEqual(expect.arrayContaining(['/etc/motd', '/srv/before.txt']));
  });

  it('shares the page cache of unchanged files among siblings (one read-only lower)', async () => {
    const file = '/usr/lib/python3.11/pydoc_data/topics.py'; // ~750 KiB that nothing in the desktop reads
    const cached = async (ws: Workspace) => Number((await sh(client, ws, `fincore --bytes --noheadings --output RES ${file}`)).trim());
    await sh(client, children[1]!, `dd if=${file} iflag=nocache count=0 status=none`);
    expect(await cached(children[2]!)).toBe(0);
    await sh(client, children[1]!, `cat ${file} >/dev/null`);
    const size = Number((await sh(client, source, `stat -c %s ${file}`)).trim());
    // Read by one branch, cached for all: the source and a sibling see the pages it read (nearly all: this VM
    // takes a few pages of cache back now and then, and had once 729088 of 756209 bytes left).
    for (const ws of [source, children[2]!]) expect(await cached(ws)).toBeGreaterThanOrEqual(size * 0.9);
  });

  it('shows each child’s own desktop with Chromium’s window on its own desktop socket', async () => {
    expect(new Set([source, ...children].map(vncSocket)).size).toBe(4);
    for (const child of children) {
      const { server, pixels } = await watchDesktop(browser, vncSocket(child));
      server.close();
      expect(pixels).toBeGreaterThan(50_000);
    }
  });

  it("rolls a branch back to a version's files and process state", async () => {
    const child = children[0]!;
    await sh(client, child, 'echo v1 > /root/state.txt; echo shm-v1 > /dev/shm/grove-marker');
    const version = await client.request('branch.checkpoint', { workspace: child.id, label: 'v1' });
    expect(await counter(child)).toBe('7'); // a checkpoint does not stop the branch
    await sh(client, child, 'echo v2 > /root/state.txt; echo shm-v2 > /dev/shm/grove-marker');
    await counter(child, '/inc');
    expect(await counter(child)).toBe('8');

    const rolled = await client.request('branch.rollback', { workspace: child.id, version: version.id });
    await track(rolled);
    expect(rolled).toMatchObject({ state: 'running', version: version.id, name: child.name });
    expect(hostPort(rolled, 3000)).toBe(hostPort(child, 3000));
    expect(await counter(rolled)).toBe('7');
    expect(await fileIn(client, rolled, '/root/state.txt')).toBe('v1\n');
    expect((await sh(client, rolled, 'hostname')).trim()).toBe(child.name);
    // /dev/shm is a tmpfs of the branch's: CRIU saves its contents with the processes.
    expect(await fileIn(client, rolled, '/dev/shm/grove-marker')).toBe('shm-v1\n');
    children[0] = rolled;
  });

  it('forks a fork of a fork of a fork (depth 3), each child into files of its own, each fork keeping its fork point', async () => {
    const branchFiles = `${instance().stateDir}/pool/workspaces`;
    const forkPoints = async () => (await readdir(branchFiles)).filter((f) => f.startsWith('.fork-point-'));
    const before = await forkPoints();
    let parent = children[0]!;
    for (let depth = 1; depth <= 3; depth++) {
      const report = await client.request('branch.fork', { workspace: parent.id, copies: 1, names: [`deep-${depth}`] });
      const child = await track(report.children[0]!);
      made.push(child.id);
      // The child's files are writable; the fork point they are a snapshot of is kept, read-only (the merge base).
      expect((await execa('btrfs', ['property', 'get', '-ts', `${branchFiles}/${child.id}`, 'ro'])).stdout.trim()).toBe('ro=false');
      const kept = (await forkPoints()).filter((f) => !before.includes(f));
      expect(kept).toHaveLength(depth);
      for (const f of kept) expect((await execa('btrfs', ['property', 'get', '-ts', `${branchFiles}/${f}`, 'ro'])).stdout.trim()).toBe('ro=true');
      expect(child.parent).toBe(parent.id);
      expect(child.tree).toBe(source.tree);
      expect(await counter(child)).toBe(await counter(parent));
      parent = child;
    }
    await counter(parent, '/inc');
    expect(await fileIn(client, parent, '/root/before.txt')).toBe('before-fork\n');
  });

  it('promotes a branch: it takes over the main line’s stable host ports and desktop socket', async () => {
    const child = children[1]!;
    const stable = hostPort(source, 3000);
    const mainDesktop = vncSocket(source);
    const promoted = await client.request('branch.promote', { workspace: child.id, oldMain: 'keep' });
    expect(promoted.main).toBe(true);
    expect(hostPort(promoted, 3000)).toBe(stable);
    expect(vncSocket(promoted)).toBe(mainDesktop);
    expect(await httpGet(stable)).toBe('6'); // the promoted child's counter, not the source's 8
    const oldMain = await client.request('workspace.get', { workspace: source.id });
    expect(oldMain.main).toBe(false);
    expect(hostPort(oldMain, 3000)).toBe(hostPort(child, 3000));
    expect(vncSocket(oldMain)).not.toBe(mainDesktop);
    expect(await counter(oldMain)).toBe('8');
    // A viewer pointed at the main line sees the promoted branch; the old main keeps a desktop of its own.
    expect(await reachedThrough(mainDesktop, [promoted, oldMain])).toEqual([promoted.name]);
    expect(await reachedThrough(vncSocket(oldMain), [promoted, oldMain])).toEqual([oldMain.name]);
  });

  it("dumps into a tmpfs of the helper's own, and leaves nothing of the fork there", async () => {
    const scratch = `${instance().runDir}/scratch`;
    expect(await mountPointsUnder(scratch)).toEqual([scratch]);
    expect(await onTmpfs(scratch)).toBe(true);
    expect(await readdir(scratch)).toEqual([]);
  });

  it('discards a branch and leaves none of its host objects behind', async () => {
    const child = children[2]!;
    const t = instance();
    const pidNs = await pidNamespaceOf(child.pid!);
    await client.request('workspace.delete', { workspace: child.id });
    expect(await netnsNames()).not.toContain(`grove-${t.instance}-${child.id}`);
    expect((await linkNames()).some((l) => l === `gv${t.instance}${child.id}`)).toBe(false);
    expect(await processesInPidNs(pidNs)).toEqual([]);
    await expect(access(`${t.stateDir}/pool/workspaces/${child.id}`)).rejects.toThrow();
    expect(await mountPointsUnder(`${t.runDir}-roots/${child.id}`)).toEqual([]);
    await expect(access(`${t.runDir}-roots/${child.id}`)).rejects.toThrow();
  });
});

describe('a failed fork', () => {
  let client: HelperClient;
  let source: Workspace;

  beforeAll(async () => {
    client = await connect();
    source = await createWorkspace(client, 'fragile');
    await startCounter(client, source);
    await counter(source, '/inc');
    await sh(client, source, 'echo original > /root/keep.txt');
  });

  afterAll(async () => {
    await client.request('workspace.delete', { workspace: source.id }).catch(() => undefined);
    client.close();
  });

  /** What a failed fork must leave as it was: the branches, their netns and subvolumes, an empty scratch space, the source. */
  async function expectUndone(failing: () => Promise<void>): Promise<void> {
    const t = instance();
    // The instance's netns but those of the networks prepared ahead, which a fork takes from and which refill.
    const branchNetns = async () => {
      const prepared = new Set((await fullPool(client)).map((id) => `grove-${t.instance}-${id}`));
      return (await netnsNames()).filter((n) => n.startsWith(`grove-${t.instance}-`) && !prepared.has(n)).sort();
    };
    const netnsBefore = await branchNetns();
    const branchesBefore = (await client.request('workspace.list', {})).map((w) => w.id).sort();
    const subvolumesBefore = (await readdir(`${t.stateDir}/pool/workspaces`)).sort();
    await failing();
    expect((await client.request('workspace.list', {})).map((w) => w.id).sort()).toEqual(branchesBefore);
    expect(await branchNetns()).toEqual(netnsBefore);
    expect((await readdir(`${t.stateDir}/pool/workspaces`)).sort()).toEqual(subvolumesBefore);
    expect(await readdir(`${t.runDir}/scratch`)).toEqual([]);
    const after = await client.request('workspace.get', { workspace: source.id });
    expect(after).toMatchObject({ state: 'running', pid: source.pid });
    expect(await counter(source)).toBe('1');
    expect(await fileIn(client, source, '/root/keep.txt')).toBe('original\n');
  }

  /** A fork into `copies` made to fail after `stage` fails with that fault, and is undone. */
  async function expectFaultUndone(copies: number, stage: ForkStage): Promise<void> {
    await expectUndone(async () => {
      const failure = await client.request('branch.fork', { workspace: source.id, copies, faultAt: stage }).then(
        () => null,
        (err: unknown) => err as GroveError,
      );
      // The message whole (an undo that failed says why in it), not a match that prints it cut short.
      expect(failure?.message).toContain(`fault injected after stage '${stage}'`);
      expect(failure?.code).toBe('E_HOST');
    });
  }

  it.each(ForkStage.options)('undoes everything when it fails after %s, and the source runs on unchanged', (stage) => expectFaultUndone(2, stage));

  it('undoes the networks of children made at their turn (more children than it restores at once), and the source runs on', async () => {
    // The helper restores as many at once as there are cores.
    await expectFaultUndone(os.availableParallelism() + 1, 'commit');
  });

  it("goes on undoing the other children when one cannot be discarded, and says both the fork's failure and the undo's", async () => {
    const t = instance();
    const copies = os.availableParallelism() + 1;
    const names = Array.from({ length: copies }, (_, i) => `held-${i + 1}`);
    // Undone after the newest and before the oldest: an undo that stopped at it would leave the oldest behind.
    const held = names.at(-2)!;
    await expectUndone(async () => {
      const forking = client.request('branch.fork', { workspace: source.id, copies, names, faultAt: 'commit' });
      forking.catch(() => undefined);
      // A person's shell whose working directory is in the child's files keeps them from being unmounted.
      let root = '';
      await waitFor(
        `${held}'s files to be mounted`,
        async () => {
          const child = (await client.request('workspace.list', {})).find((w) => w.name === held);
          root = child ? `${t.runDir}-roots/${child.id}/root` : '';
          return root !== '' && (await isMounted(root));
        },
        60_000,
      );
      const shell = spawn('sleep', ['600'], { cwd: root, stdio: 'ignore' });
      try {
        const failure = await forking.then(
          () => null,
          (err: unknown) => err as GroveError,
        );
        expect(failure?.code).toBe('E_HOST');
        expect(failure?.message).toMatch(
          new RegExp(
            `^fault injected after stage 'commit'; undoing it failed too: discarding '${held}' failed \\(.*busy.*\\); it is stopped, with its files: discard it again$`,
          ),
        );
        const left = (await client.request('workspace.list', {})).filter((w) => names.includes(w.name));
        expect(left.map((w) => ({ name: w.name, state: w.state }))).toEqual([{ name: held, state: 'stopped' }]);
      } finally {
        shell.kill();
      }
      await once(shell, 'exit');
      await client.request('workspace.delete', { workspace: held });
    });
  });

  it('keeps its children its own until it is over: a discard of one announced mid-fork waits, and the undo removes it alone', async () => {
    // More children than it restores at once: the first are announced running while the last still restores.
    const copies = os.availableParallelism() + 1;
    const names = Array.from({ length: copies }, (_, i) => `own-${i + 1}`);
    const watcher = await connect('fork-watcher');
    try {
      await watcher.subscribe(['workspace.changed']);
      const announced = new Promise<string>((resolve) =>
        watcher.on('workspace.changed', ({ workspace }) => {
          if (workspace.name === names[0] && workspace.state === 'running') resolve(workspace.id);
        }),
      );
      await expectUndone(async () => {
        const forking = client.request('branch.fork', { workspace: source.id, copies, names, faultAt: 'commit' });
        forking.catch(() => undefined);
        // A discard racing the fork's undo of the same child (as the exit watch did, seeing it killed) made the undo fail.
        const discarding = client.request('workspace.delete', { workspace: await announced });
        discarding.catch(() => undefined);
        const failure = await forking.then(
          () => null,
          (err: unknown) => err as GroveError,
        );
        expect(failure?.message).toBe("fault injected after stage 'commit'");
        await expect(discarding).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
        // Both failures are in the helper's log, with their codes, not only in the replies.
        const log = await readFile(instance().logFile, 'utf8');
        expect(log).toContain(`branch.fork ${source.id} by person root (uid 0) failed: E_HOST: fault injected after stage 'commit'`);
        expect(log).toMatch(/workspace\.delete [0-9a-f]{8} by person root \(uid 0\) failed: E_NOT_FOUND: no workspace/);
      });
    } finally {
      watcher.close();
    }
  });

  it("fails with the dump's error when CRIU dies after the source runs again, while the children restore", async () => {
    // The children's restores start at the thaw, wait for the dump's word that the pages are listed (criu-patches/0022) and read
    // them from its twins (0023): a dump that then dies, its twins with it, must fail them, whichever of the two they were doing.
    const t = instance();
    const logs = `${t.stateDir}/logs`;
    const logsBefore = new Set(await readdir(logs).catch(() => []));
    const atOnce = Math.min(2, os.availableParallelism()); // the helper restores as many at once as there are cores
    // 512 MiB more in the source keep the children's restores reading pages from the twins for a second or more: the dump
    // dies while they read, if it was not stopped before it listed the pages.
    const ballast = (
      await sh(
        client,
        source,
        `nohup python3 -c 'import os, time; held = os.urandom(512 << 20); print("held", flush=True); time.sleep(3600)' >/tmp/ballast.log 2>&1 & echo $!`,
      )
    ).trim();
    await waitFor('the ballast to be held', async () => (await fileIn(client, source, '/tmp/ballast.log')) === 'held\n', 60_000);
    try {
      await expectUndone(async () => {
        const forking = client.request('branch.fork', { workspace: source.id, copies: 2 });
        forking.catch(() => undefined);
        const dump = await stopDumpOnceThawed(`${t.runDir}/scratch`);
        expect(dump).not.toBeNull();
        // The dump cannot finish now: the children's restores must start without its pages.
        // CRIU opens its log in the restore's work dir (host/criu/criu.ts restoreWorkDir) as it starts.
        const restoring = async () => (await readdir(dump!.images)).filter((name) => existsSync(`${dump!.images}/${name}/restore.log`)).length;
        await waitFor("the children's restores to start", async () => (await restoring()) === atOnce, 60_000);
        process.kill(dump!.pid, 'SIGKILL');
        await expect(forking).rejects.toMatchObject({ code: 'E_HOST', message: expect.stringMatching(/^criu dump failed: killed by SIGKILL/) });
      });
    } finally {
      await sh(client, source, `kill ${ballast}`);
    }
    // Each restore failed for the dump's end, told by the helper or found in the twins gone, not by waiting out its time.
    const restoreLogs = (await readdir(logs)).filter((name) => name.startsWith('criu-restore-') && !logsBefore.has(name));
    expect(restoreLogs).toHaveLength(atOnce);
    for (const name of restoreLogs) {
      expect(await readFile(`${logs}/${name}`, 'utf8')).toMatch(
        /The dump's private pages were not saved: criu dump failed: killed by SIGKILL|The dump's twin \d+ of task \d+ is gone|Can't read (pages data|async pr bytes|mapping page)/,
      );
    }
  });

  it("tries the dump again while a process has not read a message with its sender's credentials, and says so once it never does", async () => {
    // Chromium's crash handler asks for its clients' credentials (SO_PASSCRED); CRIU can keep descriptors in flight, not those.
    const reader = '/root/credentials-reader.py';
    await client.request('exec.run', { workspace: source.id, argv: ['tee', reader], stdin: CREDENTIALS_READER });
    await sh(client, source, `setsid python3 ${reader} </dev/null >/tmp/reader.log 2>&1 &`);
    await waitFor('a message to wait for the reader', async () => (await fileIn(client, source, '/tmp/reader.log')) === 'queued\n', 30_000);
    const [readerPid] = (await commandsOf(reader)).filter((p) => p.argv[0] === 'python3').map((p) => p.pid);
    expect(readerPid).toBeDefined();
    try {
      // Never read: every try meets it, and the last one says what to do.
      await expectUndone(async () => {
        await expect(client.request('branch.fork', { workspace: source.id, copies: 1 })).rejects.toMatchObject({
          code: 'E_HOST',
          message: expect.stringMatching(/Control messages in queue.*credentials-reader\.py.*has not read a message/),
        });
      });
      // Read between two tries: the fork goes through.
      const forking = client.request('branch.fork', { workspace: source.id, copies: 1 });
      forking.catch(() => undefined);
      expect(await firstDumpTryFailed(`${instance().runDir}/scratch`)).toBe(true);
      process.kill(readerPid!, 'SIGUSR1');
      const { children } = await forking;
      for (const child of children) await client.request('workspace.delete', { workspace: child.id });
      expect(children).toHaveLength(1);
      expect(await fileIn(client, source, '/tmp/reader.log')).toBe("queued\nread b'waiting'\n");
    } finally {
      process.kill(readerPid!, 'SIGKILL');
    }
  });

  it("says which file a process maps past its end when the branch made the image's file shorter after the process mapped it", async () => {
    // The branch's copy of the file takes its path, the process keeps the image's; CRIU saves the mapping as of the path, and no restore can fill it.
    const licence = '/usr/share/common-licenses/GPL-3';
    const mapper = `import mmap, time
with open('${licence}', 'rb') as f:
    mapped = mmap.mmap(f.fileno(), 0, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
mapped[:] = b'x' * len(mapped)
print('mapped', len(mapped), flush=True)
time.sleep(3600)`;
    const pid = (await sh(client, source, `nohup python3 -c "${mapper}" >/tmp/mapper.log 2>&1 & echo $!`)).trim();
    try {
      await waitFor('the file to be mapped', async () => ((await fileIn(client, source, '/tmp/mapper.log')) ?? '').startsWith('mapped'), 30_000);
      await sh(client, source, `truncate -s 4096 ${licence}`);
      await expectUndone(async () => {
        await expect(client.request('branch.fork', { workspace: source.id, copies: 1 })).rejects.toMatchObject({
          code: 'E_HOST',
          message: expect.stringMatching(
            /^criu restore failed: Can't read pages data .*file size 0x1000\).* \(process \d+ of the restored tree\); a process maps \/usr\/share\/common-licenses\/GPL-3 past its end: .*restart that process/,
          ),
        });
      });
    } finally {
      await sh(client, source, `kill ${pid}`);
    }
    // Without that process, the fork goes through.
    const { children } = await client.request('branch.fork', { workspace: source.id, copies: 1 });
    for (const child of children) await client.request('workspace.delete', { workspace: child.id });
    expect(children).toHaveLength(1);
  });

  it('refuses fault injection on a helper that does not allow it', async () => {
    // This helper allows it (GROVE_FAULT_INJECTION=1); the switch itself is covered by
    // the schema: an unknown stage is refused before anything is made.
    await expect(client.request('branch.fork', { workspace: source.id, copies: 1, faultAt: 'nowhere' as 'dump' })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
    });
  });
});
