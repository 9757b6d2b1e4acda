// The supervisor app end to end, in web mode, against a real helper and real
// workspaces: create → see the desktop → type into it → terminal → fork into
// 2 → compare → discard one → checkpoint and roll back → promote. Each step
// saves a screenshot (docs/screenshots/, used by the README) and asserts
// something real on that screen: tree text, canvas pixels, terminal content.
import path from 'node:path';
import { expect, test, type Page } from '@playwright/test';
import { HelperClient } from '../main/src/helper-client/client.js';
import { openApp } from './app-page.js';
import { unexpectedErrors } from './console-errors.js';

const SHOTS = path.resolve(import.meta.dirname, '../docs/screenshots');
const START_PAGE_RGB: [number, number, number] = [13, 122, 95]; // privileged-helper/image/desktop/start.html

test.describe.configure({ mode: 'serial' });

let page: Page;
let helper: HelperClient;
let pageErrors: string[] = [];

test.beforeAll(async ({ browser }) => {
  ({ page, helper, errors: pageErrors } = await openApp(browser, 'e2e'));
});

test.afterAll(async () => {
  helper?.close();
  await page?.close();
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) await page.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
  // The renderer must not throw or log errors on any screen. (A desktop
  // stream that drops is shown in the UI and retried; noVNC logs it.)
  expect(unexpectedErrors(pageErrors)).toEqual([]);
});

const shot = (name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
const row = (name: string) => page.getByTestId(`branch-${name}`);

/** Pixels of the start page's colour in the first canvas under `selector`. */
function greenPixels(selector: string): Promise<number> {
  return page.evaluate(
    ([sel, [r, g, b]]) => {
      const canvas = document.querySelector(`${sel} canvas`) as HTMLCanvasElement | null;
      if (!canvas || canvas.width < 100) return 0;
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i] === r && data[i + 1] === g && data[i + 2] === b) n++;
      return n;
    },
    [selector, START_PAGE_RGB] as const,
  );
}

async function confirm(label: string): Promise<void> {
  const dialog = page.getByRole('dialog');
  await expect(dialog).toBeVisible();
  await dialog.getByRole('button', { name: label }).click();
  await expect(dialog).toBeHidden();
}

async function idOf(name: string): Promise<string> {
  return (await helper.request('workspace.get', { workspace: name })).id;
}

test('a new user is told what to do first and creates a workspace', async () => {
  await page.goto(process.env.GROVE_E2E_URL!);
  // The secret in the URL became a cookie and left the address bar.
  expect(page.url()).not.toContain('token=');
  await expect(page.getByTestId('link-status')).toHaveText('live');
  if (process.env.GROVE_E2E_HELPER) {
    // A helper with workspaces already: create from the sidebar.
    await page.getByRole('button', { name: '+ New' }).click();
  } else {
    await expect(page.getByRole('heading', { name: 'Create your first workspace' })).toBeVisible();
    await shot('01-first-run');
  }

  await page.getByLabel('workspace name').fill('e2e');
  await page.getByRole('button', { name: 'Create workspace' }).click();
  await expect(row('e2e')).toHaveAttribute('data-state', 'running', { timeout: 150_000 });
  await expect(row('e2e')).toContainText('main');
  // The new workspace is the one selected.
  await expect(row('e2e')).toHaveAttribute('aria-selected', 'true');
  await expect(page.getByTestId('actions')).toContainText('e2e');
});

test("the workspace's desktop draws in the stream", async () => {
  await row('e2e').click();
  await expect(page.locator('.desktop.full')).toHaveAttribute('data-branch', await idOf('e2e'));
  await expect.poll(() => greenPixels('.desktop.full'), { timeout: 90_000, intervals: [500] }).toBeGreaterThan(50_000);
  await shot('02-desktop');
});

