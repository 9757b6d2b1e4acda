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
  if (branch) await deleteBranches(helper, [branch]);
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

const frame = () => page.getByTestId(`stream-${branch.id}`);
const framePixels = async (rgb: Rgb) => pixelsOf(await frame().screenshot(), rgb);
/** The branch's whole screen through computer use (the helper's own VNC session, not the stream). */
const desktopPixels = async (rgb: Rgb) => pixelsOf(Buffer.from((await helper.request('desktop.screenshot', { workspace: branch.id })).png, 'base64'), rgb);

test("the app, over HTTPS by default, frames the branch's stream with its desktop's pixels", async () => {
  expect(appUrl).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/\?token=/);
  branch = await helper.request('workspace.create', { name: 'e2e-stream' });
  await expect.poll(async () => (await helper.request('workspace.get', { workspace: branch.id })).state, { timeout: 150_000 }).toBe('running');
  await page.goto(`${appUrl}#b=${branch.id}`);
  await expect(page.getByTestId('link-status')).toHaveText('live');
  await expect(frame()).toHaveAttribute('src', `/stream/${branch.id}/`);
  // Chromium's start page, as the branch draws it, in the frame's own pixels.
  await expect.poll(() => framePixels(START_PAGE_RGB), { timeout: 90_000, intervals: [1000] }).toBeGreaterThan(50_000);
  await page.screenshot({ path: path.join(REPO, 'docs/screenshots/desktop-through-selkies.png') });
});

test('typing into the frame changes the desktop, as a computer-use screenshot shows', async () => {
  await helper.request('exec.run', { workspace: branch.id, argv: ['sh', '-c', TYPING_WINDOW] });
  await expect.poll(() => framePixels([255, 255, 255]), { timeout: 30_000, intervals: [500] }).toBeGreaterThan(200_000);
  const before = await desktopPixels(BLACK);
  // Through the frame, as a person would: a click gives the white window the focus, then the keys.
  const box = (await frame().boundingBox())!;
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await page.keyboard.type(`${TYPED}\n`.repeat(4), { delay: 20 });
  await expect
    .poll(async () => (await helper.request('exec.run', { workspace: branch.id, argv: ['cat', '/tmp/typed.txt'] })).stdout, { timeout: 20_000 })
    .toBe(`${TYPED}\n`.repeat(4));
  // The text is on the screen, black on white.
  expect(await desktopPixels(BLACK)).toBeGreaterThan(before + 1000);
});
