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
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Workspace } from '../../src/api/contract.js';
import { Controller } from '../../src/app/controller.js';
import { startWebServer, type WebServer } from '../../src/app/server.js';
import { FakeHelper, PERF, connectRenderer } from './app-fake-helper.js';
import { until } from '../../../privileged-helper/test/until.js';
import { ALICE, APP, BOB, CONNECTION, DISCARD, PROMOTE, approval, audit, branch, decided, desktopAction, grant } from './app-fixtures.js';

const W = (id: string, name: string): Workspace => branch(id, name);

let dir: string;
let helper: FakeHelper;
let controller: Controller;
let web: WebServer;

/** A renderer connected to this test's web server. */
const renderer = (secret: string) => connectRenderer(web, secret);

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
    const otherOrigin = new WebSocket(`${web.url.replace('http', 'ws')}api`, {
      headers: { cookie: `grove_token=${web.secret}`, origin: 'http://evil.example' },
    });
    await expect(new Promise((r, j) => (otherOrigin.once('open', r), otherOrigin.once('error', j)))).rejects.toThrow(/401/);
    const opaque = new WebSocket(`${web.url.replace('http', 'ws')}api`, { headers: { cookie: `grove_token=${web.secret}`, origin: 'null' } });
    await expect(new Promise((r, j) => (opaque.once('open', r), opaque.once('error', j)))).rejects.toThrow(/401/);
    // The server is still up.
    expect((await fetch(web.url)).status).toBe(401);
  });

  it("bridges a branch's desktop (/vnc/ID) to its desktop socket byte for byte; 404 for a branch without one", async () => {
    const desk = path.join(dir, 'desk.sock');
    const vnc = net.createServer((s) => {
      s.write('RFB 003.008\n');
      s.on('data', (d) => s.write(`got ${d.toString()}`));
    });
    await new Promise<void>((r) => vnc.listen(desk, r));
    const cookie = { headers: { cookie: `grove_token=${web.secret}` } };
    try {
      helper.emit('workspace.changed', { workspace: branch('aaaaaaa1', 'one', { vncSocket: desk }) });
      await until(() => controller.vncSocket('aaaaaaa1') === desk);
      const viewer = new WebSocket(`${web.url.replace('http', 'ws')}vnc/aaaaaaa1`, cookie);
      let received = '';
      viewer.on('message', (m: Buffer) => (received += m.toString()));
      await until(() => received === 'RFB 003.008\n');
      viewer.send('RFB 003.008\n');
      await until(() => received.endsWith('got RFB 003.008\n'));
      viewer.close();
      helper.emit('workspace.changed', { workspace: branch('aaaaaaa1', 'one', { state: 'stopped', vncSocket: null }) });
      await until(() => controller.vncSocket('aaaaaaa1') === null);
      const stopped = new WebSocket(`${web.url.replace('http', 'ws')}vnc/aaaaaaa1`, cookie);
      await expect(new Promise((r, j) => (stopped.once('open', r), stopped.once('error', j)))).rejects.toThrow(/404/);
    } finally {
      await new Promise((r) => vnc.close(r));
    }
  });

  it('refuses to listen beyond loopback without TLS', async () => {
    await expect(startWebServer(controller, { host: '0.0.0.0' })).rejects.toThrow(/without TLS/);
  });

  it('serves HTTPS with a Secure cookie when given a certificate', async () => {
    const cert = path.join(dir, 'cert.pem');
    const key = path.join(dir, 'key.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:prime256v1',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-keyout',
        key,
        '-out',
        cert,
      ],
      { stdio: 'ignore' },
    );
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
    expect(s.connection).toMatchObject({ status: 'connected', epoch: 'epoch-1', identity: APP });
    expect(s.branches.map((b) => b.name)).toEqual(['one']);
    expect((await r.call('branch.fork', { workspace: 'one', copies: 99 })).error?.code).toBe('E_INVALID_PARAMS');
    expect((await r.call('no.such', {})).error?.code).toBe('E_UNKNOWN_METHOD');
    // The egress-only decisions are gone: every decision goes through the approvals queue.
    expect((await r.call('egress.approve', { request: 'q00000001' })).error?.code).toBe('E_UNKNOWN_METHOD');
    expect((await r.call('terminal.write', { session: 's1', data: 'x' })).error?.code).toBe('E_NOT_FOUND');
    // A helper error comes back with its code; the activity log records who did what.
    expect((await r.call('workspace.stop', { workspace: 'one' })).error).toEqual({ code: 'E_BUSY', message: 'a fork holds it' });
    const after = await until(() => r.states.find((x) => x.activity.some((a) => a.outcome === 'failed' && a.action === 'stop')));
    expect(after.activity.find((a) => a.action === 'stop' && a.outcome === 'failed')).toMatchObject({
      actor: 'you',
      who: null,
      target: 'one',
      detail: 'a fork holds it',
    });
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

  it('shows the pool as read on connect, then as the helper reports it becoming low, in the state and the activity log', async () => {
    const r = await renderer(web.secret);
    expect((await until(() => r.states.find((x) => x.pool !== null))).pool).toEqual(helper.pool);
    helper.emit('pool.space', { freeBytes: 300 * 2 ** 20, totalBytes: 16 * 2 ** 30, low: true });
    const low = await until(() => r.states.find((x) => x.pool?.low === true));
    expect(low.activity.at(-1)).toMatchObject({ actor: 'helper', action: 'the pool is low on space', outcome: 'failed', detail: '300 MiB of 16384 MiB free' });
    expect((await r.call('space.get', { deep: true })).error?.code).toBe('E_INVALID_PARAMS');
    r.ws.close();
  });

  it('keeps versions live: a checkpoint shows as saving, then saved, and goes when it is removed', async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.find((x) => x.branches.length === 1));
    const version = { id: 'bbbbbbb1', branch: 'aaaaaaa1', tree: 'aaaaaaa1', label: 'before', createdAt: '2026-12-01T12:00:00.000Z', saved: false };
    helper.emit('version.changed', { version });
    expect((await until(() => r.states.find((x) => x.versions.length === 1))).versions).toEqual([version]);
    helper.emit('version.changed', { version: { ...version, saved: true } });
    await until(() => r.states.find((x) => x.versions[0]?.saved === true));
    helper.emit('version.removed', { id: version.id });
    await until(() => r.states.findLast((x, i) => i > 0 && x.versions.length === 0 && r.states.slice(0, i).some((y) => y.versions[0]?.saved)));
    r.ws.close();
  });

  it('attributes what the helper reports to whoever caused it: this app, another client, or the helper', async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1));
    const child = {
      ...W('bbbbbbb2', 'one-1'),
      parent: 'aaaaaaa1',
      tree: 'aaaaaaa1',
      main: false,
      madeBy: { role: 'agent' as const, uid: 1001, user: 'alice' },
    };
    helper.emit('workspace.changed', { workspace: child }, ALICE);
    helper.emit('workspace.changed', { workspace: { ...child, state: 'stopped' } }, APP);
    helper.emit('workspace.changed', { workspace: { ...child, state: 'running' } });
    const s = await until(() => r.states.find((x) => x.activity.some((a) => a.action === 'branch running')));
    expect(s.activity.slice(-3)).toEqual([
      expect.objectContaining({
        actor: 'agent',
        who: { role: 'agent', uid: 1001, user: 'alice' },
        action: 'branch appeared',
        target: 'one-1',
        detail: 'running, forked from one',
      }),
      expect.objectContaining({ actor: 'you', who: null, action: 'branch stopped' }),
      expect.objectContaining({ actor: 'helper', who: null, action: 'branch running' }),
    ]);
    expect(s.branches.find((b) => b.id === 'bbbbbbb2')?.madeBy).toEqual({ role: 'agent', uid: 1001, user: 'alice' });

    // The audit log: another client's calls are logged as theirs; this app's own are logged once, as it made them.
    helper.emit('audit', audit(1, BOB, 'branch.checkpoint', 'one-1'), BOB);
    helper.emit('audit', audit(2, APP, 'workspace.stop', 'one'), APP);
    helper.emit('audit', audit(3, ALICE, 'approval.approve', 'q00000001', 'error', 'only a person may call approval.approve'), ALICE);
    helper.emit('audit', audit(4, ALICE, 'approval.create', 'one-1'), ALICE);
    helper.emit('audit', audit(5, null, 'workspace.delete', 'bbbbbbb2'));
    const logged = await until(() => r.states.find((x) => x.activity.some((a) => a.action === 'discard')));
    const fromAudit = logged.activity.slice(-3);
    expect(fromAudit).toEqual([
      expect.objectContaining({ actor: 'person', who: { role: 'person', uid: 1002, user: 'bob' }, action: 'checkpoint', target: 'one-1', outcome: 'ok' }),
      // An agent trying to decide is worth seeing; its granted request, not: approval.opened tells that.
      expect.objectContaining({ actor: 'agent', action: 'approve a request', outcome: 'failed', detail: 'only a person may call approval.approve' }),
      expect.objectContaining({ actor: 'helper', action: 'discard', target: 'one-1' }),
    ]);
    helper.emit('workspace.removed', { id: 'bbbbbbb2' });
    await until(() => r.states.at(-1)!.branches.length === 1);
    r.ws.close();
  });

  it("opens a child's copy of its source's terminal, scrollback first, though it came before the open's answer", async () => {
    const opened: Record<string, unknown>[] = [];
    helper.handlers.set('exec.terminals', () => ({
      terminals: [
        { id: 't0000000a', attached: true },
        { id: 't0000000b', attached: false },
      ],
    }));
    helper.handlers.set('exec.open', (params) => {
      opened.push(params);
      helper.emit('exec.output', { session: 's7', data: 'scrollback of the source' });
      return { session: 's7' };
    });
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1));
    expect((await r.call('terminal.open', { workspace: 'one', cols: 80, rows: 24 })).result).toEqual({ session: 's7', attached: 't0000000b' });
    expect(opened).toEqual([{ workspace: 'one', cols: 80, rows: 24, attach: 't0000000b' }]);
    expect(await until(() => r.events.find((e) => e.event === 'terminal.output'))).toEqual({
      event: 'terminal.output',
      data: { session: 's7', data: 'scrollback of the source' },
    });
  });

  it('keeps the approvals queue live, decides as the person, and logs each decision once', async () => {
    helper.workspaces = [W('aaaaaaa1', 'one'), { ...W('aaaaaaa2', 'one-1'), parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false }];
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1)?.connection.status === 'connected');
    await controller.refresh();
    const promote = approval('q00000001', PROMOTE);
    const held = approval('q00000002', CONNECTION);
    const discard = approval('q00000003', DISCARD);
    helper.approvals = [promote, held, discard];
    for (const a of helper.approvals) helper.emit('approval.opened', a, a.requestedBy ?? undefined);
    const queued = await until(() => r.states.find((x) => x.approvals.length === 3));
    expect(queued.approvals.map((a) => a.action.kind)).toEqual(['branch.promote', 'egress.connection', 'branch.discard']);
    expect(queued.approvals[0]!.preview.thumbnail).toMatch(/^data:image\/png/);
    expect(queued.activity.slice(-3)).toEqual([
      expect.objectContaining({
        actor: 'agent',
        who: expect.objectContaining({ user: 'alice' }),
        action: 'asks to promote',
        target: 'one-1',
        detail: '“the tests pass on this branch” · waiting for a person',
      }),
      expect.objectContaining({ actor: 'helper', action: 'asks for outside access', detail: 'GET http://outside.test:8080/x · waiting for a person' }),
      expect.objectContaining({ actor: 'agent', action: 'asks to discard' }),
    ]);

    // The person approves the promote with a note; the helper carries it out before it answers.
    const approved = await r.call('approval.approve', { id: 'q00000001', note: 'ship it' });
    expect(approved.result).toMatchObject({ id: 'q00000001', state: 'done', decision: { by: APP, note: 'ship it' } });
    expect(helper.params.at(-1)).toEqual({ id: 'q00000001', note: 'ship it' });
    // Denies the held connection; another person denies the discard elsewhere.
    expect((await r.call('approval.deny', { id: 'q00000002' })).result).toMatchObject({ state: 'denied' });
    expect(helper.params.at(-1)).toEqual({ id: 'q00000002' });
    helper.emit('approval.changed', decided(discard, BOB, false, 'keep it'), BOB);
    const after = await until(() => r.states.find((x) => x.approvals.length === 0 && x.decided.length === 3));
    // Recently decided, newest decision first, without thumbnails (history, not something to decide on).
    expect(after.decided.map((a) => [a.id, a.state])).toEqual([
      ['q00000003', 'denied'],
      ['q00000002', 'denied'],
      ['q00000001', 'done'],
    ]);
    expect(after.decided.every((a) => a.preview.thumbnail === null)).toBe(true);
    // Each decision once, when it was made; what the approved request did, in the name of the agent that asked.
    const actions = after.activity.map((a) => `${a.actor}${a.who ? `:${a.who.user}` : ''} ${a.action} ${a.outcome}`);
    expect(actions.slice(-4)).toEqual([
      'you approve promote ok',
      'agent:alice promote to main line ok',
      'you deny outside access ok',
      'person:bob deny discard ok',
    ]);
    expect(after.activity.find((a) => a.action === 'approve promote')!.detail).toBe('agent alice: “the tests pass on this branch” · note: ship it');
    expect(after.activity.find((a) => a.action === 'promote to main line')).toMatchObject({ target: 'one-1', detail: 'approved by person root (uid 0)' });
    expect(after.activity.find((a) => a.action === 'deny outside access')!.detail).toBe('GET http://outside.test:8080/x');
    expect(after.activity.find((a) => a.action === 'deny discard')!.detail).toContain('note: keep it');

    // A late report of an open state does not reopen a closed request.
    helper.emit('approval.changed', decided(promote, APP, true, 'ship it'));
    // A request nobody decided expires.
    const stop = approval('q00000004', { kind: 'workspace.stop' });
    helper.emit('approval.opened', stop, ALICE);
    helper.emit('approval.changed', {
      ...stop,
      state: 'expired',
      decision: { by: null, grant: null, at: new Date().toISOString(), note: null, always: false },
    });
    const expired = await until(() => r.states.find((x) => x.activity.some((a) => a.action === 'request expired')));
    expect(expired.approvals).toEqual([]);
    expect(expired.decided.find((a) => a.id === 'q00000001')?.state).toBe('done');
    expect(expired.activity.at(-1)).toMatchObject({
      actor: 'helper',
      target: 'one-1',
      detail: 'agent alice: “the tests pass on this branch” · nobody decided in time',
    });

    // Deciding a request the helper no longer has says so, and the queue drops it.
    helper.emit('approval.opened', approval('q00000005', DISCARD), ALICE);
    await until(() => r.states.find((x) => x.approvals.some((a) => a.id === 'q00000005')));
    expect((await r.call('approval.approve', { id: 'q00000005' })).error?.code).toBe('E_NOT_FOUND');
    const dropped = await until(() => r.states.find((x) => x.activity.at(-1)?.outcome === 'failed' && x.approvals.length === 0));
    expect(dropped.activity.at(-1)).toMatchObject({
      actor: 'you',
      action: 'approve discard',
      target: 'one-1',
      detail: "agent alice: “the tests pass on this branch”: no pending request 'q00000005'",
    });
    r.ws.close();
  });

  it('keeps the standing approvals, changes them as the person, and logs who changed them', async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1)?.connection.status === 'connected');
    expect((await r.call('grant.set', { workspace: 'aaaaaaa1', kind: 'branch.promote' })).result).toMatchObject({ id: 'g00000001', kind: 'branch.promote' });
    expect(helper.params.at(-1)).toEqual({ workspace: 'aaaaaaa1', kind: 'branch.promote' });
    const set = await until(() => r.states.find((x) => x.grants.length === 1 && x.activity.some((a) => a.action.startsWith('let agents'))));
    expect(set.activity.filter((a) => a.action === 'let agents promote without asking')).toEqual([
      expect.objectContaining({ actor: 'you', target: 'one', outcome: 'ok' }),
    ]);
    // Another person revokes it with the CLI.
    helper.emit('grant.changed', { grant: set.grants[0], revoked: true }, BOB);
    const revoked = await until(() => r.states.find((x) => x.activity.at(-1)?.action === 'ask again before agents promote'));
    expect(revoked.grants).toEqual([]);
    expect(revoked.activity.at(-1)).toMatchObject({ actor: 'person', who: { user: 'bob' }, action: 'ask again before agents promote', target: 'one' });
    expect((await r.call('grant.set', { workspace: 'one', kind: 'branch.fork' })).error?.code).toBe('E_INVALID_PARAMS');
    r.ws.close();
  });

  it("follows what agents do on each branch: the last few actions, with the pointer; others' desktop use is only logged", async () => {
    helper.workspaces = [W('aaaaaaa1', 'one'), { ...W('aaaaaaa2', 'one-1'), parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false }];
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1)?.connection.status === 'connected');
    await controller.refresh();
    helper.emit('desktop.action', desktopAction('screenshot', 'screenshot of the whole screen', { x: 10, y: 10 }), ALICE);
    for (let i = 0; i < 10; i++) helper.emit('desktop.action', desktopAction('click', `click left at ${100 + i},200`, { x: 100 + i, y: 200 }), ALICE);
    helper.emit('desktop.action', desktopAction('type', 'type 12 characters', { x: 109, y: 200 }), ALICE);
    helper.emit('desktop.action', desktopAction('click', 'click left at 5,5', { x: 5, y: 5 }), BOB);
    helper.emit('audit', audit(7, ALICE, 'exec.run', 'one-1'), ALICE);
    const s = await until(() => r.states.find((x) => x.agents.aaaaaaa2?.at(-1)?.action === 'exec.run'));
    const seen = s.agents.aaaaaaa2!;
    // Bounded per branch, oldest first; a person's desktop use is not an agent's.
    expect(seen).toHaveLength(8);
    expect(seen.every((a) => a.by.user === 'alice')).toBe(true);
    expect(seen.at(-2)).toMatchObject({
      action: 'type',
      doing: 'typing',
      summary: 'type 12 characters',
      cursor: { x: 109, y: 200 },
      screen: { width: 1280, height: 800 },
    });
    expect(seen.at(-1)).toMatchObject({ action: 'exec.run', doing: 'running a command', summary: 'run a command', cursor: null });
    // The log folds an agent's run of desktop actions into one entry.
    const uses = s.activity.filter((a) => a.action === 'use the desktop');
    expect(uses.map((a) => [a.who?.user, a.count, a.detail])).toEqual([
      ['alice', 12, 'type 12 characters'],
      ['bob', 1, 'click left at 5,5'],
    ]);
    helper.emit('workspace.removed', { id: 'aaaaaaa2' });
    const gone = await until(() => r.states.find((x) => x.branches.length === 1));
    expect(gone.agents).toEqual({});
    r.ws.close();
  });

  it('reads the queue and the grants again after reconnecting, and keeps the history it saw', async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1)?.connection.status === 'connected');
    helper.emit('approval.changed', { ...approval('q0000000b', PROMOTE), state: 'expired' });
    await until(() => r.states.find((x) => x.decided.length === 1));
    await helper.stop();
    await until(() => r.states.find((x) => x.connection.status === 'disconnected'));
    helper.epoch = 'epoch-2';
    helper.approvals = [approval('q0000000a', CONNECTION)];
    helper.grants = [grant('g0000000a', 'workspace.stop')];
    helper.params = [];
    await helper.listen();
    const back = await until(() => r.states.find((x) => x.connection.epoch === 'epoch-2' && x.connection.status === 'connected'), { timeoutMs: 8000 });
    expect(back.approvals.map((a) => a.id)).toEqual(['q0000000a']);
    expect(back.decided.map((a) => a.id)).toEqual(['q0000000b']);
    expect(back.grants.map((g) => g.id)).toEqual(['g0000000a']);
    // Only the open ones: the helper keeps hundreds of closed ones, and this is read after every action.
    expect(helper.params).toEqual(expect.arrayContaining([{ all: false }]));
    r.ws.close();
  });

  it('marks the state stale when the helper goes, and reads everything again from a restarted helper', async () => {
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1)?.connection.status === 'connected');
    expect(controller.vncSocket('aaaaaaa1')).toBe('/run/grove/vnc/main-aaaaaaa1.sock');
    await helper.stop();
    const stale = await until(() => r.states.find((x) => x.connection.status === 'disconnected'));
    expect(stale.connection.error).toMatch(/helper/);
    // Nothing is offered as live while disconnected: no desktop stream, no actions.
    expect(controller.vncSocket('aaaaaaa1')).toBeNull();
    expect((await r.call('workspace.start', { workspace: 'one' })).error?.code).toBe('E_PRECONDITION');

    helper.epoch = 'epoch-2';
    helper.workspaces = [W('ccccccc3', 'two')];
    helper.calls = [];
    await helper.listen();
    const back = await until(() => r.states.find((x) => x.connection.status === 'connected' && x.connection.epoch === 'epoch-2'), { timeoutMs: 8000 });
    expect(back.branches.map((b) => b.name)).toEqual(['two']);
    expect(helper.calls).toEqual(
      expect.arrayContaining(['hello', 'events.subscribe', 'workspace.list', 'version.list', 'image.list', 'approval.list', 'grant.list', 'space.pool']),
    );
    expect(back.activity.some((a) => a.action === 'helper restarted')).toBe(true);
    r.ws.close();
  });
});

