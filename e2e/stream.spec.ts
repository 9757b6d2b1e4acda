// A branch's desktop through its Selkies stream in the app (docs/stream.md):
// `grove app --web` as it runs by default, over HTTPS with Grove's own
// certificate, frames the branch's stream; the spec sees the desktop's real
// pixels in the frame, and what it types into the frame reaches the branch,
// as a computer-use screenshot of the branch shows. (The other specs run the
// app with `--stream vnc`, the noVNC fallback.)
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { expect, test, type Page } from '@playwright/test';
import { PNG } from 'pngjs';
import { HelperClient } from '../main/src/helper-client/client.js';
import type { Workspace } from '../privileged-helper/src/protocol/entities.js';
import { REPO } from '../privileged-helper/test/system/helper-process.js';
import { deleteBranches } from './app-page.js';
import { unexpectedErrors } from './console-errors.js';

type Rgb = readonly [number, number, number];
const START_PAGE_RGB: Rgb = [13, 122, 95]; // privileged-helper/image/desktop/start.html
const BLACK: Rgb = [0, 0, 0];
const WHITE: Rgb = [255, 255, 255];
const MAGENTA: Rgb = [255, 0, 255];
/** JPEG frames shift colours a little. */
const TOLERANCE = 16;
const TYPED = 'typed through the stream';
/** A white xterm over the whole screen that writes what is typed into it to a file (and shows it, in black). */
const TYPING_WINDOW = `DISPLAY=:0 setsid xterm -geometry 400x120+0+0 -bg white -fg black -e sh -c 'cat > /tmp/typed.txt' </dev/null >/dev/null 2>&1 &`;

test.describe.configure({ mode: 'serial' });

let app: ChildProcess;
let appUrl: string;
let page: Page;
let helper: HelperClient;
let branch: Workspace;
let children: Workspace[] = [];
/** Errors of the app's own page (the stream's client logs its reconnects in its frame). */
const appErrors: string[] = [];

test.beforeAll(async ({ browser }) => {
  helper = await HelperClient.connect({ socketPath: process.env.GROVE_E2E_SOCKET!, name: 'e2e-stream', kind: 'test' });
  ({ app, url: appUrl } = await startDefaultApp(process.env.GROVE_E2E_SOCKET!));
  // Grove's own CA is not in this browser's store.
  page = await browser.newPage({ viewport: { width: 1440, height: 900 }, ignoreHTTPSErrors: true });
  page.on('pageerror', (e) => appErrors.push(e.message));
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.location().url.includes('/stream/')) appErrors.push(m.text());
  });
});

test.afterAll(async () => {
  await page?.close();
  app?.kill('SIGTERM');
  if (branch) await deleteBranches(helper, [...children, branch]);
  helper?.close();
});

// eslint-disable-next-line no-empty-pattern -- Playwright reads the fixtures from this pattern
test.afterEach(async ({}, testInfo) => {
  if (testInfo.status !== testInfo.expectedStatus) await page.screenshot({ path: testInfo.outputPath('failed.png') }).catch(() => undefined);
  expect(unexpectedErrors(appErrors)).toEqual([]);
});

/** `grove app --web` with no other option, as a person starts it; its first stdout line is the URL with the secret. */
async function startDefaultApp(socketPath: string): Promise<{ app: ChildProcess; url: string }> {
  const child = spawn(path.join(REPO, 'main/bin/grove'), ['--socket', socketPath, 'app', '--web'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const url = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`grove app exited (${code}) before printing its URL`)));
    setTimeout(() => reject(new Error('grove app printed no URL within 60 s')), 60_000);
  });
  return { app: child, url };
}

function pixelsOf(png: Buffer, rgb: Rgb): number {
  const { data } = PNG.sync.read(png);
  let n = 0;
  for (let i = 0; i < data.length; i += 4) if (rgb.every((c, k) => Math.abs(data[i + k]! - c) <= TOLERANCE)) n++;
  return n;
}

const frameOf = (w: Workspace) => page.getByTestId(`stream-${w.id}`);
const frame = () => frameOf(branch);
const pixelsIn = async (w: Workspace, rgb: Rgb) => pixelsOf(await frameOf(w).screenshot(), rgb);
const framePixels = (rgb: Rgb) => pixelsIn(branch, rgb);
/** A branch's whole screen through computer use (the helper's own VNC session, not the stream). */
const screenPixels = async (w: Workspace, rgb: Rgb) =>
  pixelsOf(Buffer.from((await helper.request('desktop.screenshot', { workspace: w.id })).png, 'base64'), rgb);
const desktopPixels = (rgb: Rgb) => screenPixels(branch, rgb);
const run = (w: Workspace, script: string) => helper.request('exec.run', { workspace: w.id, argv: ['sh', '-c', script] });

/** Where Selkies's client draws the desktop (its canvas on show) against the frame's own box: whole, at the desktop's aspect, touching two sides. */
async function drawnToFit(w: Workspace): Promise<boolean> {
  const [outer, drawn] = await Promise.all([
    frameOf(w).boundingBox(),
    page.frameLocator(`[data-testid="stream-${w.id}"]`).locator('canvas[id^="video"]:visible').boundingBox(),
  ]);
  if (!outer || !drawn) return false;
  const inside =
    drawn.x >= outer.x - 1 &&
    drawn.y >= outer.y - 1 &&
    drawn.x + drawn.width <= outer.x + outer.width + 1 &&
    drawn.y + drawn.height <= outer.y + outer.height + 1;
  const fills = Math.abs(drawn.width - outer.width) <= 2 || Math.abs(drawn.height - outer.height) <= 2;
  return inside && fills && Math.abs(drawn.width / drawn.height - 1280 / 800) < 0.01;
}

