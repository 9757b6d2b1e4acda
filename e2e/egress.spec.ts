// Approvals end to end: a person sets a branch's outside access to "Ask me"
// (gate) in the app; a request from inside the branch to the test's own
// "outside world" (an HTTP server in a netns of this test, 10.218.0.4/30,
// which the e2e helper's gate knows as outside.test) waits in the app's
// approvals queue (the Requests tab); Approve once lets it through (the page
// arrives), Deny refuses the next one (403); both move to "Recently decided".
// Then a standing approval is switched on and off in the app. Nothing beyond
// this machine is contacted.
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { HelperClient } from '../main/src/helper-client/client.js';
import type { ExecResult } from '../privileged-helper/src/protocol/entities.js';
import { FETCH_THROUGH_GATE, OutsideWorld, type OutsidePlan } from '../privileged-helper/test/system/outside-world.js';
import { openApp } from './app-page.js';
import { unexpectedErrors } from './console-errors.js';

const SHOTS = path.resolve(import.meta.dirname, '../docs/screenshots');
const BRANCH = 'e2e-gate';
const HOST = 'outside.test';

// Set by global-setup.ts for the helper instance it starts (whose GROVE_GATE_HOSTS names it).
const plan: OutsidePlan | null = process.env.GROVE_E2E_OUTSIDE ? (JSON.parse(process.env.GROVE_E2E_OUTSIDE) as OutsidePlan) : null;

test.describe.configure({ mode: 'serial' });
test.skip(!plan, 'needs the helper instance e2e/global-setup.ts starts (its gate knows outside.test); skipped with GROVE_E2E_HELPER');

let page: Page;
let helper: HelperClient;
let outside: OutsideWorld | null = null;
let pageErrors: string[] = [];

test.beforeAll(async ({ browser }) => {
  outside = await OutsideWorld.start(plan!);

  ({ page, helper, errors: pageErrors } = await openApp(browser, 'e2e-egress'));
});

test.afterAll(async () => {
  await helper?.request('workspace.delete', { workspace: BRANCH }).catch(() => undefined);
  helper?.close();
  await page?.close();
  await outside?.stop();
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) {
    await page?.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
    await testInfo.attach('outside-server.log', { body: outside?.log ?? '' });
  }
  expect(unexpectedErrors(pageErrors)).toEqual([]);
});

const row = (name: string) => page.getByTestId(`branch-${name}`);
/** This test's request waiting in the queue (the branch's Chromium asks the gate for hosts of its own too). */
const held = (path: string) =>
  page.locator(`[data-testid="approvals"] [data-testid="approval"][data-state="pending"][data-host="${HOST}"]`, { hasText: `http://${HOST}:8080${path}` });
/** A request among the recently decided, by its id. */
const decidedOne = (id: string) => page.locator(`[data-testid="approvals-decided"] [data-testid="approval"][data-request="${id}"]`);