test('typing into the desktop reaches the workspace', async () => {
  const x = (script: string) => helper.request('exec.run', { workspace: 'e2e', argv: ['sh', '-c', script], env: { DISPLAY: ':0' } });
  // The session tiles its windows: Chromium on the left two thirds (0-852), xterm top right, the editor below it.
  await expect.poll(async () => (await x('xdotool search --onlyvisible --class chromium')).exitCode, { timeout: 60_000 }).toBe(0);
  // Click xterm's title bar through the stream (as a person would) until xterm has the focus.
  await expect(page.locator('.desktop.full')).toHaveAttribute('data-branch', await idOf('e2e'));
  const target = await page.evaluate(() => {
    const c = document.querySelector('.desktop.full canvas') as HTMLCanvasElement;
    const r = c.getBoundingClientRect();
    return { x: r.x + (1060 * r.width) / c.width, y: r.y + (5 * r.height) / c.height };
  });
  await expect
    .poll(
      async () => {
        await page.mouse.click(target.x, target.y);
        return (await x('xdotool getactivewindow getwindowname')).stdout.trim();
      },
      { timeout: 30_000, intervals: [1000] },
    )
    .toMatch(/xterm|@/);
  await page.keyboard.type('echo grove-e2e > /tmp/typed.txt', { delay: 20 });
  await page.keyboard.press('Enter');
  await expect.poll(async () => (await x('cat /tmp/typed.txt')).stdout, { timeout: 20_000 }).toBe('grove-e2e\n');
  await shot('03-typed-into-desktop');
});

test("the app's terminal runs a command in the branch", async () => {
  await page.getByRole('tab', { name: 'Terminal' }).click();
  const term = page.getByTestId('terminal');
  await expect(term.locator('.xterm-rows')).toBeVisible();
  await expect(page.locator('.terminal-status')).toHaveCount(0, { timeout: 20_000 });
  await term.click();
  await page.keyboard.type('echo $((6*7))-ok; cat /tmp/typed.txt\n', { delay: 10 });
  await expect(term.locator('.xterm-rows')).toContainText('42-ok');
  await expect(term.locator('.xterm-rows')).toContainText('grove-e2e');
  await shot('04-terminal');
});

test('fork into 2: both children appear with their own live desktops', async () => {
  await row('e2e').click();
  await page.getByLabel('copies').fill('2');
  await page.getByRole('button', { name: 'Fork', exact: true }).click();
  const op = page.locator('.op[data-kind="branch.fork"]');
  await expect(op).toBeVisible();
  // Fail at once, with the helper's words, if the fork fails.
  await expect(op.locator('.muted').first()).toHaveText(/^(done|failed)$/, { timeout: 150_000 });
  if (await page.getByTestId('errors').count()) throw new Error(`the fork failed: ${await page.getByTestId('errors').innerText()}`);
  await expect(row('e2e-1')).toHaveAttribute('data-state', 'running', { timeout: 30_000 });
  await expect(row('e2e-2')).toHaveAttribute('data-state', 'running');
  // The fork's stages were shown as the helper reported them.
  await expect(op).toContainText('done');
  for (const stage of ['prepare', 'dump', 'restore']) await expect(op.locator('.stage-name', { hasText: stage }).first()).toBeVisible();
  // The children hang off the parent: an edge into each, turning into their lane.
  expect(await page.locator('.tree-graph path').count()).toBeGreaterThanOrEqual(2);
  expect(await page.locator('.tree-graph path[d*="Q"]').count()).toBeGreaterThanOrEqual(2);
  await shot('05-forked');

  // A live thumbnail's click selects its row (its canvas does not swallow it).
  await row('e2e-1').locator('.thumb').click();
  await expect(row('e2e-1')).toHaveAttribute('aria-selected', 'true');
  await row('e2e-2')
    .locator('.thumb')
    .click({ modifiers: ['Control'] });
  await expect(page.getByTestId('selection-count')).toContainText('2 branches selected');
  await page.getByRole('tab', { name: 'Compare' }).click();
  for (const name of ['e2e-1', 'e2e-2']) {
    await expect.poll(() => greenPixels(`[data-testid="compare-${name}"]`), { timeout: 90_000, intervals: [500] }).toBeGreaterThan(20_000);
  }
  await shot('06-compare');
});

