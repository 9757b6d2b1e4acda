// The race view end to end: the reference agent (a real member of
// grove-agent, through `grove mcp`) forks a workspace into 3 and types a note
// into each child, then asks to promote one and discard another. The person
// sees the three side by side in the app's race view — what the agent did,
// the files each changed, its memory, the requests waiting — and picks the
// third as the winner: one branch.pick, one main line left, the rivals gone,
// one decision in the audit log. Then a multi-select discard.
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { HelperClient } from '../main/src/helper-client/client.js';
import { runAs } from '../privileged-helper/test/system/agent-users.js';
import { REPO } from '../privileged-helper/test/system/helper-process.js';
import { deleteBranches, openApp } from './app-page.js';
import { unexpectedErrors } from './console-errors.js';

const RACE = 'e2e-race';
const REFERENCE_AGENT = path.join(REPO, 'main/src/agent/reference-agent.ts');
const SHOTS = path.resolve(import.meta.dirname, '../docs/screenshots');

const agent: { user: string; socket: string } | null = process.env.GROVE_E2E_AGENT
  ? (JSON.parse(process.env.GROVE_E2E_AGENT) as { user: string; socket: string })
  : null;

test.describe.configure({ mode: 'serial' });
test.skip(!agent, 'needs the agent user and agent socket e2e/global-setup.ts makes; skipped with GROVE_E2E_HELPER');

let page: Page;
let helper: HelperClient;
let pageErrors: string[] = [];

test.beforeAll(async ({ browser }) => {
  ({ page, helper, errors: pageErrors } = await openApp(browser, 'e2e-race'));
});

test.afterAll(async () => {
  if (agent) await helper?.request('scope.revoke', { who: { user: agent.user } }).catch(() => undefined);
  const tree = (await helper?.request('workspace.list', {}))?.filter((w) => w.name.startsWith(RACE)) ?? [];
  await deleteBranches(helper, tree);
  helper?.close();
  await page?.close();
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) await page?.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
  expect(unexpectedErrors(pageErrors)).toEqual([]);
});

const row = (name: string) => page.getByTestId(`branch-${name}`);
const tile = (name: string) => page.getByTestId(`race-${name}`);

test('three children typed into by the reference agent; the person picks one, as one decision', async () => {
  test.setTimeout(600_000);
  const root = await helper.request('workspace.create', { name: RACE });
  // The agent sees only the workspaces a person put in its scope.
  await helper.request('scope.allow', { who: { user: agent!.user }, workspaces: [root.id] });
  // The agent stays to hear the decisions on its requests (the pick closes them).
  const running = runAs(agent!.user, REFERENCE_AGENT, ['--branch', RACE, '--socket', agent!.socket, '--wait-decisions', '300']);
  let children: { id: string; name: string }[] = [];
  await expect
    .poll(
      async () => {
        const open = (await helper.request('approval.list', {})).filter((a) => a.tree === root.tree && a.state === 'pending');
        children = (await helper.request('workspace.list', {})).filter((w) => w.parent === root.id);
        return open.length;
      },
      { timeout: 420_000, intervals: [1000] },
    )
    .toBe(2);
  expect(children).toHaveLength(3);
  const requests = await helper.request('approval.list', {});
  const asked = new Set(requests.filter((a) => a.tree === root.tree).map((a) => a.workspace));
  const winner = children.find((c) => !asked.has(c.id))!;
  const rivals = children.filter((c) => c !== winner);

  await page.goto(`${process.env.GROVE_E2E_URL!.replace(/#.*$/, '')}#b=${root.id}`);
  await expect(page.getByTestId('link-status')).toHaveText('live');
  await expect(row(RACE)).toHaveAttribute('aria-selected', 'true');
  await page.getByRole('tab', { name: 'Race' }).click();
  for (const c of children) {
    await expect(tile(c.name).getByTestId('race-actions')).toContainText(agent!.user);
    await expect(tile(c.name).getByTestId('race-files')).toContainText(/\d+ files? changed since the fork/, { timeout: 60_000 });
    await expect(tile(c.name).getByTestId('race-memory')).toContainText(/\d+ MiB memory/, { timeout: 30_000 });
  }
  for (const r of rivals) await expect(tile(r.name).getByTestId('race-request')).toBeVisible();
  await expect(tile(winner.name).getByTestId('race-request')).toHaveCount(0);
  await page.screenshot({ path: path.join(SHOTS, '17-race.png') });

  const before = (await helper.request('audit.list', {})).at(-1)?.seq ?? 0;
  await tile(winner.name).getByRole('button', { name: 'Pick winner' }).click();
  const dialog = page.getByRole('dialog');
  await expect(dialog).toContainText(`What becomes of ${rivals.map((r) => r.name).join(', ')}?`);
  await dialog.getByLabel('Discard all 2').check();
  await dialog.getByRole('button', { name: 'Pick winner' }).click();

  // One main line is left: the winner; its rivals are gone, the old main is retired (stopped, with its version).
  await expect(row(winner.name).locator('.badge')).toHaveText('main', { timeout: 120_000 });
  for (const r of rivals) await expect(row(r.name)).toHaveCount(0);
  await expect(row(RACE).getByTestId('retired')).toBeVisible();
  const tree = (await helper.request('workspace.list', {})).filter((w) => w.tree === root.tree);
  expect(tree.map((w) => [w.id, w.main, w.state])).toEqual([
    [root.id, false, 'stopped'],
    [winner.id, true, 'running'],
  ]);
  expect((await helper.request('version.list', { workspace: winner.id })).map((v) => v.label)).toContain(`main before ${winner.name} was promoted`);
  // The audit log: one decision, by the person in the app.
  const decisions = (await helper.request('audit.list', {})).filter((e) => e.seq > before && e.actor?.role === 'person');
  expect(decisions.map((e) => [e.action, e.target, e.outcome])).toEqual([['branch.pick', winner.id, 'ok']]);
  // The agent's requests went with their branches; it heard so and ended.
  const res = await running;
  expect(res.exitCode, res.stderr).toBe(0);
  await expect(page.getByTestId('actions')).toContainText(winner.name);
});

test('several selected: the bar shows the count, and discard N removes them all', async () => {
  test.setTimeout(300_000);
  const winner = (await helper.request('workspace.list', {})).find((w) => w.name.startsWith(RACE) && w.main)!;
  await row(winner.name).click();
  await page.getByLabel('copies').fill('2');
  await page.getByRole('button', { name: 'Fork', exact: true }).click();
  let kids: string[] = [];
  await expect
    .poll(
      async () => {
        kids = (await helper.request('workspace.list', {})).filter((w) => w.parent === winner.id && w.state === 'running').map((w) => w.name);
        return kids.length;
      },
      { timeout: 150_000 },
    )
    .toBe(2);
  await row(kids[0]!).click();
  await row(kids[1]!).click({ modifiers: ['Control'] });
  await expect(page.getByTestId('selection-count')).toContainText('2 branches selected');
  await page.getByRole('button', { name: 'Discard 2' }).click();
  await expect(page.getByRole('dialog')).toContainText(`${kids.join(', ')}: the branches`);
  await page.getByRole('dialog').getByRole('button', { name: 'Discard 2' }).click();
  for (const k of kids) await expect(row(k)).toHaveCount(0, { timeout: 60_000 });
  // The selection went to their parent, never to another workspace.
  await expect(row(winner.name)).toHaveAttribute('aria-selected', 'true');
});
