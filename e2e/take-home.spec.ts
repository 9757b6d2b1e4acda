// The result back home, end to end: a workspace made from a git repository
// on the host; a person takes its branch home in the app (the commit reviewed
// as a patch, bad targets refused in words with nothing changed, then the
// commit on a new branch of the repository, its checkout untouched), and
// merges two forks into the main line in the app, settling the one
// conflicting file by picking a side (the files checked inside the branch
// through the helper).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import type { HelperClient } from '../main/src/helper-client/client.js';
import type { Workspace } from '../privileged-helper/src/protocol/entities.js';
import { deleteBranches, openApp } from './app-page.js';
import { unexpectedErrors } from './console-errors.js';

const NAME = 'e2e-home';
const WORK = '/root/work';
const SHARED = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'].join('\n') + '\n';

test.describe.configure({ mode: 'serial' });

let page: Page;
let helper: HelperClient;
let pageErrors: string[] = [];
let repo: string;
let notARepo: string;
let origin: string;
let main: Workspace;

const git = (...args: string[]) => execFileSync('git', ['-C', repo, ...args], { encoding: 'utf8' });
/** The repository as a person's checkout: HEAD, its branch, the index and the work tree's state. */
const checkout = () => [
  git('rev-parse', 'HEAD'),
  git('symbolic-ref', 'HEAD'),
  git('ls-files', '--stage'),
  git('status', '--porcelain'),
  git('branch', '--list'),
];
const sh = async (ws: Workspace, script: string) => {
  const res = await helper.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', script] });
  expect(res.exitCode, res.stderr).toBe(0);
  return res.stdout;
};
const actions = () => page.getByTestId('actions');

test.beforeAll(async ({ browser }) => {
  ({ page, helper, errors: pageErrors } = await openApp(browser, 'e2e-take-home'));
  repo = mkdtempSync(path.join(os.tmpdir(), 'grove-e2e-home-'));
  notARepo = mkdtempSync(path.join(os.tmpdir(), 'grove-e2e-not-a-repo-'));
  execFileSync('git', ['init', '-q', '-b', 'main', repo]);
  writeFileSync(path.join(repo, 'app.txt'), 'hello\n');
  writeFileSync(path.join(repo, 'shared.txt'), SHARED);
  writeFileSync(path.join(repo, 'a.txt'), 'a\n');
  writeFileSync(path.join(repo, 'b.txt'), 'b\n');
  git('add', '.');
  git('-c', 'user.name=Person', '-c', 'user.email=person@example.org', 'commit', '-q', '-m', 'The project');
  origin = git('rev-parse', 'HEAD').trim();
  main = await helper.request('workspace.create', { name: NAME, project: { hostPath: repo } });
});

test.afterAll(async () => {
  const tree = (await helper?.request('workspace.list', {}))?.filter((w) => w.tree === main?.tree) ?? [];
  await deleteBranches(helper, tree);
  helper?.close();
  await page?.close();
  for (const dir of [repo, notARepo]) if (dir) rmSync(dir, { recursive: true, force: true });
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) await page?.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
  expect(unexpectedErrors(pageErrors)).toEqual([]);
});

