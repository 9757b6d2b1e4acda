// A hostile branch and a hostile client against the root helper: what either
// sends the helper is bounded, and the helper says so in words instead of
// growing (issue 42: a fake VNC server announcing gigabytes of clipboard, a
// thousand pipelined screenshots that are never read).
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { PROTOCOL_VERSION } from '../../src/protocol/methods.js';
import { REPO } from './helper-process.js';
import { connect, createWorkspace, instance, sh, track, waitFor } from './support.js';

/** The helper's resident memory, MiB. */
function helperRssMiB(): number {
  const pid = Number(readFileSync(instance().pidFile, 'utf8'));
  const kib = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]);
  return kib / 1024;
}

/** The most the helper's RSS reached while `work` ran (sampled every 100 ms), minus what it was before. */
async function rssGrowthDuring(work: () => Promise<unknown>): Promise<number> {
  const before = helperRssMiB();
  let peak = before;
  let running = true;
  const sampler = (async () => {
    while (running) {
      peak = Math.max(peak, helperRssMiB());
      await sleep(100);
    }
  })();
  try {
    await work();
  } finally {
    running = false;
    await sampler;
  }
  return peak - before;
}

/** An RFB 3.8 server on :5900 that sends one small frame, then announces ~4 GiB of clipboard text and streams it. */
const FAKE_VNC = `
import socket, struct, threading
def serve(c):
    try:
        c.sendall(b'RFB 003.008\\n'); c.recv(12)
        c.sendall(bytes([1, 1])); c.recv(1)
        c.sendall(struct.pack('>I', 0)); c.recv(1)
        c.sendall(struct.pack('>HH', 1280, 800) + bytes(16) + struct.pack('>I', 4) + b'evil')
        c.recv(4096)
        c.sendall(bytes([0, 0]) + struct.pack('>H', 1) + struct.pack('>HHHHi', 0, 0, 1, 1, 0) + bytes(4))
        c.sendall(bytes([3, 0, 0, 0]) + struct.pack('>I', 0xfffffff0))
        junk = bytes(1 << 20)
        for _ in range(1536):
            c.sendall(junk)
    except OSError:
        pass
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('0.0.0.0', 5900)); s.listen(8)
print('listening', flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
`;

/** Swaps two names (renameat2 RENAME_EXCHANGE) as fast as it can for as many seconds as it is told. */
const SWAPPER = `
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = (p.encode() for p in sys.argv[1:3])
end, n = time.time() + float(sys.argv[3]), 0
while time.time() < end:
    n += libc.renameat2(-100, a, -100, b, 2) == 0
print(f'swapped {n} times')
`;
import { until } from '../until.js';

