// The app's controller and web server against a fake helper on a Unix
// socket: state read on connect, marked stale when the helper goes, read
// again (new epoch) when it is back; the launch secret guards every request
// and upgrade; renderer requests are validated against the contract.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { AppState } from '../../src/api/contract.js';
import { Controller } from '../../src/app/controller.js';
import { startWebServer, type WebServer } from '../../src/app/server.js';
import type { EgressRequest, Workspace } from '../../../privileged-helper/src/protocol/entities.js';

const W = (id: string, name: string): Workspace => ({
  id,
  name,
  image: 'desktop',
  state: 'running',
  hostname: name,
  machineId: 'f'.repeat(32),
  createdAt: '2026-01-01T00:00:00.000Z',
  address: '10.1.0.2',
  ports: [{ containerPort: 5900, hostPort: 45900, hostAddress: '127.0.0.1' }],
  pid: 42,
  parent: null,
  tree: id,
  version: null,
  main: true,
});

/** A helper that speaks just enough of the protocol. */
class FakeHelper {
  server: net.Server | null = null;
  sockets = new Set<net.Socket>();
  workspaces: Workspace[] = [];
  pending: EgressRequest[] = [];
  calls: string[] = [];
  params: Record<string, unknown>[] = [];
  constructor(
    readonly socketPath: string,
    public epoch: string,
  ) {}

  async listen(): Promise<void> {
    rmSync(this.socketPath, { force: true });
    this.server = net.createServer((s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      let buf = '';
      s.on('data', (d) => {
        buf += d.toString();
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const req = JSON.parse(buf.slice(0, i)) as { id: number; method: string; params: Record<string, unknown> };
          buf = buf.slice(i + 1);
          this.calls.push(req.method);
          this.params.push(req.params);
          s.write(`${JSON.stringify(this.answer(req))}\n`);
        }
      });
    });
    await new Promise<void>((r) => this.server!.listen(this.socketPath, r));
  }

  answer(req: { id: number; method: string; params: Record<string, unknown> }): unknown {
    switch (req.method) {
      case 'hello':
        return { id: req.id, result: { protocol: 1, helperVersion: 'fake', epoch: this.epoch, capabilities: [] } };
      case 'events.subscribe':
        return { id: req.id, result: { seq: 0 } };
      case 'workspace.list':
        return { id: req.id, result: this.workspaces };
      case 'version.list':
      case 'image.list':
        return { id: req.id, result: [] };
      case 'workspace.stop':
        return { id: req.id, error: { code: 'E_BUSY', message: 'a fork holds it' } };
      case 'egress.pending':
        return { id: req.id, result: this.pending };
      case 'egress.approve':
      case 'egress.deny': {
        const held = this.pending.find((r) => r.id === req.params.request);
        if (!held) return { id: req.id, error: { code: 'E_NOT_FOUND', message: `no held egress request '${String(req.params.request)}'` } };
        this.pending = this.pending.filter((r) => r !== held);
        return { id: req.id, result: held };
      }
      case 'egress.set':
        return { id: req.id, result: { mode: req.params.mode ?? 'deny', allow: req.params.allow ?? [], holdMutating: req.params.holdMutating ?? false } };
      case 'perf.get':
        return { id: req.id, result: PERF };
      default:
        return { id: req.id, error: { code: 'E_UNKNOWN_METHOD', message: req.method } };
    }
  }

  emit(event: string, data: unknown): void {
    for (const s of this.sockets) s.write(`${JSON.stringify({ event, seq: 1, data })}\n`);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
}

/** What perf.get answers: no forks yet, no branch running. */
const PERF = {
  forks: [],
  branches: [],
  host: { totalBytes: 2 ** 34, availableBytes: 2 ** 33, pageBytes: 4096, ksm: { pagesShared: 0, pagesSharing: 0, pagesUnshared: 0, fullScans: 3, run: 1 } },
  at: '2026-11-30T10:00:00.000Z',
};

let dir: string;
let helper: FakeHelper;
let controller: Controller;
let web: WebServer;

async function until<T>(fn: () => T | undefined | false, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error('timed out');
    await sleep(20);
  }
}

