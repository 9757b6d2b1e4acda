// Computer use on a real desktop: the helper drives a branch's own VNC server
// (Xvnc) and the tests check what arrived on the screen, without OCR: the
// start page colours its top section from the note's text (noteColour), the
// editor shows FULL BLOCK characters as dark pixels, X says which window has
// the focus, and scrolling brings the page's blue band into view.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { PNG } from 'pngjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EMPTY_NOTE_RGB, noteColour, type Rgb } from '../../../main/src/agent/note-colour.js';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { DesktopAction, Region } from '../../src/protocol/desktop.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { X_CATCH_UP_PY } from '../../src/desktop/x-catch-up.js';
import { REPO } from './helper-process.js';
import { blankEditor, connect, createWorkspace, darkPixels, EDITOR, EDITOR_TEXT, instance, sh, track, waitFor } from './support.js';
import { holdsFor, until } from '../until.js';

const GREEN = EMPTY_NOTE_RGB;
const BLUE: Rgb = [40, 64, 160];
/** Inside the page's top section, away from the note and the pointer. */
const MARKER = { x: 600, y: 560 };
const NOTE = { x: 360, y: 236 };
const XTERM = { x: 1060, y: 200 };
const ADDRESS_BAR = { x: 400, y: 63 };
const SCROLL_AT = { x: 700, y: 450 };