/** A GET from inside the branch through its gate; resolves when the python call returns. */
async function fetchInBranch(urlPath: string): Promise<{ status: number; body: string }> {
  const res: ExecResult = await helper.request('exec.run', {
    workspace: BRANCH,
    argv: ['python3', '-c', FETCH_THROUGH_GATE, 'GET', `http://${HOST}:8080${urlPath}`],
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
  await expect(page.getByTestId('network')).toContainText('every other one waits in Requests');

  // The first request is held and shows in the queue with the branch, destination, method and URL.
  const first = fetchInBranch('/first');
  await page.getByRole('tab', { name: /Requests/ }).click();
  const one = held('/first');
  await expect(one).toHaveCount(1, { timeout: 60_000 });
  await expect(one).toHaveAttribute('data-kind', 'egress.connection');
  const firstId = (await one.getAttribute('data-request'))!;
  await expect(one).toContainText(BRANCH);
  await expect(one).toContainText("Held by Grove's gate");
  await expect(one).toContainText(`${HOST}:8080`);
  await expect(one).toContainText(`GET http://${HOST}:8080/first`);
  await expect(one.locator('.approval-time-value')).toHaveText(/^[01]:[0-5]\d$/);
  await expect(page.getByTestId('approvals-count')).toHaveText(/^[1-9]\d*$/);
  expect(outside!.log).not.toContain('HIT GET /first');
  await one.getByRole('button', { name: 'Approve once' }).click();
  expect(await first).toEqual({ status: 200, body: 'hello from outside GET /first' });
  await expect(one).toHaveCount(0);
  expect(outside!.log).toContain('HIT GET /first');
  await expect(decidedOne(firstId)).toHaveAttribute('data-state', /^(running|done)$/);
  await expect(decidedOne(firstId)).toContainText('approved by you');

  // Approved once, not always: the next request waits again. The person denies it.
  const second = fetchInBranch('/second');
  const two = held('/second');
  await expect(two).toHaveCount(1, { timeout: 60_000 });
  const secondId = (await two.getAttribute('data-request'))!;
  await expect(two).toContainText(BRANCH);
  await expect(two.getByRole('button', { name: 'Always allow' })).toBeEnabled();
  await expect(page.getByTestId('approvals')).toContainText(/waits? for your decision/);
  await page.screenshot({ path: path.join(SHOTS, '13-approvals.png') });
  await two.getByLabel('note (optional)').fill('not this one');
  await two.getByRole('button', { name: 'Deny' }).click();
  const refused = await second;
  expect(refused.status).toBe(403);
  expect(refused.body).toContain('denied');
  await expect(two).toHaveCount(0);
  expect(outside!.log).not.toContain('HIT GET /second');
  await expect(decidedOne(secondId)).toHaveAttribute('data-state', 'denied');
  await expect(decidedOne(secondId)).toContainText('denied by you · “not this one”');

  // The helper's log has who decided (the app runs as root, a person); the app's activity log says it was the person here.
  const log = await helper.request('egress.log', { workspace: BRANCH, limit: 200 });
  const mine = log.filter((e) => e.host === HOST);
  expect(mine.find((e) => e.verdict === 'approved')).toMatchObject({ decidedBy: 'person:root', url: `http://${HOST}:8080/first` });
  expect(mine.find((e) => e.verdict === 'rejected')).toMatchObject({ decidedBy: 'person:root', url: `http://${HOST}:8080/second` });
  expect((await helper.request('approval.get', { id: secondId })).decision).toMatchObject({ by: { role: 'person', user: 'root' }, note: 'not this one' });
  await page.getByRole('tab', { name: 'Activity' }).click();
  const activity = page.getByTestId('activity');
  await expect(activity.locator('tr', { hasText: 'allow outside access once' })).toContainText(`GET http://${HOST}:8080/first`);
  await expect(activity.locator('tr', { hasText: 'deny outside access' })).toContainText('you (app)');
  await expect(activity.locator('tr', { hasText: 'change outside access' })).toContainText('mode gate');
  // This test's own client made the branch: the helper identified it, and the log says so.
  await expect(activity.locator('tr', { hasText: 'create workspace' }).filter({ hasText: BRANCH }).first()).toContainText('person root');

  // A standing approval, switched on and off in the app; the helper holds it and audits who changed it.
  await page.getByRole('tab', { name: /Requests/ }).click();
  const stop = page.getByTestId(`grants-${BRANCH}`).locator('input[data-kind="workspace.stop"]');
  await expect(stop).not.toBeChecked();
  // Giving agents a power asks first: the tick waits for the person's yes.
  await stop.click();
  const asked = page.getByRole('dialog');
  await expect(asked).toContainText('without asking');
  expect(await helper.request('grant.list', { workspace: BRANCH })).toEqual([]);
  await asked.getByRole('button', { name: 'Let them' }).click();
  await expect(asked).toBeHidden();
  await expect.poll(async () => (await helper.request('grant.list', { workspace: BRANCH })).map((g) => g.kind)).toEqual(['workspace.stop']);
  const [granted] = await helper.request('grant.list', { workspace: BRANCH });
  await expect(stop).toBeChecked();
  await expect(stop).toBeEnabled();
  await stop.uncheck();
  await expect.poll(async () => (await helper.request('grant.list', { workspace: BRANCH })).length).toBe(0);
  await expect(stop).not.toBeChecked();
  const audit = (await helper.request('audit.list', { limit: 1000 })).filter(
    (e) => e.action.startsWith('grant.') && (e.target === granted!.tree || e.target === granted!.id),
  );
  expect(audit.map((e) => [e.action, e.actor?.role, e.actor?.user, e.outcome])).toEqual([
    ['grant.set', 'person', 'root', 'ok'],
    ['grant.revoke', 'person', 'root', 'ok'],
  ]);

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