test('a reload keeps the selection, from the address', async () => {
  await row('e2e-1').click();
  const id = await idOf('e2e-1');
  await expect(page).toHaveURL(new RegExp(`#b=${id}$`));
  await page.reload();
  await expect(row('e2e-1')).toHaveAttribute('aria-selected', 'true');
  await expect(row('e2e')).toHaveAttribute('aria-selected', 'false');
  await expect(page.getByTestId('actions')).toContainText('e2e-1');
});

test('nothing overflows sideways from 900 to 1440 px, on any tab', async () => {
  for (const width of [900, 1440]) {
    await page.setViewportSize({ width, height: 900 });
    for (const tab of ['Desktop', 'Race', 'Compare', 'Terminal', 'Diff', 'Outside access', 'Requests', 'Activity', 'Performance', 'Images']) {
      await page.getByRole('tab', { name: tab }).click();
      await expect
        .poll(() => page.evaluate(() => document.documentElement.scrollWidth - innerWidth), { message: `${tab} at ${width} px` })
        .toBeLessThanOrEqual(0);
      // The action bar stays one row: it never wraps into the view under it.
      expect((await page.getByTestId('actions').boundingBox())!.height, `the action bar at ${width} px`).toBeLessThan(80);
      if (width === 900 && (tab === 'Desktop' || tab === 'Performance')) await shot(`18-${tab.toLowerCase()}-900`);
    }
  }
  await page.getByRole('tab', { name: 'Desktop' }).click();
});

test('the performance panel shows the fork and what each branch costs in memory', async () => {
  await page.getByRole('tab', { name: 'Performance' }).click();
  const forks = page.getByTestId('perf-forks');
  await expect(forks.locator('.perf-fork')).not.toHaveCount(0);
  const latest = (await helper.request('perf.get', {})).forks[0]!;
  expect(latest).toMatchObject({ source: { name: 'e2e' }, copies: 2 });
  // Newest right: the last bar is the fork just made, stage by stage.
  await expect(forks.locator('.perf-fork').last()).toHaveAttribute('data-fork', latest.fork);
  await expect(forks.locator('.perf-fork').last().locator('rect')).toHaveCount(6);
  for (const name of ['e2e', 'e2e-1', 'e2e-2']) {
    const row = page.locator(`[data-testid="perf-branch"][data-branch="${name}"]`);
    await expect(row).toContainText(/[1-9][0-9.]* MiB PSS/);
    await expect(row).toContainText(/\d+ processes/);
  }
  await expect(page.getByTestId('perf-host')).toContainText(/GiB available of/);
  await shot('15-performance');
});

test("a child's terminal is its copy of the one its source had open, scrollback and all", async () => {
  await row('e2e-2').click();
  await page.getByRole('tab', { name: 'Terminal' }).click();
  const term = page.getByTestId('terminal');
  await expect(page.locator('.terminal-status')).toContainText('copy of terminal', { timeout: 20_000 });
  await expect(term.locator('.xterm-rows')).toContainText('42-ok');
  await term.click();
  await page.keyboard.type('echo $((6*8))-in-the-child\n', { delay: 10 });
  await expect(term.locator('.xterm-rows')).toContainText('48-in-the-child');
});

test('discard one child', async () => {
  await row('e2e-2').click();
  await page.getByRole('button', { name: 'Discard' }).click();
  await expect(page.getByRole('dialog')).toContainText('removed for good');
  await confirm('Discard');
  await expect(row('e2e-2')).toHaveCount(0, { timeout: 60_000 });
  await expect(row('e2e-1')).toBeVisible();
  await shot('07-discarded');
});