describe('taking work home and merging', () => {
  /** What the controller last asked the helper's method (a refresh's reads come after an operation's call). */
  const lastParams = (method: string) => helper.params[helper.calls.lastIndexOf(method)];
  const MERGED = { target: 'aaaaaaa1', sources: [], scope: '/root/work', dryRun: false, merged: true, version: 'c0000001', changes: [], conflicts: [], ms: 12 };

  it("reviews an export as the helper's patch of it, read from a private folder that is gone afterwards", async () => {
    let written = '';
    helper.handlers.set('branch.export', (p) => {
      const to = p.to as { kind: string; file: string };
      expect(to.kind).toBe('patch');
      written = to.file;
      writeFileSync(to.file, 'From 1234 Mon Sep 17 00:00:00 2001\n+new line\n');
      return { commit: 'c'.repeat(40), parent: 'p'.repeat(40), files: 1, branch: null, patch: to.file };
    });
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1));
    const review = await r.call('branch.exportReview', { workspace: 'one' });
    expect(review.result).toEqual({ patch: 'From 1234 Mon Sep 17 00:00:00 2001\n+new line\n', cut: false, files: 1, parent: 'p'.repeat(40) });
    expect(path.dirname(written).startsWith(os.tmpdir())).toBe(true);
    expect(() => readFileSync(written)).toThrow(/ENOENT/);
    r.ws.close();
  });

  it("exports into the person's repository as an operation, the helper's refusal in its words", async () => {
    helper.handlers.set('branch.export', (p) => {
      if ((p.to as { branch: string }).branch === 'taken') throw Object.assign(new Error("/repo has a branch 'taken' already"), { code: 'E_CONFLICT' });
      return { commit: 'c'.repeat(40), parent: 'p'.repeat(40), files: 2, branch: 'grove/one', patch: null };
    });
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1));
    expect((await r.call('branch.export', { workspace: 'one', repo: 'relative/path', branch: 'x' })).error?.code).toBe('E_INVALID_PARAMS');
    expect((await r.call('branch.export', { workspace: 'one', repo: '/repo', branch: 'taken' })).error).toEqual({
      code: 'E_CONFLICT',
      message: "/repo has a branch 'taken' already",
    });
    expect((await r.call('branch.export', { workspace: 'one', repo: '/repo', branch: 'grove/one', message: 'Fix it' })).result).toMatchObject({ files: 2 });
    expect(lastParams('branch.export')).toEqual({ workspace: 'one', to: { kind: 'git', repo: '/repo', branch: 'grove/one' }, message: 'Fix it' });
    const s = await until(() => r.states.find((x) => x.operations.some((o) => o.kind === 'branch.export' && o.status === 'done')));
    expect(s.activity.at(-1)).toMatchObject({
      actor: 'you',
      action: 'export to /repo as branch grove/one',
      outcome: 'ok',
      detail: expect.stringContaining('2 file(s)'),
    });
    r.ws.close();
  });

  it('passes a dry run straight through, and runs a merge with its settlements as an operation', async () => {
    helper.handlers.set('branch.merge', (p) => ({ ...MERGED, dryRun: p.dryRun === true, merged: p.dryRun !== true }));
    const r = await renderer(web.secret);
    await until(() => r.states.at(-1));
    expect((await r.call('branch.merge', { workspace: 'one', sources: [], dryRun: true })).error?.code).toBe('E_INVALID_PARAMS');
    expect((await r.call('branch.merge', { workspace: 'one', sources: ['one-1'], dryRun: true, faultAt: 'write' })).error?.code).toBe('E_INVALID_PARAMS');
    expect((await r.call('branch.merge', { workspace: 'one', sources: ['one-1'], dryRun: true })).result).toMatchObject({ dryRun: true });
    const take = [{ path: '/root/work/a.txt', side: 'target' }];
    expect((await r.call('branch.merge', { workspace: 'one', sources: ['one-1'], take })).result).toMatchObject({ merged: true });
    expect(lastParams('branch.merge')).toEqual({ workspace: 'one', sources: ['one-1'], take });
    const s = await until(() => r.states.find((x) => x.operations.some((o) => o.kind === 'branch.merge' && o.status === 'done')));
    expect(s.operations.filter((o) => o.kind === 'branch.merge')).toHaveLength(1);
    expect(s.activity.at(-1)).toMatchObject({ action: 'merge one-1 into it', target: 'one', detail: expect.stringContaining('version c0000001') });
    r.ws.close();
  });
});
