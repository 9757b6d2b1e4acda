// The helper restarted while a workspace runs: the workspace keeps running, is
// adopted (same process, same host ports and desktop socket), and orphans are
// removed. One whose processes ended meanwhile shows as exited. A checkpoint
// it had not finished saving when it was killed is dropped, without a trace,
// and a fork's dump, with the twins it keeps, ends with it.
// A helper that lacks a tool it needs, or whose subnet another network routes,
// refuses to start before it makes anything.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import type { Workspace } from '../../src/protocol/entities.js';
import { purge, startHelper, stopHelper, testInstance } from './helper-process.js';
import { commandsOf, processesInTree } from './host-processes.js';
import { leftovers, netnsNames } from './leftovers.js';
import { banner, connect, createWorkspace, hostPort, httpGet, instance, sh, vncSocket, waitFor } from './support.js';

describe('helper restart', () => {
  it('adopts running workspaces and removes what no record explains', async () => {
    const t = instance();
    let client = await connect();
    const before = await createWorkspace(client, 'survivor');
    const orphan = `grove-${t.instance}-deadbeef`;
    try {
      await sh(
        client,
        before,
        'mkdir -p /srv && echo still-here > /srv/index.html && setsid python3 -m http.server 3000 --directory /srv </dev/null >/dev/null 2>&1 &',
      );
      expect((await httpGet(hostPort(before, 3000))).trim()).toBe('still-here');
      const epoch = client.hello?.epoch;
      client.close();

      await stopHelper(t);
      expect(() => process.kill(before.pid!, 0)).not.toThrow(); // the workspace outlives the helper
      await execa('ip', ['netns', 'add', orphan]); // as if a crash left it between making and recording

      await startHelper(t);
      client = await connect();
      expect(client.hello?.epoch).not.toBe(epoch);
      const after = await client.request('workspace.get', { workspace: before.id });
      expect(after.state).toBe('running');
      expect(after.pid).toBe(before.pid);
      expect(hostPort(after, 3000)).toBe(hostPort(before, 3000));
      expect((await httpGet(hostPort(after, 3000))).trim()).toBe('still-here');
      expect(vncSocket(after)).toBe(vncSocket(before));
      expect(await banner({ path: vncSocket(after) })).toMatch(/^RFB 003\.00\d\n/);
      expect(await netnsNames()).not.toContain(orphan);
      // Adopted, and still in its cage: its init's filter and no_new_privs, its cgroups.
      expect(await sh(client, after, "grep -E '^(NoNewPrivs|Seccomp):' /proc/1/status")).toMatch(/NoNewPrivs:\s+1\nSeccomp:\s+2/);
      expect(await sh(client, after, 'cat /proc/self/cgroup')).toContain(`pids:/grove-${t.instance}/${after.id}`);
      // …and its user namespace: root inside, the tree's unprivileged range outside, exec'd commands too.
      expect(
        (await sh(client, after, 'id -u; cat /proc/1/uid_map /proc/self/uid_map'))
          .trim()
          .split('\n')
          .map((l) => l.trim().split(/\s+/)),
      ).toEqual([['0'], ['0', expect.stringMatching(/^\d{8,}$/), '65536'], ['0', expect.stringMatching(/^\d{8,}$/), '65536']]);
    } finally {
      await execa('ip', ['netns', 'del', orphan], { reject: false });
      await client.request('workspace.delete', { workspace: before.id }).catch(() => undefined);
      client.close();
    }
  });

  it('shows a workspace whose processes ended while the helper was down as exited, and starts it again', async () => {
    const t = instance();
    let client = await connect();
    const ws = await createWorkspace(client, 'casualty');
    try {
      await sh(client, ws, 'echo mine > /root/mine.txt');
      client.close();
      await stopHelper(t);
      process.kill(ws.pid!, 'SIGKILL');
      await startHelper(t);
      client = await connect();
      // Seen at start-up, or a moment later if its processes were still on their way out.
      await waitFor('the branch to show as exited', async () => (await client.request('workspace.get', { workspace: ws.id })).state === 'exited', 15_000);
      const after = await client.request('workspace.get', { workspace: ws.id });
      expect(after).toMatchObject({ state: 'exited', pid: null, exitReason: expect.stringMatching(/its init \(host pid \d+\) ended/) });
      const again = await client.request('workspace.start', { workspace: ws.id });
      expect(await sh(client, again, 'cat /root/mine.txt')).toBe('mine\n');
    } finally {
      await client.request('workspace.delete', { workspace: ws.id }).catch(() => undefined);
      client.close();
    }
  });

  it("mounts the sysfs of a running branch's network that a helper from before left without one, and a rollback restores into it", async () => {
    const t = instance();
    let client = await connect();
    const ws = await createWorkspace(client, 'older');
    const sysfs = `${t.runDir}-roots/grove-${t.instance}-${ws.id}.sys`;
    try {
      const version = await client.request('branch.checkpoint', { workspace: ws.id, label: 'before' });
      await waitFor('the checkpoint to be saved', async () => (await client.request('version.list', { workspace: ws.id }))[0]?.saved === true, 60_000);
      client.close();
      await stopHelper(t);
      await execa('umount', ['--', sysfs]); // as a helper from before branches had their network's sysfs left it
      await startHelper(t);
      client = await connect();
      expect((await execa('findmnt', ['-n', '-o', 'FSTYPE', '--', sysfs])).stdout.trim()).toBe('sysfs');
      const back = await client.request('branch.rollback', { workspace: ws.id, version: version.id });
      expect((await sh(client, back, 'ls /sys/class/net')).trim().split(/\s+/)).toEqual(['eth0', 'lo']);
    } finally {
      await client.request('workspace.delete', { workspace: ws.id, versions: 'delete' }).catch(() => undefined);
      client.close();
    }
  });

  it('drops a checkpoint it was still saving when it was killed, leaves nothing of it, and keeps a saved one', async () => {
    const t = instance();
    let client = await connect();
    const ws = await createWorkspace(client, 'interrupted');
    try {
      const kept = await client.request('branch.checkpoint', { workspace: ws.id, label: 'saved' });
      await waitFor('the first checkpoint to be saved', async () => (await client.request('version.list', { workspace: ws.id }))[0]?.saved === true, 60_000);
      const stalled = await client.request('branch.checkpoint', { workspace: ws.id, label: 'never saved', faultAt: 'stall' });
      expect((await client.request('version.list', { workspace: ws.id })).map((v) => [v.id, v.saved])).toEqual([
        [kept.id, true],
        [stalled.id, false],
      ]);
      const scratch = path.join(t.runDir, 'scratch', `checkpoint-${stalled.id}`);
      expect(existsSync(scratch)).toBe(true);
      client.close();

      await stopHelper(t, 'SIGKILL');
      await startHelper(t);
      client = await connect();
      expect((await client.request('version.list', { workspace: ws.id })).map((v) => v.id)).toEqual([kept.id]);
      expect(existsSync(scratch)).toBe(false);
      expect(await readdir(path.join(t.runDir, 'scratch'))).toEqual([]); // its thaw signal directory too
      expect(existsSync(path.join(t.stateDir, 'pool/versions', stalled.id))).toBe(false);
      await expect(client.request('branch.rollback', { workspace: ws.id, version: stalled.id })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
      const back = await client.request('branch.rollback', { workspace: ws.id, version: kept.id });
      expect(back.state).toBe('running');
    } finally {
      await client.request('workspace.delete', { workspace: ws.id, versions: 'delete' }).catch(() => undefined);
      client.close();
    }
  });

  it("leaves neither a fork's dump nor the twins it keeps for the restores behind when it is killed mid-fork, and adopts the children that were up", async () => {
    // A fork's dump keeps a copy-on-write twin of each process of the source until the children are up (criu-patches/0023);
    // its caller's death ends it, and the twins with it. The fork stalls once its children are up, twins still held.
    const t = instance();
    let client = await connect();
    const ws = await createWorkspace(client, 'forked-midway');
    let stalled = true;
    let children: Workspace[] = [];
    try {
      expect((await processesInTree(ws.pid!)).filter((p) => p.state === 't')).toEqual([]);
      client.request('branch.fork', { workspace: ws.id, copies: 2, faultAt: 'stall' }).catch(() => undefined);
      const up = async () => (await client.request('workspace.list', {})).filter((w) => w.parent === ws.id && w.state === 'running');
      await waitFor('both children to be up', async () => (await up()).length === 2, 60_000);
      children = await up();
      // The source runs on (its desktop may still be starting processes); its twins are the stopped ones.
      const twins = (await processesInTree(ws.pid!)).filter((p) => p.state === 't').map((p) => p.pid);
      expect(twins.length).toBeGreaterThan(0);
      const scratch = `${t.runDir}/scratch`;
      expect((await commandsOf(scratch)).some((p) => p.argv[1] === 'dump')).toBe(true);
      client.close();

      await stopHelper(t, 'SIGKILL');
      stalled = false;
      // Gone, not merely no longer stopped: a twin its tracer let go would run on as a copy of its process.
      await waitFor(
        'the dump and its twins to go',
        async () => {
          const dumping = (await commandsOf(scratch)).some((p) => p.argv[1] === 'dump');
          return !dumping && (await processesInTree(ws.pid!)).every((p) => !twins.includes(p.pid));
        },
        30_000,
      );
      await startHelper(t);
      client = await connect();
      expect(await readdir(scratch)).toEqual([]);
      for (const branch of [ws, ...children]) {
        expect(await client.request('workspace.get', { workspace: branch.id })).toMatchObject({ state: 'running', pid: branch.pid });
        expect(await sh(client, branch, 'echo alive')).toBe('alive\n');
      }
    } finally {
      if (stalled) {
        // The stalled fork holds the source's lock: only a restart lets the clean-up in.
        await stopHelper(t, 'SIGKILL');
        await startHelper(t);
        client = await connect();
      }
      for (const w of [...children, ws]) await client.request('workspace.delete', { workspace: w.id }).catch(() => undefined);
      client.close();
    }
  });

  it('refuses to start without its cage tool, saying so, and makes nothing on the host', async () => {
    const broken = testInstance(`m${randomBytes(2).toString('hex').slice(0, 3)}`);
    broken.env.GROVE_ENTER = path.join(broken.runDir, 'no-grove-enter');
    try {
      await expect(startHelper(broken)).rejects.toThrow(/no-grove-enter is missing: run build\/host\/setup\.sh/);
      expect(existsSync(broken.stateDir)).toBe(false);
      expect(existsSync(broken.runDir)).toBe(false);
      expect(await leftovers(broken)).toEqual([]);
    } finally {
      for (const file of [broken.logFile, broken.pidFile]) await rm(file, { force: true });
    }
  });

  it('refuses a subnet that another network on this host routes, naming the route, and makes nothing', async () => {
    const other = testInstance(`m${randomBytes(2).toString('hex').slice(0, 3)}`);
    const [a, b] = other.env.GROVE_SUBNET!.split('.').map(Number);
    other.env.GROVE_SUBNET = `${a}.${(b! + 41) % 256}.0.0/16`;
    const taken = `${a}.${(b! + 41) % 256}.7`;
    const link = `gtd${randomBytes(3).toString('hex')}`; // a veth: this kernel has no dummy links
    await execa('ip', ['link', 'add', link, 'type', 'veth', 'peer', 'name', `${link}p`]);
    try {
      await execa('ip', ['addr', 'add', `${taken}.1/24`, 'dev', link]);
      await execa('ip', ['link', 'set', link, 'up']);
      const said = `GROVE_SUBNET ${other.env.GROVE_SUBNET} is already routed on this host (${taken}.0/24 dev ${link})`;
      await expect(startHelper(other)).rejects.toThrow(said);
      expect(existsSync(other.stateDir)).toBe(false);
      expect(existsSync(other.runDir)).toBe(false);
      expect(await leftovers(other)).toEqual([]);
    } finally {
      await execa('ip', ['link', 'del', link]);
      if (existsSync(other.stateDir)) await purge(other); // it started after all: the test failed, and leaves nothing
      for (const file of [other.logFile, other.pidFile]) await rm(file, { force: true });
    }
  });
});