test('checkpoint the other, then roll it back', async () => {
  await row('e2e-1').click();
  // A terminal open at the checkpoint: the rollback ends it, and it opens again as the version's copy.
  await page.getByRole('tab', { name: 'Terminal' }).click();
  const term = page.getByTestId('terminal');
  const status = page.locator('.terminal-status');
  // Open: no status (a new shell), or the copy this branch got at the fork (whose tab was closed once: it may be gone).
  await expect.poll(async () => (await status.allInnerTexts()).every((text) => /copy of terminal/.test(text)), { timeout: 20_000 }).toBe(true);
  await term.click();
  await page.keyboard.type('echo $((6*9))-at-the-checkpoint\n', { delay: 10 });
  await expect(term.locator('.xterm-rows')).toContainText('54-at-the-checkpoint');
  await page.getByLabel('checkpoint name').fill('typed it');
  await page.getByRole('button', { name: 'Checkpoint' }).click();
  const options = page.getByLabel('version').locator('option');
  await expect(options).toHaveCount(2, { timeout: 120_000 });
  const version = await options.nth(1).getAttribute('value');
  expect(version).toMatch(/^[0-9a-f]{8}$/);
  // Versions read by name, in the picker and on their branch's row.
  await expect(options.nth(1)).toHaveText(/^typed it · e2e-1 /);
  await expect(row('e2e-1').locator('.row-version')).toHaveText('✓ typed it');
  await page.getByLabel('version').selectOption(version!);
  await page.getByRole('button', { name: 'Roll back' }).click();
  await confirm('Roll back');
  await expect(page.locator('.op[data-kind="branch.rollback"].op-done')).toBeVisible({ timeout: 120_000 });
  await expect(row('e2e-1').locator('.row-version')).toHaveText('✓ typed it');
  await expect(row('e2e-1')).toHaveAttribute('data-state', 'running');
  const id = await idOf('e2e-1');
  expect((await helper.request('workspace.get', { workspace: id })).version).toBe(version);
  await expect(status).toContainText('the shell ended', { timeout: 30_000 });
  await page.getByRole('button', { name: 'Open again' }).click();
  await expect(status).toContainText('copy of terminal', { timeout: 20_000 });
  await expect(term.locator('.xterm-rows')).toContainText('54-at-the-checkpoint');
  await page.getByRole('tab', { name: 'Desktop' }).click();
  await expect.poll(() => greenPixels('.desktop.full'), { timeout: 90_000, intervals: [500] }).toBeGreaterThan(50_000);
  await shot('08-rolled-back');

  // What the branch changed compared with its parent, file by file: a note
  // of its own, and not Grove's own files (its host name), which every
  // branch has different.
  await helper.request('exec.run', { workspace: id, argv: ['sh', '-c', 'echo a note of e2e-1 > /root/note.txt'] });
  await page.getByRole('tab', { name: 'Diff' }).click();
  await expect(page.getByTestId('diff')).toContainText('compared with e2e');
  await expect(page.locator('.diff-summary')).toContainText(/\d+ added/, { timeout: 60_000 });
  await page.locator('.diff-file', { hasText: '/root/note.txt' }).click();
  await expect(page.locator('.diff-text')).toContainText('+a note of e2e-1');
  await expect(page.locator('.diff-file', { hasText: '/etc/hostname' })).toHaveCount(0);
  await shot('11-diff');
});

test('promote it to the main line', async () => {
  await row('e2e-1').click();
  await page.getByRole('button', { name: 'Promote' }).click();
  // The app asks what becomes of the old main line, with the CLI's choices.
  await page.getByRole('dialog').getByLabel('Keep it running as a branch').check();
  await confirm('Promote');
  await expect(row('e2e-1').locator('.badge')).toHaveText('main', { timeout: 120_000 });
  expect((await helper.request('workspace.get', { workspace: 'e2e-1' })).main).toBe(true);
  await expect(row('e2e').locator('.badge')).toHaveCount(0);
  expect((await helper.request('workspace.get', { workspace: 'e2e' })).state).toBe('running');
  await shot('09-promoted');
});

test('the activity log and the diff view tell what happened', async () => {
  await page.getByRole('tab', { name: 'Activity' }).click();
  const log = page.getByTestId('activity');
  for (const what of ['create workspace', 'fork into 2', 'discard', 'checkpoint', 'promote to main line']) await expect(log).toContainText(what);
  await shot('10-activity');

  await page.getByRole('button', { name: 'toggle theme' }).click();
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  await page.getByRole('tab', { name: 'Desktop' }).click();
  await expect.poll(() => greenPixels('.desktop.full'), { timeout: 60_000, intervals: [500] }).toBeGreaterThan(50_000);
  await shot('12-dark');
});
