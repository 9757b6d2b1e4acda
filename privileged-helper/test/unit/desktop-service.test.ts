import { PNG } from 'pngjs';
import { afterEach, describe, expect, it } from 'vitest';
import { DesktopService, type DesktopOptions } from '../../src/desktop/desktop-service.js';
import type { DesktopTarget } from '../../src/desktop/session-pool.js';
import type { DesktopAction } from '../../src/protocol/desktop.js';
import { X_CATCH_UP_PY, X_POINTER_FREE_PY } from '../../src/desktop/x-catch-up.js';
import { X_POINTER_PY, X_WINDOWS_PY } from '../../src/desktop/x-queries.js';
import { FakeVnc } from './desktop-fake-vnc.js';
import { holdsFor, until } from '../until.js';

const open: { close(): unknown }[] = [];
afterEach(async () => {
  for (const x of open.splice(0).reverse()) await x.close();
});

type Exec = DesktopOptions['exec'];

/** The branch has no xmodmap: Xvnc adds what the layout lacks (the default runs it inside a real branch). */
const noXmodmap: Exec = async () => ({ exitCode: 127, stdout: '', stderr: 'xmodmap: not found' });

async function setup(idleMs = 60_000, exec: Exec = noXmodmap) {
  const vnc = await FakeVnc.start(64, 48);
  vnc.paint(0, 0, 64, 48, [13, 122, 95]);
  const actions: DesktopAction[] = [];
  const desktop = new DesktopService({ publish: (a) => actions.push(a), log: () => undefined, vncPort: vnc.port, idleMs, exec, connectTimeoutMs: 1000 });
  open.push(vnc, { close: () => desktop.closeAll() });
  const target: DesktopTarget = { id: 'b1', name: 'one', pid: 100, pidStart: 5, address: '127.0.0.1' };
  return { vnc, desktop, actions, target };
}

const SHIFT = 0xffe1;
const FRAME = expect.stringMatching(/^[0-9a-f]{8}\.\d+$/);
/** Asking X where the pointer is, as each new session does: not what these tests count. */
const asksPointer = (argv: string[]) => argv[2] === X_POINTER_PY;
const keyEvents = (vnc: FakeVnc) => vnc.input.filter((e) => e.kind === 'key').map((e) => `${e.down ? '+' : '-'}${e.keysym!.toString(16)}`);

