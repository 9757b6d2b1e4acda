// Egress for real: the "outside world" (outside-world.ts) is an HTTP server, a UDP echo and a UDP
// "DNS" in a network namespace of the test's own (10.218.0.2, with a veth to
// the host), named outside.test through GROVE_GATE_HOSTS. Nothing beyond this
// machine is contacted. A branch reaches it only through its gate, as its
// policy says: deny, allow list, or held for a person's decision.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import type { Approval, HeldConnection } from '../../src/protocol/approvals.js';
import { FETCH_THROUGH_GATE, OutsideWorld, removeOutsideWorld } from './outside-world.js';
import { connect, createWorkspace, instance, track } from './support.js';

const OUTSIDE = '10.218.0.2';
const HOST_SIDE = '10.218.0.1';
const GATE = 'http://169.254.77.1:3128'; // = http://grove-gate:3128 inside a configured branch

/** Inside a branch: a CONNECT tunnel through the gate, then a plain request over it. */
const TUNNEL = `
import http.client, json, sys
c = http.client.HTTPConnection('169.254.77.1', 3128, timeout=90)
c.set_tunnel(sys.argv[1], int(sys.argv[2]))
try:
    c.request('GET', '/through-tunnel')
    r = c.getresponse()
    print(json.dumps({'status': r.status, 'body': r.read().decode()}))
except Exception as e:
    print(json.dumps({'status': 0, 'body': str(e)}))
`;

/** Inside a branch: every way around the gate — raw TCP, UDP, DNS to the outside resolver. */
const BYPASS = `
import socket
def tcp(host, port):
    s = socket.socket(); s.settimeout(3)
    try:
        s.connect((host, port)); return 'open'
    except Exception as e:
        return type(e).__name__
def udp(port, payload):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(3)
    try:
        s.sendto(payload, ('${OUTSIDE}', port)); s.recvfrom(2048); return 'answered'
    except Exception as e:
        return type(e).__name__
query = b'\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x07outside\\x04test\\x00\\x00\\x01\\x00\\x01'
print('tcp', tcp('${OUTSIDE}', 8080))
print('gatehost', tcp('${HOST_SIDE}', 8080))
print('udp', udp(5353, b'ping'))
print('dns', udp(53, query))
`;
import { until } from '../until.js';

interface Fetched {
  status: number;
  body: string;
}

/** The helper's egress gate process (its child started with --gate); waits for one to run. */
async function gatePid(helperPid: number): Promise<number> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const found = await execa('pgrep', ['-P', String(helperPid), '-f', '--', '--gate'], { reject: false });
    if (found.exitCode === 0) return Number(found.stdout.trim().split('\n')[0]);
    await sleep(200);
  }
  throw new Error(`no egress gate process under helper ${helperPid}`);
}

/** Does something accept TCP connections there (from the host, as root)? */
function listens(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port, timeout: 2000 });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => (socket.destroy(), resolve(false)));
  });
}

/** A numeric line of /proc/PID/status (Uid, Gid, Groups). */
function statusField(status: string, name: string): number[] {
  const line = new RegExp(`^${name}:(.*)$`, 'm').exec(status);
  if (!line) throw new Error(`no ${name} in /proc status`);
  return line[1]!.trim().split(/\s+/).filter(Boolean).map(Number);
}

async function fetchIn(client: HelperClient, ws: Workspace, method: string, url: string): Promise<Fetched> {
  const res = await client.request('exec.run', {
    workspace: ws.id,
    argv: ['python3', '-c', FETCH_THROUGH_GATE, method, url],
    // Through the gate even for loopback: the workspace's own no_proxy would bypass it for 127.0.0.1.
    env: { http_proxy: GATE, https_proxy: GATE, no_proxy: '', NO_PROXY: '' },
    timeoutMs: 120_000,
  });
  expect(res.exitCode, res.stderr).toBe(0);
  return JSON.parse(res.stdout) as Fetched;
}

async function tunnelIn(client: HelperClient, ws: Workspace, host: string, port: number): Promise<Fetched> {
  const res = await client.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', TUNNEL, host, String(port)], timeoutMs: 120_000 });
  expect(res.exitCode, res.stderr).toBe(0);
  return JSON.parse(res.stdout) as Fetched;
}

