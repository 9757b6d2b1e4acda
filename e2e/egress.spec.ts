// Approvals end to end: a person sets a branch's outside access to "Ask me"
// (gate) in the app; a request from inside the branch to the test's own
// "outside world" (an HTTP server in a netns of this test, 10.218.0.4/30,
// which the e2e helper's gate knows as outside.test) waits in the app's
// Approvals queue; Approve once lets it through (the page arrives), Deny
// refuses the next one (403). Nothing beyond this machine is contacted.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, test, type Page } from '@playwright/test';
import { execa } from 'execa';
import { HelperClient } from '../main/src/helper-client/client.js';
import type { ExecResult } from '../privileged-helper/src/protocol/entities.js';
import { unexpectedErrors } from './console-errors.js';

const SHOTS = path.resolve(import.meta.dirname, '../docs/screenshots');
const BRANCH = 'e2e-gate';
const HOST = 'outside.test';

interface Outside {
  ns: string;
  veth: string;
  hostSide: string;
  address: string;
}
// Set by global-setup.ts for the helper instance it starts (whose GROVE_GATE_HOSTS names it).
const outside: Outside | null = process.env.GROVE_E2E_OUTSIDE ? (JSON.parse(process.env.GROVE_E2E_OUTSIDE) as Outside) : null;

/** The outside world: HTTP on :8080 that answers with the method and path. */
const SERVER = (addr: string) => `
import http.server
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print('HIT', self.command, self.path, flush=True)
        body = ('hello from outside ' + self.command + ' ' + self.path).encode()
        self.send_response(200)
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(('${addr}', 8080), H)
print('READY', flush=True)
srv.serve_forever()
`;

/** Inside the branch: one GET through the gate with urllib; prints status and body as JSON. */
const FETCH = `
import json, sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=120) as r:
        print(json.dumps({'status': r.status, 'body': r.read().decode()}))
except urllib.error.HTTPError as e:
    print(json.dumps({'status': e.code, 'body': e.read().decode()}))
except Exception as e:
    print(json.dumps({'status': 0, 'body': repr(e)}))
`;

test.describe.configure({ mode: 'serial' });
test.skip(!outside, 'needs the helper instance e2e/global-setup.ts starts (its gate knows outside.test); skipped with GROVE_E2E_HELPER');

let page: Page;
let helper: HelperClient;
let server: ChildProcess | null = null;
let serverLog = '';
const pageErrors: string[] = [];

async function removeOutside(o: Outside): Promise<void> {
  server?.kill('SIGTERM');
  await execa('ip', ['netns', 'del', o.ns], { reject: false });
  await execa('ip', ['link', 'del', o.veth], { reject: false });
}

test.beforeAll(async ({ browser }) => {
  const o = outside!;
  await removeOutside(o);
  await execa('ip', ['netns', 'add', o.ns]);
  await execa('ip', ['link', 'add', o.veth, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', o.ns]);
  await execa('ip', ['addr', 'add', `${o.hostSide}/30`, 'dev', o.veth]);
  await execa('ip', ['link', 'set', o.veth, 'up']);
  await execa('ip', ['-n', o.ns, 'link', 'set', 'lo', 'up']);
  await execa('ip', ['-n', o.ns, 'addr', 'add', `${o.address}/30`, 'dev', 'eth0']);
  await execa('ip', ['-n', o.ns, 'link', 'set', 'eth0', 'up']);
  await execa('ip', ['-n', o.ns, 'route', 'add', 'default', 'via', o.hostSide]);
  server = spawn('ip', ['netns', 'exec', o.ns, 'python3', '-u', '-c', SERVER(o.address)], { stdio: ['ignore', 'pipe', 'pipe'] });
  server.stdout!.on('data', (d: Buffer) => (serverLog += d.toString()));
  server.stderr!.on('data', (d: Buffer) => (serverLog += d.toString()));
  server.on('exit', (code, signal) => (serverLog += `\nEXITED ${code ?? signal}\n`));
  for (let i = 0; i < 300 && !serverLog.includes('READY') && !serverLog.includes('EXITED'); i++) await sleep(100);
  expect(serverLog).toContain('READY');

  page = await browser.newPage({ viewport: { width: 1440, height: 900 } });
  page.on('pageerror', (e) => pageErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error') pageErrors.push(m.text());
  });
  helper = await HelperClient.connect({ socketPath: process.env.GROVE_E2E_SOCKET!, name: 'e2e-egress', kind: 'test' });
});

test.afterAll(async () => {
  await helper?.request('workspace.delete', { workspace: BRANCH }).catch(() => undefined);
  helper?.close();
  await page?.close();
  if (outside) await removeOutside(outside);
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) {
    await page?.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
    await testInfo.attach('outside-server.log', { body: serverLog });
  }
  expect(unexpectedErrors(pageErrors)).toEqual([]);
});

const row = (name: string) => page.getByTestId(`branch-${name}`);
/** This test's request in the queue (the branch's Chromium asks the gate for hosts of its own too). */
const held = (path: string) => page.locator(`[data-testid="approval"][data-host="${HOST}"]`, { hasText: `http://${HOST}:8080${path}` });