async function desktopSize(w: Workspace): Promise<{ width: number; height: number }> {
  const { width, height } = PNG.sync.read(Buffer.from((await helper.request('desktop.screenshot', { workspace: w.id })).png, 'base64'));
  return { width, height };
}

/** Clicks the middle of a branch's frame (its full-screen xterm takes the focus) and types into it. */
async function typeInto(w: Workspace, text: string): Promise<void> {
  const box = (await frameOf(w).boundingBox())!;
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await page.keyboard.type(text, { delay: 20 });
}

test("the app, over HTTPS by default, frames the branch's stream with its desktop's pixels", async () => {
  expect(appUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/\?token=/);
  branch = await helper.request('workspace.create', { name: 'e2e-stream' });
  await expect.poll(async () => (await helper.request('workspace.get', { workspace: branch.id })).state, { timeout: 150_000 }).toBe('running');
  await page.goto(`${appUrl}#b=${branch.id}`);
  await expect(page.getByTestId('link-status')).toHaveText('live');
  await expect(frame()).toHaveAttribute('src', `/stream/${branch.id}/`);
  // Chromium's start page, as the branch draws it, in the frame's own pixels.
  await expect.poll(() => framePixels(START_PAGE_RGB), { timeout: 90_000, intervals: [1000] }).toBeGreaterThan(50_000);
  // The panel is narrower than the desktop: the whole desktop is drawn, scaled down to fit it.
  expect((await frame().boundingBox())!.width).toBeLessThan(1280);
  await expect.poll(() => drawnToFit(branch), { timeout: 10_000 }).toBe(true);
  // And again when the panel changes shape, the desktop keeping its size.
  await page.setViewportSize({ width: 1100, height: 900 });
  await expect.poll(() => drawnToFit(branch), { timeout: 10_000 }).toBe(true);
  await page.setViewportSize({ width: 1440, height: 900 });
  await expect.poll(() => drawnToFit(branch), { timeout: 10_000 }).toBe(true);
  expect(await desktopSize(branch)).toEqual({ width: 1280, height: 800 });
  await page.screenshot({ path: path.join(REPO, 'docs/screenshots/desktop-through-selkies.png') });
});

test('typing into the frame changes the desktop, as a computer-use screenshot shows', async () => {
  await helper.request('exec.run', { workspace: branch.id, argv: ['sh', '-c', TYPING_WINDOW] });
  await expect.poll(() => framePixels(WHITE), { timeout: 30_000, intervals: [500] }).toBeGreaterThan(200_000);
  const before = await desktopPixels(BLACK);
  // Through the frame, as a person would: a click gives the white window the focus, then the keys.
  await typeInto(branch, `${TYPED}\n`.repeat(4));
  await expect
    .poll(async () => (await helper.request('exec.run', { workspace: branch.id, argv: ['cat', '/tmp/typed.txt'] })).stdout, { timeout: 20_000 })
    .toBe(`${TYPED}\n`.repeat(4));
  // The text is on the screen, black on white.
  expect(await desktopPixels(BLACK)).toBeGreaterThan(before + 1000);
});

test("after a fork each child's stream is its own: what is typed into one is on its screen only", async () => {
  const report = await helper.request('branch.fork', { workspace: branch.id, copies: 2 });
  children = report.children;
  for (const child of children)
    await expect.poll(async () => (await helper.request('workspace.get', { workspace: child.id })).state, { timeout: 60_000 }).toBe('running');
  const typed = ['first child', 'second child, a longer line'];
  const lines = [2, 12];
  for (const [i, child] of children.entries()) {
    await page.getByTestId(`branch-${child.name}`).click();
    await expect(frameOf(child)).toBeVisible();
    // The child's own screen: the full-screen xterm the parent had when it was forked.
    await expect.poll(() => pixelsIn(child, WHITE), { timeout: 90_000, intervals: [1000] }).toBeGreaterThan(200_000);
    await typeInto(child, `${typed[i]}\n`.repeat(lines[i]!));
  }
  for (const [i, child] of children.entries()) {
    // The parent's four lines, then the child's own, and nothing of its sibling's.
    await expect
      .poll(async () => (await run(child, 'cat /tmp/typed.txt')).stdout, { timeout: 20_000 })
      .toBe(`${TYPED}\n`.repeat(4) + `${typed[i]}\n`.repeat(lines[i]!));
  }
  // The second child's twelve longer lines make more black text on its screen than the first child's two.
  const [first, second] = await Promise.all(children.map((c) => screenPixels(c, BLACK)));
  expect(second!).toBeGreaterThan(first! + 2000);
});

test('the compare view shows both children through two live streams', async () => {
  const [first, second] = children as [Workspace, Workspace];
  await page.getByTestId(`branch-${first.name}`).click();
  await page.getByTestId(`branch-${second.name}`).click({ modifiers: ['Control'] });
  await page.getByRole('tab', { name: 'Compare' }).click();
  for (const child of children) {
    await expect(page.getByTestId(`compare-${child.name}`).getByTestId(`stream-${child.id}`)).toHaveAttribute('src', `/stream/${child.id}/`);
    await expect.poll(() => pixelsIn(child, WHITE), { timeout: 60_000, intervals: [1000] }).toBeGreaterThan(50_000);
    await expect.poll(() => drawnToFit(child), { timeout: 10_000 }).toBe(true);
  }
  // Live: a magenta window opened in the second child shows in its stream, and not in the first's.
  await run(second, `DISPLAY=:0 setsid xterm -geometry 400x120+0+0 -bg '#ff00ff' </dev/null >/dev/null 2>&1 &`);
  await expect.poll(() => pixelsIn(second, MAGENTA), { timeout: 30_000, intervals: [500] }).toBeGreaterThan(50_000);
  expect(await pixelsIn(first, MAGENTA)).toBe(0);
});
