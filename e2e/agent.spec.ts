// An agent plugged in through MCP, end to end: a real member of grove-agent
// runs `grove mcp` on the e2e helper's agent socket. An MCP client from the
// SDK lists the tools, takes a screenshot and forks; then the reference agent
// forks a branch the spec made into 3, writes a note in each child, and asks
// to promote one child and discard another. The person decides both in the
// app's Approvals queue (approve the promote, deny the discard), the agent is
// told, and the tree shows the result.
import path from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { expect, test, type Page } from '@playwright/test';
import { PNG } from 'pngjs';
import { HelperClient } from '../main/src/helper-client/client.js';
import { callTool, connectGroveMcp, pngOf } from '../main/src/mcp/client.js';
import type { Approval } from '../privileged-helper/src/protocol/approvals.js';
import { runAs } from '../privileged-helper/test/system/agent-users.js';
import { REPO } from '../privileged-helper/test/system/helper-process.js';
import { deleteBranches, openApp } from './app-page.js';
import { unexpectedErrors } from './console-errors.js';

const BRANCH = 'e2e-agent';
const REFERENCE_AGENT = path.join(REPO, 'main/src/agent/reference-agent.ts');

// Set by global-setup.ts for the helper instance it starts (with its own agent users).
const agent: { user: string; socket: string } | null = process.env.GROVE_E2E_AGENT
  ? (JSON.parse(process.env.GROVE_E2E_AGENT) as { user: string; socket: string })
  : null;

test.describe.configure({ mode: 'serial' });
test.skip(!agent, 'needs the agent user and agent socket e2e/global-setup.ts makes; skipped with GROVE_E2E_HELPER');

let page: Page;
let helper: HelperClient;
let mcp: Client | null = null;
let pageErrors: string[] = [];

test.beforeAll(async ({ browser }) => {
  ({ page, helper, errors: pageErrors } = await openApp(browser, 'e2e-agent'));
});

test.afterAll(async () => {
  await mcp?.close();
  if (agent) await helper?.request('scope.revoke', { who: { user: agent.user } }).catch(() => undefined);
  // Every branch of the spec's workspace, the main line last.
  const tree = (await helper?.request('workspace.get', { workspace: BRANCH }).catch(() => null))?.tree;
  const mine = (await helper?.request('workspace.list', {}))?.filter((w) => w.tree === tree) ?? [];
  await deleteBranches(helper, mine);
  helper?.close();
  await page?.close();
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) await page?.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
  expect(unexpectedErrors(pageErrors)).toEqual([]);
});

const row = (name: string) => page.getByTestId(`branch-${name}`);
const card = (id: string) => page.locator(`[data-testid="approval"][data-request="${id}"]`);

/** The agent's open request of `kind`, once it is made. */
async function requestOf(kind: Approval['action']['kind']): Promise<Approval> {
  let found: Approval | undefined;
  await expect
    .poll(
      async () => {
        found = (await helper.request('approval.list', {})).find((a) => a.action.kind === kind && a.requestedBy?.role === 'agent' && a.state === 'pending');
        return found !== undefined;
      },
      { timeout: 240_000, intervals: [500] },
    )
    .toBe(true);
  return found!;
}

test('an MCP client from the SDK lists the tools and calls screenshot and fork', async () => {
  test.setTimeout(300_000);
  await helper.request('workspace.create', { name: BRANCH });
  // The agent sees no workspace a person has not put in its scope.
  await helper.request('scope.allow', { who: { user: agent!.user }, workspaces: [BRANCH] });
  mcp = await connectGroveMcp({
    name: 'e2e-mcp',
    socketPath: agent!.socket,
    runAs: ['setpriv', '--reuid', agent!.user, '--regid', agent!.user, '--init-groups'],
  });
  const { tools } = await mcp.listTools();
  expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['list_branches', 'computer', 'fork', 'request_promote', 'request_discard']));

  const png = PNG.sync.read(pngOf(await callTool(mcp, 'computer', { branch: BRANCH, action: 'screenshot' })));
  expect([png.width, png.height]).toEqual([1280, 800]);

  const forked = (await callTool(mcp, 'fork', { branch: BRANCH, names: ['e2e-agent-probe'] })).structuredContent as { children: { id: string }[] };
  expect((await helper.request('workspace.get', { workspace: forked.children[0]!.id })).madeBy).toMatchObject({ role: 'agent', user: agent!.user });
  // The app marks the branch as an agent's.
  await page.goto(process.env.GROVE_E2E_URL!);
  await expect(page.getByTestId('link-status')).toHaveText('live');
  await expect(row('e2e-agent-probe').getByTestId('agent-mark')).toContainText(agent!.user);
  await expect(row(BRANCH).getByTestId('agent-mark')).toHaveCount(0);
  await callTool(mcp, 'discard', { branch: 'e2e-agent-probe', reason: 'only a probe' });
  await expect(row('e2e-agent-probe')).toHaveCount(0);
});