test("a person takes a branch's work home: reviewed, refused in words on bad targets, then a commit in the repository", async () => {
  test.setTimeout(300_000);
  await sh(main, `echo 'hello from the branch' > ${WORK}/app.txt`);
  const before = checkout();

  await page.goto(`${process.env.GROVE_E2E_URL!.replace(/#.*$/, '')}#b=${main.id}`);
  await expect(page.getByTestId('link-status')).toHaveText('live');
  await actions().getByRole('button', { name: 'Take home' }).click();
  const panel = page.getByTestId('take-home');
  await expect(panel.getByLabel('repository', { exact: true })).toHaveValue(repo);
  await expect(panel.getByLabel('new branch', { exact: true })).toHaveValue(`grove/${NAME}`);
  await panel.getByRole('button', { name: 'Review the commit' }).click();
  const patch = panel.getByTestId('patch');
  await expect(patch.locator('.patch-files')).toHaveText('app.txt', { timeout: 60_000 });
  await expect(patch.locator('.plus')).toHaveText(['+hello from the branch']);

  // Not a repository: the helper's words, and nothing anywhere changed.
  await panel.getByLabel('repository', { exact: true }).fill(notARepo);
  await panel.getByRole('button', { name: 'Export', exact: true }).click();
  await expect(panel.getByTestId('take-home-error')).toContainText(`${notARepo} is not a git repository`);
  expect(execFileSync('ls', ['-A', notARepo], { encoding: 'utf8' })).toBe('');

  await panel.getByLabel('repository', { exact: true }).fill(repo);
  await panel.getByLabel('new branch', { exact: true }).fill('grove/e2e');
  await panel.getByRole('button', { name: 'Export', exact: true }).click();
  await expect(panel.getByTestId('take-home-done')).toContainText(`is on branch grove/e2e of ${repo}`, { timeout: 60_000 });
  // The commit: on the origin, the branch's file, by the person who made the branch.
  expect(git('rev-parse', 'grove/e2e^').trim()).toBe(origin);
  expect(git('show', 'grove/e2e:app.txt')).toBe('hello from the branch\n');
  expect(git('diff-tree', '--no-commit-id', '--name-only', '-r', 'grove/e2e').trim()).toBe('app.txt');
  const made = git('rev-parse', 'grove/e2e').trim();

  // The same branch name again: refused in words, the branch as it was.
  await panel.getByRole('button', { name: 'Export', exact: true }).click();
  await expect(panel.getByTestId('take-home-error')).toContainText("has a branch 'grove/e2e' already");
  expect(git('rev-parse', 'grove/e2e').trim()).toBe(made);
  // The person's checkout, index and current branch are as they were; only the new branch is new.
  const after = checkout();
  expect(after.slice(0, 4)).toEqual(before.slice(0, 4));
  expect([before[4], after[4]]).toEqual(['* main\n', '  grove/e2e\n* main\n']);
});

test('a person merges two forks into the main line and settles the conflicting file', async () => {
  test.setTimeout(300_000);
  const report = await helper.request('branch.fork', { workspace: main.id, copies: 2, names: [`${NAME}-a`, `${NAME}-b`] });
  const [a, b] = await Promise.all(report.children.map((c) => helper.request('workspace.get', { workspace: c.id })));
  await sh(a!, `sed -i 's/^two$/two by a/' ${WORK}/shared.txt; echo 'a by a' > ${WORK}/a.txt`);
  await sh(b!, `sed -i 's/^two$/two by b/' ${WORK}/shared.txt; echo 'b by b' > ${WORK}/b.txt`);

  await page.getByTestId(`branch-${NAME}`).click();
  await actions().getByRole('button', { name: 'Merge into…' }).click();
  const panel = page.getByTestId('merge');
  await panel.getByRole('checkbox', { name: a!.name }).check();
  await panel.getByRole('checkbox', { name: b!.name }).check();
  await panel.getByRole('button', { name: 'Check the merge (dry run)' }).click();
  await expect(panel.getByTestId('merge-clean')).toContainText(`${WORK}/a.txt`, { timeout: 60_000 });
  await expect(panel.getByTestId('merge-clean')).toContainText(`${WORK}/b.txt`);
  const conflict = panel.getByTestId(`conflict-${WORK}/shared.txt`);
  await expect(panel.getByTestId('merge-conflicts').locator('.merge-conflict')).toHaveCount(1);
  const mergeButton = panel.getByRole('button', { name: `Merge into ${NAME}` });
  await expect(mergeButton).toBeDisabled();

  // Side by side: the fork point's line, the target's as a's change made it, b's.
  await conflict.getByRole('button', { name: `${WORK}/shared.txt` }).click();
  await expect(conflict.getByTestId('hunk').locator('> div')).toHaveText(['two', 'two by a', 'two by b']);
  // Nothing is written until the person merges.
  expect(await sh(main, `cat ${WORK}/shared.txt ${WORK}/a.txt ${WORK}/b.txt`)).toBe(`${SHARED}a\nb\n`);

  await conflict.getByRole('radio', { name: `${b!.name}'s file` }).check();
  await mergeButton.click();
  await expect(panel.getByTestId('merge-done')).toContainText(/Merged 3 files into e2e-home\. Before the merge it is version [0-9a-f]{8}/, {
    timeout: 120_000,
  });
  // In the branch: b's whole file where they conflicted, each one's own change elsewhere.
  expect(await sh(main, `cat ${WORK}/shared.txt`)).toBe(SHARED.replace('two\n', 'two by b\n'));
  expect(await sh(main, `cat ${WORK}/a.txt ${WORK}/b.txt`)).toBe('a by a\nb by b\n');
  expect((await helper.request('version.list', { workspace: main.id })).map((v) => v.label)).toContain(`before merging ${a!.name}, ${b!.name} into ${NAME}`);
});
