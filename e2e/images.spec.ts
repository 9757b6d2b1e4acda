// Your own work in a workspace, end to end: a Containerfile typed in the app
// (FROM grove/desktop and one RUN step) is built by the real helper, its
// output streams into the Images view while it runs, and the image is listed
// ready; a workspace made from it in the app, with a project folder (a small
// git repository this test makes under /var/tmp), holds both the build's file
// and the project's, as the helper's exec sees them; the branch says where
// its project came from. The first build FROM grove/desktop exports the
// desktop into OCI storage once (about 40 s).
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { HelperClient } from '../main/src/helper-client/client.js';
import { openApp } from './app-page.js';
import { unexpectedErrors } from './console-errors.js';

const SHOTS = path.resolve(import.meta.dirname, '../docs/screenshots');
const IMAGE = 'e2e-img';
const BRANCH = 'e2e-own';
const CONTAINERFILE = 'FROM grove/desktop\nRUN echo built-in-e2e > /opt/e2e.txt\n';

test.describe.configure({ mode: 'serial' });

let page: Page;
let helper: HelperClient;
let pageErrors: string[] = [];
let project = '';
let commit = '';

test.beforeAll(async ({ browser }) => {
  ({ page, helper, errors: pageErrors } = await openApp(browser, 'e2e-images'));
  // The person's project: a git repository with a commit on a branch of its own.
  project = mkdtempSync('/var/tmp/grove-e2e-project-');
  mkdirSync(path.join(project, 'src'));
  writeFileSync(path.join(project, 'README.md'), 'an e2e project\n');
  writeFileSync(path.join(project, 'src/main.py'), 'print("hello from the project")\n');
  const git = (...args: string[]) =>
    execFileSync('git', ['-C', project, '-c', 'user.name=e2e', '-c', 'user.email=e2e@grove.test', ...args], { encoding: 'utf8' }).trim();
  git('init', '-q', '-b', 'e2e-main');
  git('add', '.');
  git('commit', '-q', '-m', 'the project as the person has it');
  commit = git('rev-parse', 'HEAD');
});

test.afterAll(async () => {
  await helper?.request('workspace.delete', { workspace: BRANCH }).catch(() => undefined);
  await helper?.request('image.remove', { name: IMAGE }).catch(() => undefined);
  helper?.close();
  await page?.close();
  if (project) rmSync(project, { recursive: true, force: true });
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) await page?.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
  expect(unexpectedErrors(pageErrors)).toEqual([]);
});

const imageRow = (name: string) => page.locator(`[data-testid="image-row"][data-image="${name}"]`);
const row = (name: string) => page.getByTestId(`branch-${name}`);
const inBranch = (script: string) => helper.request('exec.run', { workspace: BRANCH, argv: ['sh', '-c', script] });

test('an image built from a Containerfile typed in the app streams its output and is listed ready', async () => {
  test.setTimeout(600_000);
  await page.goto(process.env.GROVE_E2E_URL!);
  await expect(page.getByTestId('link-status')).toHaveText('live');
  // With branches, Images is a tab; before the first workspace, the first-run screen leads there.
  const tab = page.getByRole('tab', { name: 'Images' });
  const firstRun = page.getByRole('button', { name: 'Start from an image of your own: build or pull one…' });
  await expect(tab.or(firstRun)).toBeVisible();
  await ((await tab.count()) > 0 ? tab : firstRun).click();
  await expect(imageRow('desktop')).toHaveAttribute('data-state', 'ready');

  const form = page.getByTestId('build-form');
  await form.getByLabel('image name').fill(IMAGE);
  const editor = form.getByRole('textbox', { name: 'Containerfile', exact: true });
  await expect(editor).toHaveValue(/^FROM grove\/desktop\n/);
  await editor.fill(CONTAINERFILE);
  await form.getByRole('button', { name: 'Build', exact: true }).click();

  // The output shows while the build still runs: the helper's first words, then buildah's steps.
  const log = page.getByTestId('image-log');
  await expect(page.getByTestId('image-log-panel')).toHaveAttribute('data-image', IMAGE);
  await expect(log).toContainText('copying the build context');
  await expect(form.getByRole('button', { name: 'Building…' })).toBeVisible();
  await expect(log).toContainText('STEP 2/2: RUN echo built-in-e2e > /opt/e2e.txt', { timeout: 420_000 });
  await expect(log).toContainText(`image '${IMAGE}' is ready`, { timeout: 120_000 });
  if (await page.getByTestId('errors').count()) throw new Error(`the build failed: ${await page.getByTestId('errors').innerText()}`);

  await expect(imageRow(IMAGE)).toHaveAttribute('data-state', 'ready');
  await expect(imageRow(IMAGE)).toContainText(`localhost/grove/${IMAGE}:latest`);
  await expect(imageRow(IMAGE)).toContainText(/Containerfile \/tmp\/grove-typed-in-app-\w+\/Containerfile/);
  await expect(imageRow(IMAGE).getByTestId('image-missing')).toHaveCount(0);
  const built = (await helper.request('image.list', {})).find((i) => i.name === IMAGE);
  expect(built).toMatchObject({ state: 'ready', origin: 'containerfile', missing: [] });
  expect(built!.layers).toBeGreaterThanOrEqual(2);
  // It shares the desktop's layer: stored once.
  expect(built!.sharedBytes).toBeGreaterThan(100 * 2 ** 20);
  await expect(imageRow(IMAGE)).toContainText(built!.digest!.slice(0, 19));
  await page.screenshot({ path: path.join(SHOTS, '16-images.png') });
});

test('a workspace made from it in the app, with a project folder, holds both', async () => {
  test.setTimeout(300_000);
  // Back to creating: the sidebar's form once there are branches, else the first-run screen.
  const newButton = page.getByRole('button', { name: '+ New' });
  const back = page.getByRole('button', { name: '← Create a workspace' });
  await ((await newButton.count()) > 0 ? newButton : back).click();
  const form = page.locator('form.create-form');
  await form.getByLabel('workspace name').fill(BRANCH);
  await form.getByLabel('image').selectOption(IMAGE);
  await form.getByLabel('project folder').fill(project);
  await expect(form.getByLabel('project path in the branch')).toHaveAttribute('placeholder', /\/root\/work/);
  await form.getByRole('button', { name: 'Create workspace' }).click();
  await expect(row(BRANCH)).toHaveAttribute('data-state', 'running', { timeout: 240_000 });

  // The branch says where its project came from: the folder, the commit and the branch it was at.
  await row(BRANCH).click();
  await expect(page.getByTestId('branch-origin')).toHaveText(`image ${IMAGE} · project /root/work from ${project} (git ${commit.slice(0, 12)} on e2e-main)`);
  const ws = await helper.request('workspace.get', { workspace: BRANCH });
  expect(ws).toMatchObject({ image: IMAGE, project: { hostPath: project, path: '/root/work', commit, gitBranch: 'e2e-main' } });

  // What the build made and what the project holds are both in the branch.
  expect((await inBranch('cat /opt/e2e.txt')).stdout).toBe('built-in-e2e\n');
  expect((await inBranch('cat /root/work/README.md /root/work/src/main.py')).stdout).toBe('an e2e project\nprint("hello from the project")\n');
  expect((await inBranch('test -f /root/work/.git/HEAD && echo repository')).stdout).toBe('repository\n');
  await page.getByRole('tab', { name: 'Activity' }).click();
  await expect(page.getByTestId('activity')).toContainText(
    `created ${BRANCH} (${ws.id}) from ${IMAGE}, with ${project} (git ${commit.slice(0, 12)} on e2e-main) in /root/work`,
  );
});