test("the reference agent's requests wait in the Approvals queue with previews; the person approves the promote and denies the discard in the app", async () => {
  test.setTimeout(420_000);
  const running = runAs(agent!.user, REFERENCE_AGENT, ['--branch', BRANCH, '--socket', agent!.socket, '--wait-decisions', '300']);
  const [promote, discard] = await Promise.all([requestOf('branch.promote'), requestOf('branch.discard')]);
  for (const name of [promote.workspaceName, discard.workspaceName]) await expect(row(name).getByTestId('agent-mark')).toBeVisible();

  // The queue's tab (being renamed from "Approvals" to "Requests" in the app).
  await page.getByRole('tab', { name: /^(Requests|Approvals)/ }).click();
  const promoting = card(promote.id);
  await expect(promoting).toHaveAttribute('data-kind', 'branch.promote');
  await expect(promoting).toHaveAttribute('data-state', 'pending');
  await expect(promoting).toContainText(promote.workspaceName);
  await expect(promoting).toContainText('holds the note');
  await expect(promoting.getByTestId('approval-thumbnail')).toBeVisible();
  await expect(promoting.getByTestId('approval-diff')).toContainText(BRANCH);
  // What it did: the agent's clicks and typing in that child since the fork, and its screen after them.
  const whatItDid = promoting.getByTestId('what-it-did');
  await expect(whatItDid).toContainText(/click left at \d+,\d+/);
  await expect(whatItDid).toContainText('key ctrl+a');
  await expect(whatItDid).toContainText(/type \d+ characters?/);
  await expect(whatItDid.getByTestId('what-it-did-shot')).toBeVisible();
  const discarding = card(discard.id);
  await expect(discarding).toHaveAttribute('data-kind', 'branch.discard');
  await expect(discarding.getByTestId('approval-thumbnail')).toBeVisible();
  await expect(discarding.getByTestId('approval-loss')).toContainText(/\d+ processes end/);
  await expect(discarding.getByTestId('what-it-did')).toHaveCount(0);

  await promoting.getByRole('button', { name: 'Approve' }).click();
  await expect(card(promote.id)).toHaveAttribute('data-state', 'done', { timeout: 120_000 });
  await discarding.getByLabel('note (optional)').fill('keep it for now');
  await discarding.getByRole('button', { name: 'Deny' }).click();
  await expect(card(discard.id)).toHaveAttribute('data-state', 'denied');

  // The agent was told; it exits once both are decided.
  const res = await running;
  expect(res.exitCode, res.stderr).toBe(0);
  const report = JSON.parse(res.stdout) as { requests: Record<'promote' | 'discard', { state: string; answer: string }> };
  expect(report.requests.promote).toMatchObject({ state: 'done', answer: expect.stringContaining(`${promote.workspaceName} is now the main line`) });
  expect(report.requests.discard).toMatchObject({ state: 'denied', answer: expect.stringContaining('keep it for now') });

  // The tree: the promoted branch is the main line, the other one is still there.
  await expect(row(promote.workspaceName).getByText('main', { exact: true })).toBeVisible();
  await expect(row(discard.workspaceName)).toHaveAttribute('data-state', 'running');
  // The old main line (kept as a version or as a branch) is no longer marked main.
  await expect(row(BRANCH).getByText('main', { exact: true })).toHaveCount(0);
  expect((await helper.request('workspace.get', { workspace: BRANCH }).catch(() => null))?.main ?? false).toBe(false);
});
