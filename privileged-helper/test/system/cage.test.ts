// The cage, probed from inside real branches as their root (uid 0 of a user
// namespace, an unprivileged range on the host): every way out
// that was found (and the usual ones) is refused, in a branch that was
// created, in its forks and after a rollback; runaway branches stay inside
// their limits while a sibling keeps serving.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { CGROUP_ROOT } from '../../src/host/cgroups.js';
import { HELPER_CPU_SHARES, helperCgroupName } from '../../src/host/detach.js';
import { connect, createWorkspace, instance, sh, track, waitFor } from './support.js';
import { until } from '../until.js';

/** Runs a script in the branch; resolves with its exit code and output (never throws on a non-zero exit). */
async function attempt(c: HelperClient, ws: Workspace, script: string, timeoutMs = 60_000) {
  const r = await c.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', script], timeoutMs });
  return { code: r.exitCode, out: `${r.stdout}${r.stderr}` };
}

/** The lines of /proc/PID/status that show the cage, for a process inside the branch. */
async function cageOf(c: HelperClient, ws: Workspace, pid: string): Promise<string> {
  return sh(c, ws, `grep -E '^(Seccomp|NoNewPrivs|CapBnd):' /proc/${pid}/status`);
}

/** Inside the branch: its root is uid 0 in a user namespace that maps it to the tree's own unprivileged host range. */
async function idMapOf(c: HelperClient, ws: Workspace): Promise<{ id: string; uidMap: number[]; gidMap: number[] }> {
  const [id, uid, gid] = (await sh(c, ws, 'id -u; cat /proc/self/uid_map; cat /proc/self/gid_map')).trim().split('\n');
  const numbers = (line: string | undefined) => (line ?? '').trim().split(/\s+/).map(Number);
  return { id: id!.trim(), uidMap: numbers(uid), gidMap: numbers(gid) };
}

/** The distinct cpu groups of every thread of every process the branch shows (the listing's own included). */
async function cpuGroups(c: HelperClient, ws: Workspace): Promise<string[]> {
  const lines = await sh(c, ws, "cat /proc/[0-9]*/task/[0-9]*/cgroup 2>/dev/null | grep -E '^[0-9]+:cpu:' | sort -u");
  return lines
    .trim()
    .split('\n')
    .map((l) => l.replace(/^\d+:cpu:/, ''));
}

/** A host process's group in the cpu hierarchy, from /proc/PID/cgroup. */
async function hostCpuGroup(pid: number): Promise<string | undefined> {
  return /^\d+:(?:[^:]*,)?cpu(?:,[^:]*)?:(.*)$/m.exec(await readFile(`/proc/${pid}/cgroup`, 'utf8'))?.[1];
}

/** The network devices the host lists (`ip -o link`: NAME or NAME@PEER). */
async function hostLinkNames(): Promise<string[]> {
  const { stdout } = await execa('ip', ['-o', 'link', 'show']);
  return stdout
    .split('\n')
    .map((l) => l.split(': ')[1]?.split('@')[0] ?? '')
    .filter(Boolean);
}

/**
 * The branch's /sys lists its own network devices and nothing else: lo and
 * its end of its veth (named eth0, as the host's own eth0 is: told apart by
 * the address), in both places sysfs keeps them. Not the host's devices, not
 * another branch's veth.
 */
async function expectOwnNetworkInSys(c: HelperClient, branch: Workspace, other: Workspace): Promise<void> {
  const [classNet, virtualNet] = (await sh(c, branch, 'ls /sys/class/net; echo --; ls /sys/devices/virtual/net'))
    .split('--\n')
    .map((l) => l.trim().split(/\s+/).sort());
  const host = await hostLinkNames();
  const othersVeth = `gv${instance().instance}${other.id}`;
  expect(host).toContain(othersVeth);
  const seen = new Set([...classNet!, ...virtualNet!]);
  expect(
    host.filter((name) => seen.has(name) && name !== 'lo' && name !== 'eth0'),
    branch.name,
  ).toEqual([]);
  expect(classNet, branch.name).toEqual(['eth0', 'lo']);
  expect(virtualNet, branch.name).toEqual(['eth0', 'lo']);
  const { stdout } = await execa('ip', ['-n', `grove-${instance().instance}-${branch.id}`, '-o', 'link', 'show', 'eth0']);
  const own = /link\/ether ([0-9a-f:]{17})/.exec(stdout)![1];
  expect((await sh(c, branch, 'cat /sys/class/net/eth0/address')).trim(), branch.name).toBe(own);
}