async function bypassIn(client: HelperClient, ws: Workspace): Promise<Record<string, string>> {
  const res = await client.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', BYPASS], timeoutMs: 60_000 });
  expect(res.exitCode, res.stderr).toBe(0);
  return Object.fromEntries(
    res.stdout
      .trim()
      .split('\n')
      .map((l) => l.split(' ') as [string, string]),
  );
}

describe('egress: policy, gate and approvals', () => {
  const ns = `egress-outside-${instance().instance}`;
  const veth = `eo${instance().instance}${randomBytes(2).toString('hex')}`;
  let outside: OutsideWorld | null = null;
  let client: HelperClient;
  let approver: HelperClient;
  let ws: Workspace;
  const requests: Approval[] = [];
  const made: string[] = [];

  const hits = () => outside!.log.split('\n').filter((l) => l.startsWith('HIT')).length;
  const udpHits = () => outside!.log.split('\n').filter((l) => l.startsWith('UDP')).length;

  /** The connection a held request stands for. */
  const connection = (a: Approval): HeldConnection => {
    if (a.action.kind !== 'egress.connection') throw new Error(`request ${a.id} is a ${a.action.kind}`);
    return a.action;
  };

  async function nextHeld(after: number, timeoutMs = 30_000): Promise<Approval> {
    return until(() => requests[after], { what: 'an approval.opened event', timeoutMs, everyMs: 50 });
  }

  beforeAll(async () => {
    outside = await OutsideWorld.start({ ns, veth, hostSide: HOST_SIDE, address: OUTSIDE });

    client = await connect('egress-test');
    approver = await connect('approver');
    await approver.subscribe(['approval.opened']);
    // Only this test's destinations: the workspace's Chromium asks the gate for hosts of its own too.
    approver.on('approval.opened', (r) => {
      if (r.action.kind === 'egress.connection' && (r.action.host.endsWith('.test') || r.action.address?.what.startsWith('a documentation address')))
        requests.push(r);
    });
    ws = await createWorkspace(client, 'egress-a');
    made.push(ws.id);
  });

  afterAll(async () => {
    for (const id of made.reverse()) await client?.request('workspace.delete', { workspace: id }).catch(() => undefined);
    client?.close();
    approver?.close();
    await (outside?.stop() ?? removeOutsideWorld({ ns, veth }));
  });

  it('has an outside world the host itself can reach (control)', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      http
        .get({ host: OUTSIDE, port: 8080, path: '/control', timeout: 5000 }, (res) => {
          let b = '';
          res.on('data', (c: Buffer) => (b += c.toString()));
          res.on('end', () => resolve(b));
        })
        .on('error', reject);
    });
    expect(body).toBe('hello from outside GET /control');
  });

  it('denies by default: not by name through the gate, nor by raw IP, UDP or DNS; drops are counted', async () => {
    const before = await client.request('egress.status', { workspace: ws.id });
    expect(before.policy).toEqual({ mode: 'deny', allow: [], holdMutating: false });
    const seen = hits();
    const udpSeen = udpHits();

    const byName = await fetchIn(client, ws, 'GET', 'http://outside.test:8080/by-name');
    expect(byName.status).toBe(403);
    expect(byName.body).toMatch(/refused: the branch's egress policy is deny/);
    const tunnel = await tunnelIn(client, ws, 'outside.test', 8080);
    expect(tunnel.status).toBe(0);
    expect(tunnel.body).toMatch(/403/);

    const bypass = await bypassIn(client, ws);
    expect(bypass).toMatchObject({
      tcp: expect.not.stringMatching(/^open$/),
      udp: expect.not.stringMatching(/^answered$/),
      dns: expect.not.stringMatching(/^answered$/),
    });
    expect(bypass.gatehost).not.toBe('open');
    expect(hits()).toBe(seen);
    expect(udpHits()).toBe(udpSeen);

    const after = await client.request('egress.status', { workspace: ws.id });
    expect(after.dropped.tcp).toBeGreaterThan(before.dropped.tcp);
    expect(after.dropped.udp).toBeGreaterThanOrEqual(before.dropped.udp + 2);
  });

  it('lets an allow-listed destination through, by plain HTTP and by CONNECT, and nothing else', async () => {
    const policy = await client.request('egress.set', { workspace: ws.id, mode: 'allow', allow: [{ host: 'outside.test', port: 8080 }] });
    expect(policy).toEqual({ mode: 'allow', allow: [{ host: 'outside.test', port: 8080 }], holdMutating: false });
    const seen = hits();
    expect(await fetchIn(client, ws, 'GET', 'http://outside.test:8080/allowed')).toEqual({ status: 200, body: 'hello from outside GET /allowed' });
    expect(await tunnelIn(client, ws, 'outside.test', 8080)).toEqual({ status: 200, body: 'hello from outside GET /through-tunnel' });
    expect(hits()).toBe(seen + 2);

    const other = await fetchIn(client, ws, 'GET', 'http://other.test:8080/not-listed');
    expect(other.status).toBe(403);
    expect(other.body).toMatch(/not on the branch's allow list/);
    expect((await fetchIn(client, ws, 'GET', `http://${OUTSIDE}:8080/by-ip`)).status).toBe(403);
    expect((await bypassIn(client, ws)).tcp).not.toBe('open');
    expect(hits()).toBe(seen + 2);
  });

  it("never lets the gate reach loopback, Grove's own addresses or the host's, whatever the allow list says", async () => {
    const hostSide = ws.address.replace(/\d+$/, (n) => String(Number(n) - 1));
    await client.request('egress.set', { workspace: ws.id, allow: [{ host: '127.0.0.1' }, { host: hostSide }, { host: HOST_SIDE }] });
    for (const url of ['http://127.0.0.1:3000/', `http://${hostSide}:3128/`, `http://${HOST_SIDE}:8080/`]) {
      const res = await fetchIn(client, ws, 'GET', url);
      expect(res.status, url).toBe(403);
      expect(res.body).toMatch(/loopback|belongs to Grove or to this host/);
    }
    await client.request('egress.set', { workspace: ws.id, remove: [{ host: '127.0.0.1' }, { host: hostSide }, { host: HOST_SIDE }] });
  });

  it('refuses loopback in every form a branch may write it, whatever the allow list says, before its policy is asked', async () => {
    await client.request('egress.set', { workspace: ws.id, allow: [{ host: '127.0.0.1' }] });
    for (const host of ['[::ffff:7f00:1]', '[::ffff:127.0.0.1]', '2130706433', '0x7f.1', '[64:ff9b::7f00:1]']) {
      const res = await fetchIn(client, ws, 'GET', `http://${host}:3000/`);
      expect(res.status, host).toBe(403);
      expect(res.body, host).toMatch(/(\(127\.0\.0\.1\) )?is this machine's loopback/);
    }
    await client.request('egress.set', { workspace: ws.id, remove: [{ host: '127.0.0.1' }] });
  });

  it('holds requests in gate mode: approve passes, deny refuses, always lets the next through unasked', async () => {
    await client.request('egress.set', { workspace: ws.id, mode: 'gate', remove: [{ host: 'outside.test' }] });
    const seen = hits();

    // approve once
    let n = requests.length;
    let pending = fetchIn(client, ws, 'GET', 'http://outside.test:8080/approve-me');
    let held = await nextHeld(n);
    expect(held).toMatchObject({ workspace: ws.id, workspaceName: 'egress-a', requestedBy: null, state: 'pending' });
    expect(connection(held)).toEqual({
      kind: 'egress.connection',
      host: 'outside.test',
      port: 8080,
      method: 'GET',
      url: 'http://outside.test:8080/approve-me',
      held: 'destination',
      address: null,
    });
    expect(held.reason).toContain('not on egress-a');
    expect((await client.request('approval.list', {})).map((r) => r.id)).toContain(held.id);
    expect(hits()).toBe(seen); // nothing reached the outside while held
    expect(await approver.request('approval.approve', { id: held.id })).toMatchObject({
      state: 'done',
      outcome: 'let through once',
      decision: { by: { role: 'person', uid: 0 } },
    });
    expect(await pending).toEqual({ status: 200, body: 'hello from outside GET /approve-me' });

    // deny
    n = requests.length;
    pending = fetchIn(client, ws, 'POST', 'http://outside.test:8080/deny-me');
    held = await nextHeld(n);
    expect(connection(held)).toMatchObject({ method: 'POST', url: 'http://outside.test:8080/deny-me' });
    await approver.request('approval.deny', { id: held.id, note: 'not now' });
    const denied = await pending;
    expect(denied.status).toBe(403);
    expect(denied.body).toMatch(/denied by person:root/);
    await expect(approver.request('approval.approve', { id: held.id })).rejects.toMatchObject({
      code: 'E_CONFLICT',
      message: expect.stringContaining('already denied'),
    });

    // an address literal, in a form that hides what it is, is shown as the address it reaches
    n = requests.length;
    pending = fetchIn(client, ws, 'GET', 'http://[::ffff:c000:207]:8080/hidden');
    held = await nextHeld(n);
    expect(connection(held)).toMatchObject({ address: { reached: '192.0.2.7', what: 'a documentation address (reaches nothing real)' } });
    await approver.request('approval.deny', { id: held.id });
    expect((await pending).status).toBe(403);

    // a tunnel is held the same way
    n = requests.length;
    const tunnel = tunnelIn(client, ws, 'outside.test', 8080);
    held = await nextHeld(n);
    expect(connection(held)).toMatchObject({ method: 'CONNECT', host: 'outside.test', port: 8080, url: null });
    await approver.request('approval.approve', { id: held.id });
    expect((await tunnel).status).toBe(200);

    // always
    n = requests.length;
    pending = fetchIn(client, ws, 'GET', 'http://outside.test:8080/always');
    held = await nextHeld(n);
    await approver.request('approval.approve', { id: held.id, always: true });
    expect((await pending).status).toBe(200);
    expect((await client.request('egress.status', { workspace: ws.id })).policy.allow).toEqual([{ host: 'outside.test', port: 8080 }]);
    n = requests.length;
    expect(await fetchIn(client, ws, 'GET', 'http://outside.test:8080/again')).toEqual({ status: 200, body: 'hello from outside GET /again' });
    expect(requests.length).toBe(n); // not asked again
    expect(hits()).toBe(seen + 4);
  });

  it('holds mutating requests to allowed destinations under holdMutating', async () => {
    await client.request('egress.set', { workspace: ws.id, holdMutating: true });
    expect((await fetchIn(client, ws, 'GET', 'http://outside.test:8080/read')).status).toBe(200);
    const n = requests.length;
    const pending = fetchIn(client, ws, 'PUT', 'http://outside.test:8080/write');
    const held = await nextHeld(n);
    expect(connection(held)).toMatchObject({ method: 'PUT', held: 'mutating' });
    await approver.request('approval.approve', { id: held.id });
    expect(await pending).toEqual({ status: 200, body: 'hello from outside PUT /write' });
    await client.request('egress.set', { workspace: ws.id, holdMutating: false });
  });

  it('times out a held request nobody answers, with a clear error to the client', async () => {
    const n = requests.length;
    const t0 = Date.now();
    const pending = fetchIn(client, ws, 'GET', 'http://other.test:8080/nobody-answers');
    const held = await nextHeld(n);
    const res = await pending;
    expect(res.status).toBe(504);
    expect(res.body).toMatch(/not approved in time/);
    expect(res.body).toContain(held.id);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(14_000);
    const pendingOfTest = (await client.request('approval.list', { workspace: ws.id })).filter((r) => connection(r).host.endsWith('.test'));
    expect(pendingOfTest).toEqual([]);
    expect(await client.request('approval.get', { id: held.id })).toMatchObject({ state: 'expired', decision: null });
  });

  it('logs every attempt and decision with who decided', async () => {
    const log = await client.request('egress.log', { workspace: ws.id });
    const verdicts = new Set(log.map((e) => e.verdict));
    for (const v of ['denied', 'allowed', 'held', 'approved', 'rejected', 'timeout'] as const) expect(verdicts, v).toContain(v);
    expect(log.find((e) => e.verdict === 'rejected')).toMatchObject({ decidedBy: 'person:root', method: 'POST', url: 'http://outside.test:8080/deny-me' });
    expect(log.find((e) => e.verdict === 'timeout' && e.host === 'other.test')).toMatchObject({ decidedBy: 'timeout' });
    expect(log.every((e) => e.workspace === ws.id && e.workspaceName === 'egress-a')).toBe(true);
  });

  it('configures the branch for the gate: grove-gate in /etc/hosts, proxy env, Chromium flags', async (ctx) => {
    const res = await client.request('exec.run', { workspace: ws.id, argv: ['cat', '/etc/chromium.d/grove-proxy'] });
    if (res.exitCode !== 0) ctx.skip(); // writeProxyConfig is not yet called next to writeIdentity
    expect(res.stdout).toContain('--proxy-server=http://grove-gate:3128');
    const hosts = await client.request('exec.run', { workspace: ws.id, argv: ['getent', 'hosts', 'grove-gate'] });
    expect(hosts.stdout).toMatch(/^169\.254\.77\.1\s+grove-gate/);
    const viaProfile = await client.request('exec.run', {
      workspace: ws.id,
      argv: ['sh', '-c', `. /etc/profile.d/grove-proxy.sh && python3 -c "$0" GET http://outside.test:8080/via-name`, FETCH_THROUGH_GATE],
    });
    expect(JSON.parse(viaProfile.stdout)).toEqual({ status: 200, body: 'hello from outside GET /via-name' });
  });

  it('runs the gate as an unprivileged user of its own; a dead gate holds traffic and comes back, the helper unharmed', async () => {
    const helperPid = Number(readFileSync(instance().pidFile, 'utf8'));
    const first = await gatePid(helperPid);
    const status = readFileSync(`/proc/${first}/status`, 'utf8');
    const gateUid = Number((await execa('id', ['-u', 'grove-gate'])).stdout);
    expect(gateUid).toBeGreaterThan(0);
    expect(statusField(status, 'Uid')).toEqual([gateUid, gateUid, gateUid, gateUid]);
    expect(statusField(status, 'Gid').every((g) => g !== 0)).toBe(true);
    expect(statusField(status, 'Groups').every((g) => g !== 0)).toBe(true);
    for (const caps of ['CapPrm', 'CapEff', 'CapAmb']) expect(status).toMatch(new RegExp(`^${caps}:\\s+0+$`, 'm'));

    await client.request('egress.set', { workspace: ws.id, mode: 'gate', allow: [{ host: 'outside.test', port: 8080 }], holdMutating: false });
    // A request held for a person when the gate dies: its client's connection is gone, so is the request.
    const n = requests.length;
    const pending = fetchIn(client, ws, 'GET', 'http://other.test:8080/held-when-gate-dies');
    const held = await nextHeld(n);
    process.kill(first, 'SIGKILL');
    expect((await pending).status).toBe(0);
    await expect.poll(async () => (await client.request('approval.get', { id: held.id })).state, { timeout: 10_000 }).toBe('abandoned');
    // While no gate runs, nothing listens on the branch's gate address: its traffic has nowhere to go.
    const hostSide = ws.address.replace(/\d+$/, (x) => String(Number(x) - 1));
    await expect.poll(() => listens(hostSide, 3128), { timeout: 5_000, interval: 20 }).toBe(false);
    expect(await client.request('workspace.get', { workspace: ws.id })).toMatchObject({ state: 'running' });
    const restarted = await gatePid(helperPid);

    // The helper started it again, and the branch's listener with it.
    expect(restarted).not.toBe(first);
    await expect
      .poll(async () => (await fetchIn(client, ws, 'GET', 'http://outside.test:8080/gate-is-back')).status, { timeout: 30_000, interval: 500 })
      .toBe(200);
  });

  it("gives a fork a copy of its source's policy; changing the child's leaves the source's alone", async () => {
    await client.request('egress.set', { workspace: ws.id, mode: 'gate' });
    const sourcePolicy = (await client.request('egress.status', { workspace: ws.id })).policy;
    const report = await client.request('branch.fork', { workspace: ws.id, copies: 1, names: ['egress-a-1'] });
    const child = await track(report.children[0]!);
    made.push(child.id);
    expect((await client.request('egress.status', { workspace: child.id })).policy).toEqual(sourcePolicy);
    // The child's own gate serves it, at the same address its restored processes know.
    expect(await fetchIn(client, child, 'GET', 'http://outside.test:8080/from-child')).toEqual({ status: 200, body: 'hello from outside GET /from-child' });

    await client.request('egress.set', { workspace: child.id, mode: 'deny', remove: [{ host: 'outside.test' }] });
    expect((await client.request('egress.status', { workspace: child.id })).policy).toEqual({ mode: 'deny', allow: [], holdMutating: false });
    expect((await client.request('egress.status', { workspace: ws.id })).policy).toEqual(sourcePolicy);
    expect((await fetchIn(client, child, 'GET', 'http://outside.test:8080/child-denied')).status).toBe(403);
    expect((await fetchIn(client, ws, 'GET', 'http://outside.test:8080/source-allowed')).status).toBe(200);
  });
});