/** A renderer: the API socket with the cookie, collecting state events. */
async function renderer(secret: string): Promise<{ ws: WebSocket; states: AppState[]; call: (method: string, params: unknown) => Promise<{ result?: unknown; error?: { code: string; message: string } }> }> {
  const ws = new WebSocket(`${web.url.replace('http', 'ws')}api`, { headers: { cookie: `grove_token=${secret}` } });
  const states: AppState[] = [];
  const waiting = new Map<number, (f: { result?: unknown; error?: { code: string; message: string } }) => void>();
  ws.on('message', (m: Buffer) => {
    const f = JSON.parse(m.toString()) as { event?: string; data?: AppState; id?: number };
    if (f.event === 'state') states.push(f.data!);
    else if (f.id !== undefined) waiting.get(f.id)?.(f as never);
  });
  await new Promise((r, j) => {
    ws.once('open', r);
    ws.once('error', j);
  });
  let id = 0;
  const call = (method: string, params: unknown) =>
    new Promise<{ result?: unknown; error?: { code: string; message: string } }>((resolve) => {
      waiting.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  return { ws, states, call };
}

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'grove-app-'));
  mkdirSync(path.join(dir, 'dist'));
  writeFileSync(path.join(dir, 'dist/index.html'), '<!doctype html><title>Grove</title>');
  helper = new FakeHelper(path.join(dir, 'helper.sock'), 'epoch-1');
  helper.workspaces = [W('aaaaaaa1', 'one')];
  await helper.listen();
  controller = new Controller({ socketPath: helper.socketPath, retryMs: 50 });
  await controller.start();
  web = await startWebServer(controller, { rendererDir: path.join(dir, 'dist') });
});