/** The branch's own loopback service (the sibling's web server) answers inside it. */
async function loopbackServes(c: HelperClient, branch: Workspace): Promise<string> {
  return (await sh(c, branch, `python3 -c "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8000/').status)"`)).trim();
}

const CAGED = /Seccomp:\s+2\nNoNewPrivs:\s+1\n|NoNewPrivs:\s+1\nSeccomp:\s+2/;
/** The branch capabilities (chown, dac_override, fowner, fsetid, kill, setgid, setuid, setpcap, net_bind_service). */
const BOUNDING = 'CapBnd:\t00000000000005fb';

describe('a branch is a cage', () => {
  let c: HelperClient;
  let ws: Workspace;
  let sibling: Workspace;
  const made: string[] = [];

  beforeAll(async () => {
    c = await connect('cage-test');
    ws = await createWorkspace(c, 'cage');
    sibling = await createWorkspace(c, 'cage-sibling', [8000]);
    made.push(ws.id, sibling.id);
    await sh(c, sibling, 'cd /tmp && (setsid python3 -m http.server 8000 >/dev/null 2>&1 &) ; sleep 1');
    // The tests look at Chromium in both (and in what is forked and rolled back from them): a desktop starts it
    // some seconds after the branch runs, more on a busy host.
    for (const branch of [ws, sibling])
      await waitFor(`Chromium in ${branch.name}`, async () => (await attempt(c, branch, 'pgrep -o chromium')).code === 0, 120_000);
  });

  afterAll(async () => {
    for (const id of made.reverse()) await c?.request('workspace.delete', { workspace: id }).catch(() => undefined);
    c?.close();
  });

  it("runs its init, its desktop and exec'd commands with the filter, no_new_privs and only the branch capabilities", async () => {
    for (const pid of ['1', '$$', '$(pgrep -o Xvnc)', '$(pgrep -o chromium)']) {
      const status = await cageOf(c, ws, pid);
      expect(status, pid).toMatch(CAGED);
      expect(status, pid).toContain(BOUNDING);
    }
  });

  it("runs as root in a user namespace: the tree's own unprivileged host ids, another tree's apart", async () => {
    const mine = await idMapOf(c, ws);
    expect(mine.id).toBe('0');
    expect(mine.uidMap[0]).toBe(0);
    expect(mine.uidMap[1]).toBeGreaterThanOrEqual(2 ** 24);
    expect(mine.uidMap[2]).toBe(65536);
    expect(mine.gidMap).toEqual(mine.uidMap);
    const theirs = await idMapOf(c, sibling);
    expect(Math.abs(theirs.uidMap[1]! - mine.uidMap[1]!)).toBeGreaterThanOrEqual(65536);
    // Seen from the host, its init is that unprivileged uid, and what it writes is that uid's too.
    const hostUid = Number(/^Uid:\s+(\d+)/m.exec(await readFile(`/proc/${ws.pid}/status`, 'utf8'))![1]);
    expect(hostUid).toBe(mine.uidMap[1]);
    // Files of the image and its own writes look like root's inside.
    expect((await sh(c, ws, 'touch /root/mine && stat -c %u:%g /root/mine /etc/passwd /usr/bin/chromium')).trim().split('\n')).toEqual(['0:0', '0:0', '0:0']);
  });

  it('refuses mounts, device nodes, raw frames, vsock, kernel modules and new user namespaces', async () => {
    const refusals: [string, string, RegExp][] = [
      ['mount', 'mount -t tmpfs none /mnt', /permission denied|not permitted/i],
      ['mknod of the pool loop device', 'mknod /tmp/loop0 b 7 0', /not permitted/i],
      ['a packet socket', `python3 -c 'import socket; socket.socket(socket.AF_PACKET, socket.SOCK_RAW)'`, /Errno (1|38)\]|PermissionError/],
      // vsock ignores network namespaces: it would reach the hypervisor's services past the firewall and the gate.
      ['a vsock socket', `python3 -c 'import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM)'`, /Errno (1|38)\]|PermissionError/],
      ['a raw IP socket', `python3 -c 'import socket; socket.socket(socket.AF_INET, socket.SOCK_RAW, 1)'`, /PermissionError|Errno 1\]/],
      [
        'loading a module',
        `python3 -c 'import ctypes, os, sys; r = ctypes.CDLL(None, use_errno=True).syscall(313, -1, b"", 0); print(r, os.strerror(ctypes.get_errno())); sys.exit(r == -1)'`,
        /-1 Operation not permitted/,
      ],
      ['unshare -U', 'unshare -U -r true', /not permitted/i],
      ['writing /proc/sys', 'echo 1 > /proc/sys/kernel/panic', /read-only|Permission denied/i],
      ['writing /sys', 'echo 1 > /sys/kernel/mm/ksm/run', /read-only|Permission denied/i],
    ];
    for (const [what, script, message] of refusals) {
      const r = await attempt(c, ws, script);
      expect(r.code, `${what}: ${r.out}`).not.toBe(0);
      expect(r.out, what).toMatch(message);
    }
    // A device node that does exist may be opened only if the devices cgroup allows it.
    expect((await attempt(c, ws, 'head -c 4 /dev/urandom | wc -c')).out.trim()).toBe('4');
  });

  it('sees neither the host nor other branches: no host process, no helper socket, no sibling', async () => {
    const ps = await sh(c, ws, 'ps -eo comm=');
    expect(ps).not.toMatch(/\bnode\b|grove-enter|crun|systemd/);
    expect(ps).toMatch(/Xvnc/);
    expect((await attempt(c, ws, `test -e ${instance().socketPath} || test -e ${instance().agentSocketPath}`)).code).not.toBe(0);
    expect((await attempt(c, ws, `kill -0 ${process.pid}`)).code).not.toBe(0);
    const toSibling = await attempt(c, ws, `python3 -c 'import socket; socket.create_connection(("${sibling.address}", 8000), timeout=3)'`);
    expect(toSibling.code).not.toBe(0);
  });

  it("lists only its own network devices in /sys: not the host's, not another branch's veth", async () => {
    await expectOwnNetworkInSys(c, ws, sibling);
    await expectOwnNetworkInSys(c, sibling, ws);
    expect(await loopbackServes(c, sibling)).toBe('200');
  });

  it('keeps a memory hog inside its limit: the kernel ends it, the branch and its sibling keep running', async () => {
    await c.request('workspace.limits', { workspace: ws.id, memoryBytes: 1024 * 2 ** 20 });
    const hog = await attempt(c, ws, `python3 -c 'b = bytearray(3 * 2**30); print("survived")'`, 90_000);
    expect(hog.out).not.toContain('survived');
    expect(hog.code === 137 || /MemoryError|Killed/.test(hog.out), hog.out).toBe(true);
    const perf = await c.request('perf.get', {});
    const mine = perf.branches.find((b) => b.workspace === ws.id)!;
    expect(mine.cgroup.limits.memoryBytes).toBe(1024 * 2 ** 20);
    expect(mine.cgroup.memoryLimitHits + mine.cgroup.oomKills).toBeGreaterThan(0);
    expect((await sh(c, ws, 'echo alive')).trim()).toBe('alive');
    expect(await loopbackServes(c, sibling)).toBe('200');
  });

  it('stops a fork bomb at its task limit, and a sibling keeps serving throughout', async () => {
    await c.request('workspace.limits', { workspace: ws.id, pids: 400 });
    // exec's deadline ends the bomb's whole process group after 8 s.
    const bomb = attempt(c, ws, 'b() { b | b & }; b; sleep 30', 8000);
    // While it runs into its limit: the sibling answers.
    const during = await until(
      async () => {
        const branch = (await c.request('perf.get', {})).branches.find((b) => b.workspace === ws.id)!;
        return branch.cgroup.pidsRefused > 0 && branch;
      },
      { what: 'the bomb to reach its task limit', timeoutMs: 7000, everyMs: 200 },
    );
    expect((await sh(c, sibling, 'echo serving')).trim()).toBe('serving');
    expect(during.cgroup.pids).toBeLessThanOrEqual(400);
    await bomb;
    await c.request('workspace.limits', { workspace: ws.id, pids: 2048, memoryBytes: 2 * 2 ** 30 });
    // The bomb is gone with its process group; the branch is usable again.
    await expect.poll(async () => Number(await sh(c, ws, 'ps -e --no-headers | wc -l')), { timeout: 20_000 }).toBeLessThan(100);
    expect((await sh(c, ws, 'echo back')).trim()).toBe('back');
  });

  it('runs the helper, and what it starts, in a cpu group of its own that goes before the branches', async () => {
    const t = instance();
    const helper = Number(await readFile(t.pidFile, 'utf8'));
    const own = `/${helperCgroupName(t.instance)}`;
    expect(await hostCpuGroup(helper)).toBe(own);
    const shares = async (group: string) => Number(await readFile(path.join(CGROUP_ROOT, 'cpu', group, 'cpu.shares'), 'utf8'));
    expect(await shares(own)).toBe(HELPER_CPU_SHARES);
    expect(await shares(`grove-${t.instance}`)).toBeLessThan(HELPER_CPU_SHARES / 8);
    // What it starts inherits the group: the egress gate, its child the whole time.
    const children = (await readFile(`/proc/${helper}/task/${helper}/children`, 'utf8')).trim().split(/\s+/).filter(Boolean);
    const gates = [];
    for (const child of children)
      if ((await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')).split('\0').includes('--gate')) gates.push(Number(child));
    expect(gates).toHaveLength(1);
    expect(await hostCpuGroup(gates[0]!)).toBe(own);
    // And grove-spawn, which starts its programs: started before the helper moved itself, it was moved with it.
    const spawners = [];
    for (const child of children)
      if ((await readFile(`/proc/${child}/cmdline`, 'utf8').catch(() => '')).split('\0')[0]!.endsWith('/grove-spawn')) spawners.push(Number(child));
    expect(spawners).toHaveLength(1);
    expect(await hostCpuGroup(spawners[0]!)).toBe(own);
    // The branches do not.
    expect(await cpuGroups(c, ws)).toEqual([`/grove-${t.instance}/${ws.id}`]);
  });

  // On the sibling: a branch whose memory was just squeezed by its limit can be
  // left with inotify watches the kernel cannot name by file handle any more,
  // and then CRIU refuses to dump it (seen on this kernel; not a cage matter).
  it('keeps the cage in a fork, after a rollback, and the limits go with the fork', async () => {
    await c.request('workspace.limits', { workspace: sibling.id, pids: 1500 });
    const version = await c.request('branch.checkpoint', { workspace: sibling.id, label: 'cage' });
    const child = await track((await c.request('branch.fork', { workspace: sibling.id, copies: 1, names: ['cage-sibling-1'] })).children[0]!);
    made.push(child.id);
    expect(child.limits.pids).toBe(1500);
    // Siblings share their source's range (CRIU brings the tree back into the same mapping).
    expect(await idMapOf(c, child)).toEqual(await idMapOf(c, sibling));
    for (const pid of ['1', '$$', '$(pgrep -o Xvnc)']) {
      expect(await cageOf(c, child, pid), `child ${pid}`).toMatch(CAGED);
      expect(await cageOf(c, child, pid)).toContain(BOUNDING);
    }
    expect((await attempt(c, child, 'mount -t tmpfs none /mnt')).code).not.toBe(0);
    await expectOwnNetworkInSys(c, child, sibling);
    expect(await loopbackServes(c, child)).toBe('200');
    // Restored trees are counted in their own branch's cgroups, and every process runs at its CPU weight (CRIU restored it outside).
    expect(await sh(c, child, 'cat /proc/1/cgroup')).toMatch(new RegExp(`memory:/grove-${instance().instance}/${child.id}`));
    expect(await cpuGroups(c, child)).toEqual([`/grove-${instance().instance}/${child.id}`]);
    const rolled = await track(await c.request('branch.rollback', { workspace: sibling.id, version: version.id }));
    expect(await cageOf(c, rolled, '1')).toMatch(CAGED);
    expect(await idMapOf(c, rolled)).toEqual(await idMapOf(c, child));
    expect(await cageOf(c, rolled, '$(pgrep -o chromium)')).toMatch(CAGED);
    expect(await sh(c, rolled, 'cat /proc/1/cgroup')).toMatch(new RegExp(`memory:/grove-${instance().instance}/${sibling.id}`));
    expect(await cpuGroups(c, rolled)).toEqual([`/grove-${instance().instance}/${sibling.id}`]);
    await expectOwnNetworkInSys(c, rolled, child);
  });
});
