// The tree keeps a workspace's history, end to end against a real helper: a
// checkpoint is a named dot on its branch's line, and rolling back from the
// dot returns the branch to it; a promotion keeps the old main line as a
// retired node (stopped, with its version) with its other children under
// it; a later fork never takes a gone branch's name; a merge shows as an
// edge into its target. The tree's screenshot is the README's.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import type { HelperClient } from '../main/src/helper-client/client.js';
import type { Workspace } from '../privileged-helper/src/protocol/entities.js';
import { deleteBranches, openApp } from './app-page.js';
import { unexpectedErrors } from './console-errors.js';

const WS = 'e2e-hist';
const SHOTS = path.resolve(import.meta.dirname, '../docs/screenshots');

test.describe.configure({ mode: 'serial' });

let page: Page;
let helper: HelperClient;
let pageErrors: string[] = [];
let root: Workspace;
let project: string;

test.beforeAll(async ({ browser }) => {
  ({ page, helper, errors: pageErrors } = await openApp(browser, 'e2e-history'));
  project = mkdtempSync(path.join(tmpdir(), 'grove-e2e-hist-'));
  writeFileSync(path.join(project, 'README'), 'the project\n');
});

test.afterAll(async () => {
  const tree = root ? ((await helper?.request('workspace.list', {}))?.filter((w) => w.tree === root.tree) ?? []) : [];
  await deleteBranches(helper, tree);
  if (project) rmSync(project, { recursive: true, force: true });
  helper?.close();
  await page?.close();
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) await page?.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
  expect(unexpectedErrors(pageErrors)).toEqual([]);
});

const row = (name: string) => page.getByTestId(`branch-${name}`);
const dot = (text: string) => page.locator('.tree-dot', { hasText: text });
const sh = (ws: string, script: string) => helper.request('exec.run', { workspace: ws, argv: ['sh', '-c', script] });

async function confirm(label: string): Promise<void> {
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  await dialog.getByRole('button', { name: label }).click();
  await expect(dialog).toBeHidden();
}

test("a checkpoint is a named dot on its branch's line; rolling back from the dot returns the branch to it", async () => {
  test.setTimeout(300_000);
  root = await helper.request('workspace.create', { name: WS, project: { hostPath: project } });
  await page.goto(`${process.env.GROVE_E2E_URL!.replace(/#.*$/, '')}#b=${root.id}`);
  await expect(page.getByTestId('link-status')).toHaveText('live');
  await expect(row(WS)).toHaveAttribute('data-state', 'running', { timeout: 60_000 });

  await page.getByLabel('checkpoint name').first().fill('clean start');
  await page.getByRole('button', { name: 'Checkpoint' }).click();
  await expect(dot('clean start')).toBeVisible({ timeout: 120_000 });
  await expect(dot('clean start')).not.toContainText('saving', { timeout: 120_000 });
  const [version] = await helper.request('version.list', { workspace: root.id });
  expect(version).toMatchObject({ branch: root.id, label: 'clean start', saved: true });

  // A change after it, which the rollback undoes.
  await sh(WS, 'echo later > /root/after.txt');
  await dot('clean start').click();
  await dot('clean start').getByRole('button', { name: 'Roll back here' }).click();
  await expect(page.getByRole('dialog')).toContainText(`Roll ${WS} back?`);
  await confirm('Roll back');
  // This rollback's own: other specs' operations stay listed in the same app.
  await expect(page.locator('.op[data-kind="branch.rollback"].op-done').filter({ hasText: WS })).toBeVisible({ timeout: 120_000 });
  await expect(row(WS)).toHaveAttribute('data-state', 'running');
  expect((await helper.request('workspace.get', { workspace: root.id })).version).toBe(version!.id);
  expect((await sh(WS, 'test -e /root/after.txt')).exitCode).toBe(1);

  // The dot can be named again in the app.
  await dot('clean start').click();
  await dot('clean start').getByRole('button', { name: 'Name…' }).click();
  await page.locator('.dot-actions input').fill('fresh desktop');
  await page.locator('.dot-actions').getByRole('button', { name: 'Save' }).click();
  await expect(dot('fresh desktop')).toBeVisible();
  expect((await helper.request('version.list', { workspace: root.id })).map((v) => v.label)).toEqual(['fresh desktop']);
});