/** A GET from inside the branch through its gate; resolves when the python call returns. */
async function fetchInBranch(urlPath: string): Promise<{ status: number; body: string }> {
  const res: ExecResult = await helper.request('exec.run', {
    workspace: BRANCH,
    argv: ['python3', '-c', FETCH, `http://${HOST}:8080${urlPath}`],
    env: { http_proxy: 'http://grove-gate:3128', HTTP_PROXY: 'http://grove-gate:3128', no_proxy: '', NO_PROXY: '' },
    timeoutMs: 150_000,
  });
  expect(res.exitCode, res.stderr).toBe(0);
  return JSON.parse(res.stdout) as { status: number; body: string };
}

test('a branch set to "Ask me" in the app waits for approval; approve once lets it through, deny refuses', async () => {
  test.setTimeout(420_000);
  // A branch of its own, made through the API (the app's create flow is app.spec.ts's).
  await helper.request('workspace.create', { name: BRANCH });
  await page.goto(process.env.GROVE_E2E_URL!);
  await expect(page.getByTestId('link-status')).toHaveText('live');
  await expect(row(BRANCH)).toHaveAttribute('data-state', 'running', { timeout: 60_000 });
  await row(BRANCH).click();

  // Outside access: denied by default; the person switches it to the gate.
  await page.getByRole('tab', { name: 'Outside access' }).click();
  const mode = page.getByLabel('outside access');
  await expect(mode).toHaveValue('deny');
  await mode.selectOption('gate');
  await expect.poll(async () => (await helper.request('egress.status', { workspace: BRANCH })).policy.mode).toBe('gate');
  await expect(mode).toHaveValue('gate');
  await expect(page.getByTestId('network')).toContainText('every other one waits in Approvals');

  // The first request is held and shows in the queue with the branch, destination, method and URL.
  const first = fetchInBranch('/first');
  await page.getByRole('tab', { name: /Approvals/ }).click();
  const one = held('/first');
  await expect(one).toHaveCount(1, { timeout: 60_000 });
  await expect(one).toContainText(BRANCH);
  await expect(one).toContainText(`${HOST}:8080`);
  await expect(one).toContainText(`GET http://${HOST}:8080/first`);
  await expect(one.locator('.approval-time-value')).toHaveText(/^[01]:[0-5]\d$/);
  await expect(page.getByTestId('approvals-count')).toHaveText(/^[1-9]\d*$/);
  expect(serverLog).not.toContain('HIT GET /first');
  await one.getByRole('button', { name: 'Approve once' }).click();
  expect(await first).toEqual({ status: 200, body: 'hello from outside GET /first' });
  await expect(one).toHaveCount(0);
  expect(serverLog).toContain('HIT GET /first');

  // Approved once, not always: the next request waits again. The person denies it.
  const second = fetchInBranch('/second');
  const two = held('/second');
  await expect(two).toHaveCount(1, { timeout: 60_000 });
  await expect(two).toContainText(BRANCH);
  await expect(two.getByRole('button', { name: 'Always allow' })).toBeEnabled();
  await expect(page.getByTestId('approvals')).toContainText(/waits? for your decision/);
  await page.screenshot({ path: path.join(SHOTS, '13-approvals.png') });
  await two.getByRole('button', { name: 'Deny' }).click();
  const refused = await second;
  expect(refused.status).toBe(403);
  expect(refused.body).toContain('denied');
  await expect(two).toHaveCount(0);
  expect(serverLog).not.toContain('HIT GET /second');

  // The helper's log has who decided; the app's activity log says it was the person here.
  const log = await helper.request('egress.log', { workspace: BRANCH, limit: 200 });
  const mine = log.filter((e) => e.host === HOST);
  expect(mine.find((e) => e.verdict === 'approved')).toMatchObject({ decidedBy: 'app:grove-app', url: `http://${HOST}:8080/first` });
  expect(mine.find((e) => e.verdict === 'rejected')).toMatchObject({ decidedBy: 'app:grove-app', url: `http://${HOST}:8080/second` });
  await page.getByRole('tab', { name: 'Activity' }).click();
  const activity = page.getByTestId('activity');
  await expect(activity.locator('tr', { hasText: 'allow outside access once' })).toContainText(`GET http://${HOST}:8080/first`);
  await expect(activity.locator('tr', { hasText: 'deny outside access' })).toContainText('you (app)');
  await expect(activity.locator('tr', { hasText: 'change outside access' })).toContainText('mode gate');

  // The branch's policy screen, with the destination added to its allow list from the app.
  await page.getByRole('tab', { name: 'Outside access' }).click();
  await page.getByLabel('destination to allow').fill(`${HOST}:8080`);
  await page.getByRole('button', { name: 'Add', exact: true }).click();
  await expect(page.getByRole('list', { name: 'allow list' })).toContainText(`${HOST}:8080`);
  expect((await helper.request('egress.status', { workspace: BRANCH })).policy.allow).toEqual([{ host: HOST, port: 8080 }]);
  // Allowed now: passes without asking.
  expect(await fetchInBranch('/third')).toEqual({ status: 200, body: 'hello from outside GET /third' });
  await page.screenshot({ path: path.join(SHOTS, '14-outside-access.png') });
});