afterEach(async () => {
  controller.stop();
  await web.close();
  await helper.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

describe('web mode access', () => {
  it('answers 401 without the secret, trades the secret for a strict HttpOnly cookie, then serves the app', async () => {
    expect((await fetch(web.url)).status).toBe(401);
    expect((await fetch(`${web.url}?token=wrong`)).status).toBe(401);
    const first = await fetch(web.launchUrl, { redirect: 'manual' });
    expect(first.status).toBe(303);
    expect(first.headers.get('location')).toBe('/');
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toContain(`grove_token=${web.secret}`);
    expect(cookie).toContain('HttpOnly');
    expect(cookie).toContain('SameSite=Strict');
    const page = await fetch(web.url, { headers: { cookie: `grove_token=${web.secret}` } });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    expect(await page.text()).toContain('<title>Grove</title>');
    // No path escapes the renderer's folder.
    const escape = await fetch(`${web.url}..%2F..%2Fetc%2Fpasswd`, { headers: { cookie: `grove_token=${web.secret}` } });
    expect(await escape.text()).not.toContain('root:');
  });

  it('refuses WebSocket upgrades without the secret or from another origin', async () => {
    const noCookie = new WebSocket(`${web.url.replace('http', 'ws')}api`);
    await expect(new Promise((r, j) => (noCookie.once('open', r), noCookie.once('error', j)))).rejects.toThrow(/401/);
    const otherOrigin = new WebSocket(`${web.url.replace('http', 'ws')}api`, { headers: { cookie: `grove_token=${web.secret}`, origin: 'http://evil.example' } });
    await expect(new Promise((r, j) => (otherOrigin.once('open', r), otherOrigin.once('error', j)))).rejects.toThrow(/401/);
    const opaque = new WebSocket(`${web.url.replace('http', 'ws')}api`, { headers: { cookie: `grove_token=${web.secret}`, origin: 'null' } });
    await expect(new Promise((r, j) => (opaque.once('open', r), opaque.once('error', j)))).rejects.toThrow(/401/);
    // The server is still up.
    expect((await fetch(web.url)).status).toBe(401);
  });

  it('refuses to listen beyond loopback without TLS', async () => {
    await expect(startWebServer(controller, { host: '0.0.0.0' })).rejects.toThrow(/without TLS/);
  });

  it('serves HTTPS with a Secure cookie when given a certificate', async () => {
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1', '-keyout', key, '-out', cert], { stdio: 'ignore' });
    const tls = await startWebServer(controller, { tls: { cert, key }, rendererDir: path.join(dir, 'dist') });
    try {
      expect(tls.launchUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/\?token=/);
      const res = await new Promise<{ status: number; cookie: string }>((resolve, reject) => {
        https
          .get(tls.launchUrl, { ca: readFileSync(cert), checkServerIdentity: () => undefined }, (r) => {
            r.resume();
            resolve({ status: r.statusCode!, cookie: String(r.headers['set-cookie']) });
          })
          .on('error', reject);
      });
      expect(res.status).toBe(303);
      expect(res.cookie).toContain('Secure');
    } finally {
      await tls.close();
    }
  });
});

describe('controller', () => {
  it('sends the state on connect and validates requests against the contract', async () => {
    const r = await renderer(web.secret);
    const s = await until(() => r.states.at(-1));
    expect(s.connection.status).toBe('connected');
    expect(s.connection.epoch).toBe('epoch-1');
    expect(s.branches.map((b) => b.name)).toEqual(['one']);
    expect((await r.call('branch.fork', { workspace: 'one', copies: 99 })).error?.code).toBe('E_INVALID_PARAMS');
    expect((await r.call('no.such', {})).error?.code).toBe('E_UNKNOWN_METHOD');
    expect((await r.call('terminal.write', { session: 's1', data: 'x' })).error?.code).toBe('E_NOT_FOUND');
    // A helper error comes back with its code; the activity log records who did what.
    expect((await r.call('workspace.stop', { workspace: 'one' })).error).toEqual({ code: 'E_BUSY', message: 'a fork holds it' });
    const after = await until(() => r.states.find((x) => x.activity.some((a) => a.outcome === 'failed' && a.action === 'stop')));
    expect(after.activity.find((a) => a.action === 'stop' && a.outcome === 'failed')).toMatchObject({ actor: 'person', target: 'one', detail: 'a fork holds it' });
    expect(after.operations.at(-1)).toMatchObject({ kind: 'workspace.stop', status: 'failed' });
    r.ws.close();
  });

  it("passes perf.get through to the helper, with the contract's strict params", async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1));
    expect((await r.call('perf.get', {})).result).toEqual(PERF);
    expect(helper.calls.at(-1)).toBe('perf.get');
    expect((await r.call('perf.get', { limit: 5 })).error?.code).toBe('E_INVALID_PARAMS');
    r.ws.close();
  });

  it('applies helper events as they come', async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1));
    helper.emit('workspace.changed', { workspace: { ...W('bbbbbbb2', 'one-1'), parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false } });
    const s = await until(() => r.states.find((x) => x.branches.length === 2));
    // Nothing ran in the app: another client (an agent's CLI) made it.
    expect(s.activity.at(-1)).toMatchObject({ actor: 'outside', action: 'branch appeared', target: 'one-1' });
    helper.emit('workspace.removed', { id: 'bbbbbbb2' });
    await until(() => r.states.at(-1)!.branches.length === 1);
    r.ws.close();
  });

  it('keeps the approvals queue live from egress events, decides as the person, and logs decisions', async () => {
    const held = (id: string, host: string): EgressRequest => ({
      id,
      workspace: 'aaaaaaa1',
      workspaceName: 'one',
      host,
      port: 8080,
      method: 'GET',
      url: `http://${host}:8080/x`,
      reason: 'destination',
      at: new Date().toISOString(),
      expiresAt: new Date(Date.now() + 60_000).toISOString(),
    });
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1)?.connection.status === 'connected');
    const q1 = held('q00000001', 'outside.test');
    const q2 = held('q00000002', 'other.test');
    helper.pending = [q1, q2];
    helper.emit('egress.request', q1);
    helper.emit('egress.request', q2);
    const queued = await until(() => r.states.find((x) => x.approvals.length === 2));
    expect(queued.approvals.map((a) => a.host)).toEqual(['outside.test', 'other.test']);
    expect(queued.activity.at(-1)).toMatchObject({ actor: 'helper', action: 'asks for outside access', target: 'one' });

    // The person approves one (always for its destination) in the app.
    expect((await r.call('egress.approve', { request: 'q00000001', always: true })).result).toMatchObject({ id: 'q00000001' });
    expect(helper.params.at(-1)).toEqual({ request: 'q00000001', always: true });
    helper.emit('egress.decision', { request: 'q00000001', workspace: 'aaaaaaa1', host: 'outside.test', port: 8080, method: 'GET', verdict: 'approved', decidedBy: 'app:grove-app', at: new Date().toISOString() });
    // The other times out in the helper.
    helper.emit('egress.decision', { request: 'q00000002', workspace: 'aaaaaaa1', host: 'other.test', port: 8080, method: 'GET', verdict: 'timeout', decidedBy: 'timeout', at: new Date().toISOString() });
    const after = await until(() => r.states.find((x) => x.approvals.length === 0 && x.activity.some((a) => a.action === 'outside access timeout')));
    const mine = after.activity.filter((a) => a.action === 'always allow outside access');
    expect(mine).toEqual([expect.objectContaining({ actor: 'person', target: 'one', outcome: 'ok', detail: 'GET http://outside.test:8080/x' })]);
    // The person's decision is logged once, not again when the helper reports it.
    expect(after.activity.some((a) => a.action === 'outside access approved')).toBe(false);
    expect(after.activity.find((a) => a.action === 'outside access timeout')).toMatchObject({ actor: 'helper', target: 'one' });

    // Deciding a request that is gone says so, and the queue drops it.
    expect((await r.call('egress.deny', { request: 'q00000003' })).error?.code).toBe('E_NOT_FOUND');
    // Policy verdicts repeated for one destination are logged once.
    for (let i = 0; i < 3; i++) helper.emit('egress.decision', { request: null, workspace: 'aaaaaaa1', host: 'www.google.com', port: 443, method: 'CONNECT', verdict: 'denied', decidedBy: 'policy', at: new Date().toISOString() });
    const denied = await until(() => r.states.find((x) => x.activity.some((a) => a.action === 'outside access denied')));
    await sleep(200);
    expect(r.states.at(-1)!.activity.filter((a) => a.action === 'outside access denied')).toHaveLength(1);
    expect(denied.activity.find((a) => a.action === 'outside access denied')).toMatchObject({ actor: 'helper', detail: 'CONNECT www.google.com:443 · by policy' });

    // A policy change is the person's, in words.
    expect((await r.call('egress.set', { workspace: 'aaaaaaa1', mode: 'gate', allow: [{ host: 'outside.test', port: 8080 }] })).result).toEqual({ mode: 'gate', allow: [{ host: 'outside.test', port: 8080 }], holdMutating: false });
    const set = await until(() => r.states.find((x) => x.activity.some((a) => a.action === 'change outside access')));
    expect(set.activity.find((a) => a.action === 'change outside access')).toMatchObject({ actor: 'person', target: 'one', detail: 'mode gate, allow outside.test:8080 → gate, allow outside.test:8080' });
    r.ws.close();
  });

  it('reads the held requests again after reconnecting', async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1)?.connection.status === 'connected');
    await helper.stop();
    await until(() => r.states.find((x) => x.connection.status === 'disconnected'));
    helper.epoch = 'epoch-2';
    helper.pending = [
      { id: 'q0000000a', workspace: 'aaaaaaa1', workspaceName: 'one', host: 'outside.test', port: 443, method: 'CONNECT', url: null, reason: 'destination', at: new Date().toISOString(), expiresAt: new Date(Date.now() + 60_000).toISOString() },
    ];
    await helper.listen();
    const back = await until(() => r.states.find((x) => x.connection.epoch === 'epoch-2' && x.connection.status === 'connected'), 8000);
    expect(back.approvals.map((a) => a.id)).toEqual(['q0000000a']);
    r.ws.close();
  });

  it('marks the state stale when the helper goes, and reads everything again from a restarted helper', async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1)?.connection.status === 'connected');
    expect(controller.vncPort('aaaaaaa1')).toBe(45900);
    await helper.stop();
    const stale = await until(() => r.states.find((x) => x.connection.status === 'disconnected'));
    expect(stale.connection.error).toMatch(/helper/);
    // Nothing is offered as live while disconnected: no desktop stream, no actions.
    expect(controller.vncPort('aaaaaaa1')).toBeNull();
    expect((await r.call('workspace.start', { workspace: 'one' })).error?.code).toBe('E_PRECONDITION');

    helper.epoch = 'epoch-2';
    helper.workspaces = [W('ccccccc3', 'two')];
    helper.calls = [];
    await helper.listen();
    const back = await until(() => r.states.find((x) => x.connection.status === 'connected' && x.connection.epoch === 'epoch-2'), 8000);
    expect(back.branches.map((b) => b.name)).toEqual(['two']);
    expect(helper.calls).toEqual(expect.arrayContaining(['hello', 'events.subscribe', 'workspace.list', 'version.list', 'image.list']));
    expect(back.activity.some((a) => a.action === 'helper restarted')).toBe(true);
    r.ws.close();
  });
});