test('a promotion keeps the old main as a retired node with its version; its other children stay under it', async () => {
  test.setTimeout(300_000);
  const { children } = await helper.request('branch.fork', { workspace: WS, copies: 2 });
  expect(children.map((c) => c.name)).toEqual([`${WS}-1`, `${WS}-2`]);
  await expect(row(`${WS}-2`)).toHaveAttribute('data-state', 'running', { timeout: 60_000 });

  await row(`${WS}-1`).click();
  await page.getByRole('button', { name: 'Promote' }).click();
  // The app asks what becomes of the old main line; the first choice retires it.
  const dialog = page.getByRole('dialog');
  await expect(dialog).toContainText(`What becomes of ${WS}, the main line now?`);
  await expect(dialog.getByRole('radio').first()).toBeChecked();
  await confirm('Promote');
  await expect(row(`${WS}-1`).locator('.badge')).toHaveText('main', { timeout: 120_000 });

  // The old main: stopped, retired, with the version taken of it, its children still under it.
  await expect(row(WS)).toHaveAttribute('data-state', 'stopped', { timeout: 60_000 });
  await expect(row(WS).getByTestId('retired')).toHaveText('retired');
  await expect(row(WS).locator('.row-version')).toHaveText(`✓ main before ${WS}-1 was promoted`);
  await expect(dot(`main before ${WS}-1 was promoted`)).toBeVisible();
  const old = await helper.request('workspace.get', { workspace: root.id });
  expect(old).toMatchObject({ main: false, state: 'stopped', retiredAt: expect.any(String) });
  for (const c of children) expect((await helper.request('workspace.get', { workspace: c.id })).parent).toBe(root.id);
  // One workspace, headed by its main line now.
  await expect(page.getByTestId(`workspace-${WS}-1`)).toBeVisible();
  await expect(page.getByTestId(`workspace-${WS}`)).toHaveCount(0);
});

test("a fork never takes a gone branch's name; a merge shows as an edge into its target", async () => {
  test.setTimeout(300_000);
  await helper.request('workspace.delete', { workspace: `${WS}-2` });
  await expect(row(`${WS}-2`)).toHaveCount(0);
  const { children } = await helper.request('branch.fork', { workspace: `${WS}-1`, copies: 1 });
  // e2e-hist-2 is gone, but it was this workspace's: the new branch is -3.
  expect(children.map((c) => c.name)).toEqual([`${WS}-3`]);
  const source = children[0]!;
  await expect(row(source.name)).toHaveAttribute('data-state', 'running', { timeout: 60_000 });

  const work = root.project!.path;
  await sh(source.name, `echo from the source > ${work}/NOTES`);
  const merged = await helper.request('branch.merge', { workspace: `${WS}-1`, sources: [source.name] });
  expect(merged).toMatchObject({ merged: true, conflicts: [] });
  await expect(page.getByTestId(`merge-${WS}-1`)).toContainText(`merged ${source.name}`);
  await expect(page.getByTestId('merge-edge')).toHaveCount(1);
  expect((await helper.request('workspace.get', { workspace: `${WS}-1` })).merges).toEqual([
    { sources: [{ id: source.id, name: source.name }], version: merged.version, at: expect.any(String) },
  ]);
  // Nothing in the tree runs into its text.
  const overlaps = await page.evaluate(() => {
    const graph = document.querySelector('.tree-graph')!.getBoundingClientRect();
    return [...document.querySelectorAll('.tree-row .row-text, .tree-dot .dot-line')].filter((t) => t.getBoundingClientRect().left < graph.right - 8).length;
  });
  expect(overlaps).toBe(0);
  await page.getByTestId('branch-tree').screenshot({ path: path.join(SHOTS, '19-tree-history.png') });
});