describe('a hostile branch and a hostile client', () => {
  let client: HelperClient;
  let ws: Workspace;

  beforeAll(async () => {
    client = await connect('hostile');
    ws = await createWorkspace(client, 'hostile');
  });

  afterAll(async () => {
    await client.request('workspace.delete', { workspace: ws.id }).catch(() => undefined);
    client.close();
  });

  it("keeps its log from other users: root's and the grove group's only (0640)", async () => {
    const st = statSync(instance().logFile);
    expect(st.mode & 0o777).toBe(0o640);
    expect(st.uid).toBe(0);
    expect(st.gid).toBe(Number(execFileSync('getent', ['group', 'grove'], { encoding: 'utf8' }).split(':')[2]));
  });

  it('answers a thousand pipelined screenshots it is never asked to read one at a time, within +64 MiB', async () => {
    await client.request('desktop.screenshot', { workspace: ws.id }); // the branch's VNC session, made once, is not what is measured
    const growth = await rssGrowthDuring(async () => {
      const s = net.connect(instance().agentSocketPath);
      await new Promise((r) => s.once('connect', r));
      s.pause(); // never reads a reply
      const lines = [JSON.stringify({ id: 0, method: 'hello', params: { protocol: PROTOCOL_VERSION, client: { name: 'flood', kind: 'test' } } })];
      for (let i = 1; i <= 1000; i++) lines.push(JSON.stringify({ id: i, method: 'desktop.screenshot', params: { workspace: ws.id } }));
      s.write(`${lines.join('\n')}\n`);
      await sleep(8000);
      s.destroy();
    });
    expect(growth).toBeLessThan(64);
    // The helper serves on.
    expect((await client.request('workspace.list', {})).map((w) => w.id)).toContain(ws.id);
  });

  it('never opens a host file through links a branch swaps in while it diffs the branch', async () => {
    const canary = mkdtempSync('/var/tmp/grove-canary-');
    writeFileSync(path.join(canary, 'secret'), 'host secret\n', { mode: 0o600 });
    const watch = spawn('python3', [path.join(REPO, 'privileged-helper/test/system/fixtures/inotify-watch.py'), canary], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let seen = '';
    watch.stdout.on('data', (d: Buffer) => (seen += d.toString()));
    try {
      await waitFor('the canary watch', async () => seen.includes('watching'), 10_000);
      const fork = await client.request('branch.fork', { workspace: ws.id, copies: 1, names: ['hostile-race'] });
      const child = await track(fork.children[0]!);
      try {
        // /race/d: a folder with a file of its own; /race/l: a link to the host's canary folder. The swap makes each
        // path now a folder, now a link, between any two steps the helper takes.
        await sh(client, child, `mkdir -p /race/d && printf 'branch file' > /race/d/secret && ln -sfn ${canary} /race/l`);
        const swapper = client.request('exec.run', { workspace: child.id, argv: ['python3', '-c', SWAPPER, '/race/d', '/race/l', '10'], timeoutMs: 60_000 });
        const contents = new Set<string>();
        for (let i = 0; i < 15; i++) {
          const diff = await client.request('branch.diff', { workspace: child.id });
          for (const d of diff.textDiffs) contents.add(d.diff);
        }
        expect((await swapper).stdout).toMatch(/^swapped \d+ times/);
        expect([...contents].join('\n')).not.toContain('host secret');
        expect(seen.replace('watching\n', '')).toBe(''); // not one open, read or change
      } finally {
        await client.request('workspace.delete', { workspace: child.id });
      }
    } finally {
      watch.kill();
      rmSync(canary, { recursive: true, force: true });
    }
  });

  it('lets a rollback wait for the diffs reading the branch, and the diffs for the rollback, instead of failing either', async () => {
    const fork = await client.request('branch.fork', { workspace: ws.id, copies: 1, names: ['hostile-rollback'] });
    const child = await track(fork.children[0]!);
    try {
      await sh(client, child, 'echo before > /root/mark');
      const version = await client.request('branch.checkpoint', { workspace: child.id, label: 'before the diffs' });
      await sh(client, child, 'echo after > /root/mark');
      let diffing = true;
      let n = 0;
      const diffs = (async () => {
        while (diffing) {
          await client.request('branch.diff', { workspace: child.id });
          n++;
        }
        return n;
      })();
      await until(() => n > 0, { what: 'the diffs to run', timeoutMs: 30_000 });
      const rolled = await client.request('branch.rollback', { workspace: child.id, version: version.id });
      diffing = false;
      expect(rolled.state).toBe('running');
      expect(await diffs).toBeGreaterThan(0);
      expect(await sh(client, child, 'cat /root/mark')).toBe('before\n');
    } finally {
      await client.request('workspace.delete', { workspace: child.id });
    }
  });

  it('keeps a sensitive workspace out of KSM, and its forks too, while others merge', async () => {
    const mergeAny = (pid: number) => /ksm_merge_any: (\w+)/.exec(readFileSync(`/proc/${pid}/ksm_stat`, 'utf8'))?.[1];
    const sensitive = await track(await client.request('workspace.create', { name: 'hostile-sensitive', sensitive: true }));
    try {
      expect(sensitive.sensitive).toBe(true);
      expect(mergeAny(sensitive.pid!)).toBe('no');
      expect(mergeAny(ws.pid!)).toBe('yes');
      const fork = await client.request('branch.fork', { workspace: sensitive.id, copies: 1 });
      const child = await track(fork.children[0]!);
      expect(child.sensitive).toBe(true);
      expect(mergeAny(child.pid!)).toBe('no');
      // What is started in it from outside is not mergeable either.
      expect(await sh(client, child, 'grep ksm_merge_any /proc/self/ksm_stat')).toBe('ksm_merge_any: no\n');
      await client.request('workspace.delete', { workspace: child.id });
    } finally {
      await client.request('workspace.delete', { workspace: sensitive.id });
    }
  });

  it("drops a branch's VNC server that announces gigabytes of clipboard, says so, and stays within +64 MiB", async () => {
    await sh(client, ws, 'pkill -x Xvnc; for i in $(seq 50); do pgrep -x Xvnc >/dev/null || break; sleep 0.1; done');
    await sh(
      client,
      ws,
      `cat > /tmp/fake-vnc.py <<'EOF'\n${FAKE_VNC}\nEOF\nsetsid python3 /tmp/fake-vnc.py >/tmp/fake-vnc.log 2>&1 < /dev/null & for i in $(seq 50); do grep -q listening /tmp/fake-vnc.log && break; sleep 0.1; done`,
    );
    let failure: Error | null = null;
    const growth = await rssGrowthDuring(async () => {
      failure = await client.request('desktop.screenshot', { workspace: ws.id }).then(
        () => null,
        (err: Error) => err,
      );
      await sleep(3000); // whatever the branch still sends in that time
    });
    expect(failure).toMatchObject({ code: 'E_HOST', message: expect.stringContaining('announced clipboard text of 4294967280 bytes') });
    expect(growth).toBeLessThan(64);
  });
});