describe('DesktopService', () => {
  it('takes a screenshot of a region, scaled, as PNG with its metadata', async () => {
    const { vnc, desktop, target } = await setup();
    vnc.paint(10, 10, 20, 10, [255, 0, 0]);
    const shot = await desktop.screenshot(target, { region: { x: 10, y: 10, width: 20, height: 10 }, scale: 0.5 });
    expect(shot).toMatchObject({ width: 10, height: 5, region: { x: 10, y: 10, width: 20, height: 10 }, screen: { width: 64, height: 48 } });
    const png = PNG.sync.read(Buffer.from(shot.png, 'base64'));
    expect([...png.data.subarray(0, 3)]).toEqual([255, 0, 0]);
  });

  it('refuses points and regions off the screen, saying how big it is, and publishes the failure', async () => {
    const { desktop, target, actions } = await setup();
    await expect(desktop.click(target, { x: 64, y: 0 })).rejects.toThrow(/64,0 is off the screen: it is 64x48, so x is 0-63 and y 0-47/);
    await expect(desktop.screenshot(target, { region: { x: 60, y: 0, width: 5, height: 5 } })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('reaches past the 64x48 screen'),
    });
    await expect(desktop.click(target, { x: 5 })).rejects.toThrow(/give both x and y/);
    await expect(desktop.key(target, { keys: 'ctrl+nope' })).rejects.toThrow(/unknown key 'nope'/);
    await expect(desktop.wait(target, { until: 'still', timeoutMs: 100, quietMs: 200 })).rejects.toThrow(/could never be satisfied/);
    expect(actions.map((a) => [a.action, a.ok])).toEqual([
      ['click', false],
      ['screenshot', false],
      ['click', false],
      ['key', false],
      ['wait', false],
    ]);
    expect(actions[0]).toMatchObject({ workspace: 'b1', workspaceName: 'one', summary: expect.stringContaining('click left at 64,0'), cursor: null });
  });

  it('clicks with modifiers held, the number of times asked, and publishes where the pointer is', async () => {
    const { vnc, desktop, target, actions } = await setup();
    const state = await desktop.click(target, { x: 3, y: 4, button: 'right', count: 2, modifiers: 'shift' });
    expect(state).toEqual({ cursor: { x: 3, y: 4 }, screen: { width: 64, height: 48 }, frame: FRAME });
    expect(vnc.input).toEqual([
      { kind: 'pointer', buttons: 0, x: 3, y: 4 },
      { kind: 'key', down: true, keysym: SHIFT },
      { kind: 'pointer', buttons: 4, x: 3, y: 4 },
      { kind: 'pointer', buttons: 0, x: 3, y: 4 },
      { kind: 'pointer', buttons: 4, x: 3, y: 4 },
      { kind: 'pointer', buttons: 0, x: 3, y: 4 },
      { kind: 'key', down: false, keysym: SHIFT },
    ]);
    expect(actions.at(-1)).toMatchObject({ action: 'click', summary: 'double click right with shift at 3,4', cursor: { x: 3, y: 4 }, ok: true });
  });

  it('scrolls with wheel buttons 4-7, one press per notch, at the pointer when no point is given', async () => {
    const { vnc, desktop, target } = await setup();
    await desktop.move(target, { x: 8, y: 9 });
    await desktop.scroll(target, { dx: -1, dy: 2 });
    const presses = vnc.input.filter((e) => e.buttons).map((e) => [e.buttons, e.x, e.y]);
    expect(presses).toEqual([
      [16, 8, 9],
      [16, 8, 9],
      [32, 8, 9],
    ]);
  });

  it('drags: press at the start, moves in steps, release at the end', async () => {
    const { vnc, desktop, target } = await setup();
    await desktop.drag(target, { from: { x: 1, y: 1 }, to: { x: 41, y: 31 } });
    const pointer = vnc.input.filter((e) => e.kind === 'pointer');
    expect(pointer[1]).toEqual({ kind: 'pointer', buttons: 1, x: 1, y: 1 });
    expect(pointer.at(-2)).toEqual({ kind: 'pointer', buttons: 1, x: 41, y: 31 });
    expect(pointer.at(-1)).toEqual({ kind: 'pointer', buttons: 0, x: 41, y: 31 });
    expect(pointer.length).toBeGreaterThanOrEqual(5 + 3);
  });

  it('presses combos in turn and types text as keysyms', async () => {
    const { vnc, desktop, target } = await setup();
    await desktop.key(target, { keys: 'ctrl+a BackSpace' });
    await desktop.type(target, { text: 'hé\n' });
    expect(keyEvents(vnc)).toEqual(['+ffe3', '+61', '-61', '-ffe3', '+ff08', '-ff08', '+68', '-68', '+e9', '-e9', '+ff0d', '-ff0d']);
  });

  it('gives characters the layout lacks a keycode inside the branch before typing them, ASCII needing none', async () => {
    const calls: Parameters<Exec>[1][] = [];
    const exec: Exec = async (_t, req) => {
      if (!asksPointer(req.argv)) calls.push(req);
      return { exitCode: 0, stdout: req.argv[1] === '-pk' ? '     38    \t0x0061 (a)\t0x0041 (A)\t\n    250    \t\n' : '', stderr: '' };
    };
    const { vnc, desktop, target } = await setup(60_000, exec);
    await desktop.type(target, { text: 'aA' });
    expect(calls).toEqual([]);
    await desktop.type(target, { text: 'aж' });
    expect(calls).toEqual([
      { argv: ['xmodmap', '-pk'], env: { DISPLAY: ':0' }, timeoutMs: 10_000 },
      { argv: ['xmodmap', '-e', 'keycode 250 = 0x1000436 0x1000436'], env: { DISPLAY: ':0' }, timeoutMs: 10_000 },
      // Then the apps are asked whether they have read the change.
      { argv: ['python3', '-c', X_CATCH_UP_PY, '5'], env: { DISPLAY: ':0' }, timeoutMs: 10_000 },
    ]);
    expect(keyEvents(vnc).slice(-4)).toEqual(['+61', '-61', '+1000436', '-1000436']);
  });

  it('sends keys after a click only once no grab holds the pointer (the click has reached the app)', async () => {
    const calls: string[][] = [];
    const exec: Exec = async (_t, req) => {
      if (!asksPointer(req.argv)) calls.push(req.argv);
      return { exitCode: 0, stdout: 'pointer free after 0 ms', stderr: '' };
    };
    const { desktop, target } = await setup(60_000, exec);
    await desktop.key(target, { keys: 'a' });
    expect(calls).toEqual([]);
    await desktop.click(target, { x: 1, y: 1 });
    await desktop.move(target, { x: 2, y: 2 });
    expect(calls).toEqual([]);
    await desktop.key(target, { keys: 'ctrl+a' });
    expect(calls).toEqual([['python3', '-c', X_POINTER_FREE_PY, '5']]);
    await desktop.type(target, { text: 'b' });
    expect(calls).toHaveLength(1);
    await desktop.scroll(target, { dx: 0, dy: 1 });
    await desktop.type(target, { text: 'c' });
    expect(calls).toHaveLength(2);
  });

  it('types anyway when the keymap cannot be read (Xvnc adds what it can)', async () => {
    const logs: string[] = [];
    const vnc = await FakeVnc.start(64, 48);
    const desktop = new DesktopService({
      publish: () => undefined,
      log: (m) => logs.push(m),
      vncPort: vnc.port,
      exec: noXmodmap,
    });
    open.push(vnc, { close: () => desktop.closeAll() });
    await desktop.type({ id: 'b2', name: 'two', pid: 1, pidStart: 1, address: '127.0.0.1' }, { text: 'é' });
    expect(keyEvents(vnc)).toEqual(['+e9', '-e9']);
    expect(logs.join('\n')).toMatch(/cannot manage its keymap .*xmodmap: not found/);
  });

  it('shares one connection, and opens a new one when the desktop changed or the connection dropped', async () => {
    const { vnc, desktop, target } = await setup();
    await desktop.cursor(target);
    await desktop.move(target, { x: 1, y: 1 });
    expect(vnc.connections).toBe(1);
    await desktop.cursor({ ...target, pid: 200 }); // a rollback: new init process
    expect(vnc.connections).toBe(2);
    await vnc.dropClients();
    await desktop.screenshot({ ...target, pid: 200 }, {});
    expect(vnc.connections).toBe(3);
    desktop.forget(target.id);
    await desktop.cursor({ ...target, pid: 200 });
    expect(vnc.connections).toBe(4);
  });

  it('closes an idle session', async () => {
    const { vnc, desktop, target } = await setup(100);
    await desktop.cursor(target);
    await until(() => vnc.openClients === 0, { what: 'the idle session to close' });
    await desktop.cursor(target);
    expect(vnc.connections).toBe(2);
  });

  it('fails with E_HOST when no VNC server answers within the connect timeout', async () => {
    const { vnc, desktop, target } = await setup();
    await vnc.close();
    await expect(desktop.screenshot(target, {})).rejects.toMatchObject({
      code: 'E_HOST',
      message: expect.stringContaining("cannot reach the desktop's VNC server"),
    });
  });

  it('waits for a desktop that is still starting: a refused connection is tried again', async () => {
    const { vnc, desktop, target } = await setup();
    const port = vnc.port;
    await vnc.close();
    const late = new Promise<FakeVnc>((resolve) => setTimeout(() => void FakeVnc.start(64, 48, port).then(resolve), 300));
    const shot = await desktop.screenshot(target, {});
    open.push(await late);
    expect(shot).toMatchObject({ width: 64, height: 48 });
  });

  it('waits for a change, not counting a text cursor blinking', async () => {
    const { vnc, desktop, target } = await setup();
    await desktop.cursor(target);
    const asked = vnc.requests.length;
    let answered = false;
    const waiting = desktop.wait(target, { until: 'changed', timeoutMs: 2000 }).finally(() => (answered = true));
    await until(() => vnc.requests.length > asked, { what: 'the wait to ask for frames' });
    vnc.paint(5, 5, 1, 20, [255, 255, 255]); // a caret
    await holdsFor(100, () => !answered, 'a caret alone leaves the wait waiting');
    vnc.paint(5, 5, 8, 12, [0, 0, 0]); // a glyph
    const r = await waiting;
    expect(r.satisfied).toBe(true);
    expect(r.waitedMs).toBeGreaterThanOrEqual(100);
  });

  it('waits until still, and times out while the screen keeps changing', async () => {
    const { vnc, desktop, target } = await setup();
    await desktop.cursor(target);
    expect(await desktop.wait(target, { until: 'still', timeoutMs: 1000, quietMs: 100 })).toMatchObject({ satisfied: true });
    let colour = 0;
    const busy = setInterval(() => vnc.paint(0, 0, 10, 10, [colour++ & 255, 0, 0]), 30);
    try {
      expect(await desktop.wait(target, { until: 'still', timeoutMs: 400, quietMs: 100 })).toMatchObject({ satisfied: false });
    } finally {
      clearInterval(busy);
    }
    expect(await desktop.wait(target, { until: 'changed', timeoutMs: 100 })).toMatchObject({ satisfied: false });
  });

  it('asks X where the pointer is as a session opens, also after an idle close, and keeps its guess when X cannot say', async () => {
    let at = '1060 600\n';
    const exec: Exec = async (_t, req) => (asksPointer(req.argv) ? { exitCode: 0, stdout: at, stderr: '' } : noXmodmap(_t, req));
    const vnc = await FakeVnc.start(1280, 800);
    const logs: string[] = [];
    const desktop = new DesktopService({ publish: () => undefined, log: (m) => logs.push(m), vncPort: vnc.port, idleMs: 100, exec });
    open.push(vnc, { close: () => desktop.closeAll() });
    const target: DesktopTarget = { id: 'b3', name: 'three', pid: 100, pidStart: 5, address: '127.0.0.1' };
    expect((await desktop.cursor(target)).cursor).toEqual({ x: 1060, y: 600 });
    // A click without a point lands where X has the pointer, not in the middle.
    await desktop.click(target, {});
    expect(vnc.input.filter((e) => e.buttons)).toEqual([{ kind: 'pointer', buttons: 1, x: 1060, y: 600 }]);
    at = '20 30\n';
    await until(() => vnc.openClients === 0, { what: 'the idle session to close' });
    expect((await desktop.cursor(target)).cursor).toEqual({ x: 20, y: 30 });
    expect(vnc.connections).toBe(2);
    at = '99999 1\n'; // off the screen: not believed
    await until(() => vnc.openClients === 0, { what: 'the idle session to close' });
    expect((await desktop.cursor(target)).cursor).toEqual({ x: 640, y: 400 });
    expect(logs.join('\n')).toMatch(/where the pointer is could not be read from X/);
  });

  it('waits for a change since a frame an earlier call answered, also one that came before the wait', async () => {
    const { vnc, desktop, target } = await setup();
    const { frame } = await desktop.cursor(target);
    vnc.paint(0, 0, 10, 10, [1, 2, 3]);
    await desktop.screenshot(target, {}); // the change has arrived
    const r = await desktop.wait(target, { until: 'changed', timeoutMs: 1000, since: frame });
    expect(r).toMatchObject({ satisfied: true, waitedMs: 0 });
    expect(r.frame).not.toBe(frame);
    expect(await desktop.wait(target, { until: 'changed', timeoutMs: 100, since: r.frame })).toMatchObject({ satisfied: false });
    await expect(desktop.wait(target, { until: 'changed', timeoutMs: 100, since: '00000000.1' })).rejects.toMatchObject({
      code: 'E_CONFLICT',
      message: expect.stringContaining('take a screenshot'),
    });
    await expect(desktop.wait(target, { until: 'still', timeoutMs: 100, since: frame })).rejects.toThrow(/since applies only/);
  });

  it('zooms into a region at full resolution, scaled up, and refuses one off the screen or too large', async () => {
    const { vnc, desktop, target } = await setup();
    vnc.paint(10, 10, 1, 1, [255, 0, 0]);
    const zoomed = await desktop.zoom(target, { region: { x: 10, y: 10, width: 4, height: 2 }, width: 16 });
    expect(zoomed).toMatchObject({ width: 16, height: 8, scale: 4, region: { x: 10, y: 10, width: 4, height: 2 } });
    const png = PNG.sync.read(Buffer.from(zoomed.png, 'base64'));
    const rgb = (x: number, y: number) => [...png.data.subarray((y * 16 + x) * 4, (y * 16 + x) * 4 + 3)];
    expect([rgb(0, 0), rgb(3, 3), rgb(4, 0), rgb(0, 4)]).toEqual([
      [255, 0, 0],
      [255, 0, 0],
      [13, 122, 95],
      [13, 122, 95],
    ]);
    await expect(desktop.zoom(target, { region: { x: 60, y: 0, width: 10, height: 10 } })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('reaches past the 64x48 screen'),
    });
    await expect(desktop.zoom(target, { region: { x: 0, y: 0, width: 10, height: 10 }, width: 100 })).rejects.toThrow(/at most 8x/);
    await expect(desktop.zoom(target, { region: { x: 0, y: 0, width: 10, height: 10 }, width: 5 })).rejects.toThrow(/a zoom scales up/);
  });

  it('holds keys for the duration, then releases them in reverse; scrolls with modifiers held', async () => {
    const { vnc, desktop, target } = await setup();
    const started = Date.now();
    await desktop.holdKey(target, { keys: 'shift+a', durationMs: 200 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(keyEvents(vnc)).toEqual(['+ffe1', '+61', '-61', '-ffe1']);
    await desktop.scroll(target, { x: 5, y: 5, dx: 0, dy: 1, modifiers: 'ctrl' });
    expect(keyEvents(vnc).slice(4)).toEqual(['+ffe3', '-ffe3']);
    const wheel = vnc.input.findIndex((e) => e.buttons === 16);
    const ctrlDown = vnc.input.findIndex((e) => e.keysym === 0xffe3 && e.down);
    const ctrlUp = vnc.input.findIndex((e) => e.keysym === 0xffe3 && !e.down);
    expect(ctrlDown < wheel && wheel < ctrlUp).toBe(true);
  });

  it('opens only http(s) addresses, launches detached, and names a program the branch lacks', async () => {
    const argvs: string[][] = [];
    const exec: Exec = async (_t, req) => {
      if (asksPointer(req.argv)) return noXmodmap(_t, req);
      argvs.push(req.argv);
      return req.argv.includes('nosuchprogram')
        ? { exitCode: 127, stdout: '', stderr: "there is no program 'nosuchprogram' in the branch\n" }
        : { exitCode: 0, stdout: '4242\n', stderr: '' };
    };
    const { desktop, target } = await setup(60_000, exec);
    for (const url of ['file:///etc/shadow', 'javascript:alert(1)', 'chrome://settings', 'not a url']) {
      await expect(desktop.openUrl(target, { url }), url).rejects.toMatchObject({ code: 'E_INVALID_PARAMS' });
    }
    await expect(desktop.openUrl(target, { url: 'file:///etc/passwd' })).rejects.toThrow(/only http:\/\/ and https:\/\//);
    expect(argvs).toEqual([]);
    expect(await desktop.openUrl(target, { url: 'http://127.0.0.1:8000/a b' })).toEqual({ url: 'http://127.0.0.1:8000/a%20b' });
    expect(argvs[0]!.slice(-5)).toEqual(['chromium', '--no-sandbox', '--user-data-dir=/root/.config/grove-chromium', '--', 'http://127.0.0.1:8000/a%20b']);
    expect(await desktop.launch(target, { argv: ['mousepad', '/tmp/x'] })).toEqual({ pid: 4242 });
    await expect(desktop.launch(target, { argv: ['nosuchprogram'] })).rejects.toMatchObject({
      code: 'E_NOT_FOUND',
      message: "there is no program 'nosuchprogram' in the branch",
    });
  });

  it('lists the windows from X inside the branch, and refuses a list that is not what X gives', async () => {
    let stdout = JSON.stringify([{ id: '0x400003', title: 'Start', app: 'Chromium', pid: 12, x: 0, y: 0, width: 853, height: 800, focused: true }]);
    const exec: Exec = async (_t, req) => (req.argv[2] === X_WINDOWS_PY ? { exitCode: 0, stdout, stderr: '' } : noXmodmap(_t, req));
    const { desktop, target } = await setup(60_000, exec);
    expect(await desktop.windows(target)).toEqual({
      windows: [expect.objectContaining({ app: 'Chromium', focused: true })],
      screen: { width: 64, height: 48 },
    });
    for (const bad of ['not json', JSON.stringify([{ id: 'x', title: 1 }]), JSON.stringify(Array(300).fill({}))]) {
      stdout = bad;
      await expect(desktop.windows(target)).rejects.toMatchObject({ code: 'E_HOST', message: expect.stringContaining('window list') });
    }
  });
});