describe('computer use on a branch desktop', () => {
  let client: HelperClient;
  let ws: Workspace;
  const made: string[] = [];
  const actions: DesktopAction[] = [];

  const shot = async (region?: Region, scale?: number) => {
    const s = await client.request('desktop.screenshot', { workspace: ws.id, region, scale });
    return { meta: s, png: PNG.sync.read(Buffer.from(s.png, 'base64')) };
  };
  const pixel = async (x: number, y: number): Promise<Rgb> => {
    const { png } = await shot({ x, y, width: 1, height: 1 });
    return [png.data[0]!, png.data[1]!, png.data[2]!];
  };
  /** Polls until the pixel has the colour (apps draw a moment after the input arrived). */
  const pixelBecomes = async (at: { x: number; y: number }, rgb: Rgb, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    let last = await pixel(at.x, at.y);
    while (last.join() !== rgb.join() && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 100));
      last = await pixel(at.x, at.y);
    }
    return last;
  };
  const activeWindow = async () => (await sh(client, ws, 'DISPLAY=:0 xdotool getactivewindow getwindowname')).trim();
  const clearNote = async () => {
    await client.request('desktop.click', { workspace: ws.id, ...NOTE });
    await client.request('desktop.key', { workspace: ws.id, keys: 'ctrl+a BackSpace' });
    expect(await pixelBecomes(MARKER, GREEN)).toEqual(GREEN);
  };

  beforeAll(async () => {
    client = await connect('desktop-test');
    await client.subscribe(['desktop.action']);
    client.on('desktop.action', (a) => actions.push(a));
    ws = await createWorkspace(client, 'cu');
    made.push(ws.id);
    // The start page is up when its top section shows; Chromium takes a while on a fresh desktop.
    expect(await pixelBecomes(MARKER, GREEN, 120_000)).toEqual(GREEN);
  });

  afterAll(async () => {
    for (const id of made.reverse()) await client.request('workspace.delete', { workspace: id }).catch(() => undefined);
    client.close();
  });

  it('takes screenshots of the whole screen, a region, and scaled down', async () => {
    const whole = await shot();
    expect(whole.meta).toMatchObject({ width: 1280, height: 800, screen: { width: 1280, height: 800 }, region: { x: 0, y: 0, width: 1280, height: 800 } });
    expect([whole.png.width, whole.png.height]).toEqual([1280, 800]);
    const part = await shot({ x: 0, y: 0, width: 640, height: 400 }, 0.5);
    expect(part.meta).toMatchObject({ width: 320, height: 200, region: { x: 0, y: 0, width: 640, height: 400 } });
    expect([part.png.width, part.png.height]).toEqual([320, 200]);
  });

  it("types into the page's note exactly the text given, symbols and non-Latin included", async () => {
    await clearNote();
    const text = 'Grove $|~" é ß ж 漢 █';
    await client.request('desktop.type', { workspace: ws.id, text });
    expect(await pixelBecomes(MARKER, noteColour(text))).toEqual(noteColour(text));
    expect(await activeWindow()).toMatch(/Chromium/);
  });

  it('types more distinct characters than the keymap has room for, in one call and the next', async () => {
    // ~20 keycodes are free in a US layout, and Xvnc alone never frees one: these need several rounds of reuse.
    for (const text of ['αβγδεζηθικλμνξοπρστυφχψωАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ', 'ѐђѓєѕіїјљњћќѝўџ ÀÁÂÃÄÅÆÇÈÉÊËÌÍÎÏÐÑÒÓÔÕÖØÙÚÛÜÝÞ']) {
      await clearNote();
      await client.request('desktop.type', { workspace: ws.id, text });
      expect(await pixelBecomes(MARKER, noteColour(text))).toEqual(noteColour(text));
    }
  });

  it("waits for the desktop's apps to catch up after a keymap change, and not forever for one that is stopped", async () => {
    const catchUp = async (seconds: number) =>
      (await client.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', X_CATCH_UP_PY, String(seconds)] })).stdout.trim();
    // Chromium and the editor answer pings; xterm does not, and is not waited for.
    expect(await catchUp(5)).toBe('2 of 2 windows caught up');
    const editor = (await sh(client, ws, 'pgrep -x mousepad')).trim();
    await sh(client, ws, `kill -STOP ${editor}`);
    try {
      const started = Date.now();
      expect(await catchUp(1)).toMatch(/^1 of 2 windows caught up; not in time: \[\d+\]$/);
      expect(Date.now() - started).toBeLessThan(5000);
    } finally {
      await sh(client, ws, `kill -CONT ${editor}`);
    }
  });

  it('holds keys sent after a click until the window manager has let the click through to the app', async () => {
    await clearNote();
    await client.request('desktop.type', { workspace: ws.id, text: 'held' });
    expect(await pixelBecomes(MARKER, noteColour('held'))).toEqual(noteColour('held'));
    // A stopped openbox keeps the click in its grab, as a starved one does for a while; keys would overtake it.
    const wm = (await sh(client, ws, 'pgrep -x openbox')).trim();
    await sh(client, ws, `kill -STOP ${wm}`);
    let keys: Promise<unknown> | undefined;
    try {
      await client.request('desktop.click', { workspace: ws.id, ...NOTE });
      keys = client.request('desktop.key', { workspace: ws.id, keys: 'ctrl+a BackSpace' });
      keys.catch(() => undefined);
      await holdsFor(1500, async () => (await pixel(MARKER.x, MARKER.y)).join() === noteColour('held').join(), 'the keys wait behind the click openbox holds');
    } finally {
      await sh(client, ws, `kill -CONT ${wm}`);
    }
    await keys;
    expect(await pixelBecomes(MARKER, GREEN)).toEqual(GREEN);
  });

  it('types a long text into the page right while busy loops starve the desktop of CPU', async () => {
    // Without waiting for the apps (x-catch-up.ts), Chromium read some keys before their keymap: a run of characters went missing.
    const loops = (await sh(client, ws, "for i in 1 2 3 4 5 6; do nohup sh -c 'while :; do :; done' >/dev/null 2>&1 & echo $!; done")).trim().split('\n');
    try {
      const text = 'αβγδεζηθικλμνξοπρστυφχψωАБВГДЕЁЖЗИЙКЛМНОПРСТУФХЦЧШЩЪЫЬЭЮЯ';
      for (let round = 0; round < 2; round++) {
        await clearNote();
        await client.request('desktop.type', { workspace: ws.id, text });
        expect(await pixelBecomes(MARKER, noteColour(text))).toEqual(noteColour(text));
      }
    } finally {
      await sh(client, ws, `kill ${loops.join(' ')}`);
    }
  });

  it('presses key combos: ctrl+a then BackSpace clears the note', async () => {
    await client.request('desktop.key', { workspace: ws.id, keys: 'ctrl+a BackSpace' });
    expect(await pixelBecomes(MARKER, GREEN)).toEqual(GREEN);
  });

  it('types into the editor once a click gave it the focus, and the screenshot shows the text', async () => {
    const before = await blankEditor(client, ws);
    await client.request('desktop.click', { workspace: ws.id, ...EDITOR });
    await client.request('desktop.type', { workspace: ws.id, text: '██████████\n██████████' });
    expect(await activeWindow()).toMatch(/Mousepad/);
    let after = before;
    for (let i = 0; i < 50 && after < before + 1000; i++) after = await darkPixels(client, ws, EDITOR_TEXT);
    expect(after).toBeGreaterThan(before + 1000);
  });

  it('moves the focus with a click: keys typed after clicking the terminal do not reach the page', async () => {
    await client.request('desktop.click', { workspace: ws.id, ...XTERM });
    expect(await activeWindow()).toMatch(/xterm/);
    await client.request('desktop.type', { workspace: ws.id, text: 'zz' });
    await client.request('desktop.wait', { workspace: ws.id, until: 'still', timeoutMs: 5000, quietMs: 300 });
    expect(await pixel(MARKER.x, MARKER.y)).toEqual(GREEN);
    await client.request('desktop.key', { workspace: ws.id, keys: 'BackSpace BackSpace' });
    await client.request('desktop.click', { workspace: ws.id, ...NOTE });
    expect(await activeWindow()).toMatch(/Chromium/);
  });

  it("shows the address bar's suggestions in Chromium's own popup, with no renderer kept for it and no OpenGL loaded anywhere", async () => {
    // Both would be ~60 MiB more in every fork's child (image/desktop/session.sh).
    const firstSuggestion: Region = { x: 180, y: 95, width: 400, height: 20 };
    const before = (await shot(firstSuggestion)).png.data;
    // A click, not ctrl+l: Chromium lets the page see ctrl+l before it moves the focus, and keys typed
    // right after it can reach the page first (one run in four here put 'gr' into the note).
    await client.request('desktop.click', { workspace: ws.id, ...ADDRESS_BAR });
    await client.request('desktop.type', { workspace: ws.id, text: 'grove' });
    let popupShown = false;
    for (let i = 0; i < 50 && !popupShown; i++) popupShown = !(await shot(firstSuggestion)).png.data.equals(before);
    expect(popupShown).toBe(true);
    expect(await sh(client, ws, "pgrep -af -- '--top-chrome-[w]ebui'; true")).toBe(''); // [w]: not this shell's own command line
    expect(await sh(client, ws, 'grep -ls libLLVM /proc/[0-9]*/maps; true')).toBe('');
    await client.request('desktop.key', { workspace: ws.id, keys: 'Escape Escape' });
    await client.request('desktop.click', { workspace: ws.id, ...NOTE });
    expect(await activeWindow()).toMatch(/Chromium/);
    expect(await pixel(MARKER.x, MARKER.y)).toEqual(GREEN);
  });

  it("keeps Chromium's histograms in its own memory, not in a file it deletes while it maps it", async () => {
    // Such a file is copied whole into every dump and written back by every restore (image/desktop/session.sh).
    expect(Number(await sh(client, ws, 'pgrep -c -x chromium'))).toBeGreaterThan(0);
    expect(await sh(client, ws, 'grep -l BrowserMetrics /proc/[0-9]*/maps; true')).toBe('');
  });

  it('tells Chromium how it rates this machine for on-device AI models, so that it starts no service to measure it', async () => {
    // Measured, that rating starts a service process three minutes in, which then stays in every fork (image/desktop/session.sh).
    const rating = `python3 -c 'import json; print(json.load(open("/root/.config/grove-chromium/Local State"))["optimization_guide"]["on_device"]["performance_class"])' 2>/dev/null; true`;
    await waitFor("Chromium's rating in its saved state", async () => (await sh(client, ws, rating)).trim() === '7', 60_000);
    expect(await sh(client, ws, "pgrep -af -- 'on_device_[m]odel'; true")).toBe('');
  });

  it('scrolls the page: the blue band below the first screen comes into view, and goes again', async () => {
    const after = await client.request('desktop.scroll', { workspace: ws.id, ...SCROLL_AT, dx: 0, dy: 10 });
    expect(after.cursor).toEqual(SCROLL_AT);
    expect(await pixelBecomes({ x: 400, y: 700 }, BLUE)).toEqual(BLUE);
    await client.request('desktop.scroll', { workspace: ws.id, dx: 0, dy: -30 });
    expect(await pixelBecomes({ x: 400, y: 700 }, GREEN)).toEqual(GREEN);
  });

  it('tells where the pointer is', async () => {
    await client.request('desktop.move', { workspace: ws.id, x: 700, y: 600 });
    expect(await client.request('desktop.cursor', { workspace: ws.id })).toEqual({
      cursor: { x: 700, y: 600 },
      screen: { width: 1280, height: 800 },
      frame: expect.stringMatching(/^[0-9a-f]{8}\.\d+$/),
    });
  });

  it('knows where the pointer is after its session closed for idling: where X has it, not the middle', async () => {
    await client.request('desktop.move', { workspace: ws.id, x: 1060, y: 600 });
    await new Promise((r) => setTimeout(r, Number(instance().env.GROVE_DESKTOP_IDLE_MS) + 3000));
    expect((await client.request('desktop.cursor', { workspace: ws.id })).cursor).toEqual({ x: 1060, y: 600 });
    // Moved by a program in the branch (a warp the closed session could not see), then after another idle close.
    await sh(client, ws, 'DISPLAY=:0 xdotool mousemove 1000 500');
    await new Promise((r) => setTimeout(r, Number(instance().env.GROVE_DESKTOP_IDLE_MS) + 3000));
    expect((await client.request('desktop.cursor', { workspace: ws.id })).cursor).toEqual({ x: 1000, y: 500 });
  });

  it('waits for a change since the frame an action answered, also one that came before the wait began', async () => {
    await clearNote();
    const typed = await client.request('desktop.type', { workspace: ws.id, text: 'since' });
    expect(await pixelBecomes(MARKER, noteColour('since'))).toEqual(noteColour('since'));
    const changed = await client.request('desktop.wait', { workspace: ws.id, until: 'changed', timeoutMs: 5000, since: typed.frame });
    expect(changed).toMatchObject({ satisfied: true, waitedMs: 0 });
    await client.request('desktop.wait', { workspace: ws.id, until: 'still', timeoutMs: 10_000, quietMs: 300 });
    const still = await client.request('desktop.cursor', { workspace: ws.id });
    expect(await client.request('desktop.wait', { workspace: ws.id, until: 'changed', timeoutMs: 500, since: still.frame })).toMatchObject({
      satisfied: false,
    });
    await clearNote();
  });

  it('zooms into a region at full resolution, scaled up, and refuses one off the screen', async () => {
    const region = { x: MARKER.x - 10, y: MARKER.y - 5, width: 20, height: 10 };
    const zoomed = await client.request('desktop.zoom', { workspace: ws.id, region, width: 160 });
    expect(zoomed).toMatchObject({ width: 160, height: 80, scale: 8, region });
    const png = PNG.sync.read(Buffer.from(zoomed.png, 'base64'));
    expect([png.width, png.height]).toEqual([160, 80]);
    expect([...png.data.subarray((40 * 160 + 80) * 4, (40 * 160 + 80) * 4 + 3)]).toEqual(GREEN);
    await expect(client.request('desktop.zoom', { workspace: ws.id, region: { x: 1200, y: 700, width: 100, height: 50 } })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('reaches past the 1280x800 screen'),
    });
  });

  it('holds keys for a while (bounded), and scrolls with keys held', async () => {
    // X's own view of the keyboard: whether Shift_L is down now.
    const shiftDown = async () =>
      (
        await sh(
          client,
          ws,
          `python3 -c "import ctypes; x = ctypes.CDLL('libX11.so.6'); x.XOpenDisplay.restype = ctypes.c_void_p; d = ctypes.c_void_p(x.XOpenDisplay(None)); keys = (ctypes.c_char * 32)(); x.XQueryKeymap(d, keys); x.XKeysymToKeycode.restype = ctypes.c_ubyte; c = x.XKeysymToKeycode(d, ctypes.c_ulong(0xffe1)); print(keys.raw[c // 8] >> (c % 8) & 1)"`,
        )
      ).trim();
    expect(await shiftDown()).toBe('0');
    const holding = client.request('desktop.holdKey', { workspace: ws.id, keys: 'shift', durationMs: 3000 });
    await until(async () => (await shiftDown()) === '1', { what: 'shift to be held down', timeoutMs: 2500 });
    await holding;
    expect(await shiftDown()).toBe('0');
    await expect(client.request('desktop.holdKey', { workspace: ws.id, keys: 'shift', durationMs: 60_000 })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('at most 10000 ms'),
    });
    await clearNote();
    // ctrl + wheel zooms Chromium's page: the note field moves off its place, and ctrl+0 brings it back.
    const before = (await shot({ x: 40, y: 200, width: 640, height: 80 })).png.data;
    await client.request('desktop.scroll', { workspace: ws.id, ...SCROLL_AT, dx: 0, dy: -3, modifiers: 'ctrl' });
    await client.request('desktop.wait', { workspace: ws.id, until: 'still', timeoutMs: 5000, quietMs: 300 });
    expect((await shot({ x: 40, y: 200, width: 640, height: 80 })).png.data.equals(before)).toBe(false);
    await client.request('desktop.key', { workspace: ws.id, keys: 'ctrl+0' });
    await client.request('desktop.wait', { workspace: ws.id, until: 'still', timeoutMs: 5000, quietMs: 300 });
    await clearNote();
  });

  it('lists the windows from X, uploads and downloads files, launches programs and opens web pages in the branch', async () => {
    const windows = await client.request('desktop.windows', { workspace: ws.id });
    expect(windows.screen).toEqual({ width: 1280, height: 800 });
    const apps = windows.windows.map((w) => w.app);
    expect(apps).toEqual(expect.arrayContaining(['Mousepad', 'XTerm', expect.stringMatching(/chromium/i)]));
    expect(windows.windows.filter((w) => w.focused)).toEqual([expect.objectContaining({ app: expect.stringMatching(/chromium/i) })]);
    const xterm = windows.windows.find((w) => w.app === 'XTerm')!;
    expect(xterm.x + xterm.width).toBeLessThanOrEqual(1280);
    expect(xterm.x).toBeGreaterThan(800);

    const page = '<!doctype html><title>grove open_url test</title><h1>opened</h1>\n';
    await expect(client.request('file.upload', { workspace: ws.id, path: '/etc/hostname/index.html', data: 'eA==' })).rejects.toMatchObject({
      code: 'E_CONFLICT',
      message: expect.stringContaining('could not write /etc/hostname/index.html in the branch'),
    });
    // Its folders are made.
    expect(await client.request('file.upload', { workspace: ws.id, path: '/tmp/served/index.html', data: Buffer.from(page).toString('base64') })).toEqual({
      path: '/tmp/served/index.html',
      bytes: Buffer.byteLength(page),
    });
    const down = await client.request('file.download', { workspace: ws.id, path: '/tmp/served/index.html' });
    expect(Buffer.from(down.data, 'base64').toString()).toBe(page);
    await expect(client.request('file.download', { workspace: ws.id, path: '/tmp/served' })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
    await sh(client, ws, 'head -c 3000000 /dev/zero > /tmp/big');
    await expect(client.request('file.download', { workspace: ws.id, path: '/tmp/big' })).rejects.toMatchObject({
      code: 'E_TOO_LARGE',
      message: expect.stringContaining('at most 2097152'),
    });
    await expect(client.request('file.upload', { workspace: ws.id, path: '/tmp/big2', data: Buffer.alloc(5 << 19).toString('base64') })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('an upload is at most 2097152 bytes'),
    });
    expect(await sh(client, ws, 'ls /tmp/big2 2>&1; true')).toMatch(/No such file/);

    const server = await client.request('desktop.launch', {
      workspace: ws.id,
      argv: ['python3', '-m', 'http.server', '8765', '--bind', '127.0.0.1', '--directory', '/tmp/served'],
    });
    try {
      await waitFor(
        'the page server',
        async () =>
          (await sh(client, ws, 'python3 -c \'import urllib.request; urllib.request.urlopen("http://127.0.0.1:8765/")\' && echo up; true')).includes('up'),
        10_000,
      );
      await expect(client.request('desktop.launch', { workspace: ws.id, argv: ['no-such-program', '--x'] })).rejects.toMatchObject({
        code: 'E_NOT_FOUND',
        message: "there is no program 'no-such-program' in the branch",
      });
      for (const url of ['file:///etc/passwd', 'javascript:alert(1)', 'chrome://settings']) {
        await expect(client.request('desktop.openUrl', { workspace: ws.id, url }), url).rejects.toMatchObject({
          code: 'E_INVALID_PARAMS',
          message: expect.stringContaining('only http:// and https:// addresses are opened'),
        });
      }
      expect(await client.request('desktop.openUrl', { workspace: ws.id, url: 'http://127.0.0.1:8765/' })).toEqual({ url: 'http://127.0.0.1:8765/' });
      await waitFor(
        "Chromium's window to show the page",
        async () => (await client.request('desktop.windows', { workspace: ws.id })).windows.some((w) => w.title.startsWith('grove open_url test')),
        30_000,
      );
      await client.request('desktop.key', { workspace: ws.id, keys: 'ctrl+w' });
      await waitFor('the start page back', async () => (await pixel(MARKER.x, MARKER.y)).join() === GREEN.join(), 10_000);
    } finally {
      await sh(client, ws, `kill ${server.pid}; rm -rf /tmp/served /tmp/big`);
    }
  });

  it('waits until the screen is still, and until it changes after a key press', async () => {
    await client.request('desktop.click', { workspace: ws.id, ...NOTE });
    const still = await client.request('desktop.wait', { workspace: ws.id, until: 'still', timeoutMs: 10_000, quietMs: 300 });
    expect(still).toMatchObject({ satisfied: true });
    // Armed at the still frame, so a change the key makes before the wait begins still counts.
    await client.request('desktop.key', { workspace: ws.id, keys: 'x' });
    expect(await client.request('desktop.wait', { workspace: ws.id, until: 'changed', timeoutMs: 10_000, since: still.frame })).toMatchObject({
      satisfied: true,
    });
    await clearNote();
  });

  it('refuses what is off the screen and unknown keys, saying why', async () => {
    await expect(client.request('desktop.click', { workspace: ws.id, x: 1280, y: 10 })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('1280x800'),
    });
    await expect(client.request('desktop.screenshot', { workspace: ws.id, region: { x: 1000, y: 0, width: 300, height: 10 } })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
    });
    await expect(client.request('desktop.key', { workspace: ws.id, keys: 'ctrl+bogus' })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining("unknown key 'bogus'"),
    });
  });

  it('published every call as a desktop action, failures included', () => {
    const mine = actions.filter((a) => a.workspace === ws.id);
    expect(mine.find((a) => a.action === 'type' && a.ok)).toMatchObject({ workspaceName: 'cu', summary: expect.stringMatching(/^type \d+ characters$/) });
    expect(mine.find((a) => a.action === 'click' && !a.ok)).toMatchObject({ summary: expect.stringContaining('1280,10') });
    expect(mine.find((a) => a.action === 'scroll')).toMatchObject({ cursor: SCROLL_AT, screen: { width: 1280, height: 800 } });
  });

  it('knows where the pointer is in both children of a fork: a click without a point lands there', async () => {
    await client.request('desktop.move', { workspace: ws.id, ...XTERM });
    const report = await client.request('branch.fork', { workspace: ws.id, copies: 2 });
    const children = await Promise.all(report.children.map((c) => track(c)));
    made.push(...children.map((c) => c.id));
    expect(children).toHaveLength(2);
    for (const child of children) {
      expect((await client.request('desktop.cursor', { workspace: child.id })).cursor, child.name).toEqual(XTERM);
      await client.request('desktop.click', { workspace: child.id });
      expect((await sh(client, child, 'DISPLAY=:0 xdotool getactivewindow getwindowname')).trim(), child.name).toMatch(/xterm/);
      expect(await sh(client, child, 'DISPLAY=:0 xdotool getmouselocation'), child.name).toMatch(new RegExp(`^x:${XTERM.x} y:${XTERM.y} `));
    }
    expect((await client.request('desktop.cursor', { workspace: ws.id })).cursor).toEqual(XTERM);
    await client.request('desktop.click', { workspace: ws.id, ...NOTE });
  });

  it('works on a fork and on its source (each desktop has its own session)', async () => {
    await client.request('desktop.type', { workspace: ws.id, text: 'forked' });
    expect(await pixelBecomes(MARKER, noteColour('forked'))).toEqual(noteColour('forked'));
    const report = await client.request('branch.fork', { workspace: ws.id, copies: 1 });
    const child = await track(report.children[0]!);
    made.push(child.id);
    const childPixel = async () => {
      const s = await client.request('desktop.screenshot', { workspace: child.id, region: { ...MARKER, width: 1, height: 1 } });
      const png = PNG.sync.read(Buffer.from(s.png, 'base64'));
      return [png.data[0], png.data[1], png.data[2]];
    };
    expect(await childPixel()).toEqual(noteColour('forked'));
    // The source's session survives the fork (or reconnects): it still sees and acts.
    await client.request('desktop.key', { workspace: ws.id, keys: 'BackSpace' });
    expect(await pixelBecomes(MARKER, noteColour('forke'))).toEqual(noteColour('forke'));
    // The child is a desktop of its own: typing there leaves the source alone.
    await client.request('desktop.click', { workspace: child.id, ...NOTE });
    await client.request('desktop.type', { workspace: child.id, text: '!' });
    const deadline = Date.now() + 10_000;
    while ((await childPixel()).join() !== noteColour('forked!').join() && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    expect(await childPixel()).toEqual(noteColour('forked!'));
    expect(await pixel(MARKER.x, MARKER.y)).toEqual(noteColour('forke'));
  });

  it('is on the command line: screenshot to a file, cursor, wait, and clear errors', async () => {
    const grove = (...args: string[]) =>
      execa(path.join(REPO, 'main/bin/grove'), ['--socket', instance().socketPath, ...args], { reject: false, timeout: 60_000 });
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'grove-shot-')), 'part.png');
    try {
      const shot = await grove('screenshot', 'cu', '-o', file, '--region', '0,0,640,400', '--scale', '0.5');
      expect(shot.stdout).toContain(`${file}: 320x200 PNG of 640x400 at 0,0 (screen 1280x800`);
      const png = PNG.sync.read(await readFile(file));
      expect([png.width, png.height]).toEqual([320, 200]);
      const meta = JSON.parse((await grove('--json', 'screenshot', 'cu', '-o', file)).stdout);
      expect(meta).toMatchObject({ file, width: 1280, height: 800 });
      expect(meta.png).toBeUndefined();

      await grove('move', 'cu', '700', '600');
      expect(JSON.parse((await grove('--json', 'cursor', 'cu')).stdout)).toMatchObject({ cursor: { x: 700, y: 600 }, screen: { width: 1280, height: 800 } });

      // Scripts: errors as JSON on stdout with a non-zero exit code; a file that cannot be written, in words.
      const notFound = await grove('--json', 'cursor', 'no-such-branch');
      expect([notFound.exitCode, JSON.parse(notFound.stdout)]).toEqual([
        2,
        { error: { code: 'E_NOT_FOUND', message: expect.stringContaining('no-such-branch') } },
      ]);
      const usage = await grove('--json', 'zoom', 'cu');
      expect([usage.exitCode, JSON.parse(usage.stdout), usage.stderr]).toEqual([
        2,
        { error: { code: 'E_INVALID_PARAMS', message: expect.stringContaining('region') } },
        '',
      ]);
      for (const [out, why] of [
        ['/no-such-folder/shot.png', 'no such file or folder'],
        ['/tmp', 'it is a folder'],
      ]) {
        const unwritable = await grove('screenshot', 'cu', '-o', out!);
        expect([unwritable.exitCode, unwritable.stderr.trim()]).toEqual([2, `grove: cannot write ${out}: ${why} (E_INVALID_PARAMS)`]);
      }

      // wait --changed --since the frame an action printed: the change before the wait counts, no race.
      const typed = JSON.parse((await grove('--json', 'type', 'cu', 'q')).stdout) as { frame: string };
      const waited = await grove('wait', 'cu', '--changed', '--since', typed.frame, '--timeout', '10');
      expect([waited.exitCode, waited.stdout]).toEqual([0, expect.stringMatching(/^changed after \d+ ms; frame [0-9a-f]{8}\.\d+$/m)]);
      await grove('key', 'cu', 'BackSpace');

      const zoomFile = path.join(path.dirname(file), 'zoom.png');
      expect((await grove('zoom', 'cu', '0,0,100,50', '--width', '300', '-o', zoomFile)).stdout).toContain(`${zoomFile}: 300x150 PNG of 100x50 at 0,0`);
      expect((await grove('windows', 'cu')).stdout).toMatch(/^\* 0x[0-9a-f]+\t\S*[Cc]hromium/m);
      const local = path.join(path.dirname(file), 'up.txt');
      await writeFile(local, 'up and down\n');
      expect((await grove('upload', 'cu', local, '/tmp/up.txt')).stdout).toBe('wrote 12 bytes to cu:/tmp/up.txt');
      expect((await grove('download', 'cu', '/tmp/up.txt')).stdout).toBe('up and down');
      expect((await grove('wait', 'cu', '--still', '--quiet', '200', '--timeout', '10')).exitCode).toBe(0);

      const badKey = await grove('key', 'cu', 'ctrl+nosuchkey');
      expect(badKey.exitCode).toBe(2);
      expect(badKey.stderr).toContain("unknown key 'nosuchkey'");
      const halfPoint = await grove('click', 'cu', '5');
      expect([halfPoint.exitCode, halfPoint.stderr]).toEqual([2, expect.stringContaining('give both x and y')]);
      expect((await grove('wait', 'cu')).stderr).toContain('give --still or --changed');
    } finally {
      await rm(path.dirname(file), { recursive: true, force: true });
    }
  });

  it('refuses a stopped branch with E_CONFLICT', async () => {
    await client.request('workspace.stop', { workspace: ws.id });
    await expect(client.request('desktop.screenshot', { workspace: ws.id })).rejects.toMatchObject({
      code: 'E_CONFLICT',
      message: expect.stringContaining("workspace 'cu' is stopped"),
    });
  });
});
