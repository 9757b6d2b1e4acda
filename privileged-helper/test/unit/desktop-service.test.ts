import { setTimeout as sleep } from 'node:timers/promises';
import { PNG } from 'pngjs';
import { afterEach, describe, expect, it } from 'vitest';
import { DesktopService, type DesktopOptions, type DesktopTarget } from '../../src/desktop/desktop-service.js';
import type { DesktopAction } from '../../src/protocol/desktop.js';
import { X_CATCH_UP_PY, X_POINTER_FREE_PY } from '../../src/desktop/x-catch-up.js';
import { FakeVnc } from './desktop-fake-vnc.js';

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
    expect(state).toEqual({ cursor: { x: 3, y: 4 }, screen: { width: 64, height: 48 } });
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
      calls.push(req);
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
      calls.push(req.argv);
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
    vnc.dropClients();
    await sleep(50);
    await desktop.screenshot({ ...target, pid: 200 }, {});
    expect(vnc.connections).toBe(3);
    desktop.forget(target.id);
    await desktop.cursor({ ...target, pid: 200 });
    expect(vnc.connections).toBe(4);
  });

  it('closes an idle session', async () => {
    const { vnc, desktop, target } = await setup(100);
    await desktop.cursor(target);
    await sleep(300);
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
    const waiting = desktop.wait(target, { until: 'changed', timeoutMs: 2000 });
    await sleep(50);
    vnc.paint(5, 5, 1, 20, [255, 255, 255]); // a caret
    await sleep(100);
    vnc.paint(5, 5, 8, 12, [0, 0, 0]); // a glyph
    const r = await waiting;
    expect(r.satisfied).toBe(true);
    expect(r.waitedMs).toBeGreaterThanOrEqual(140);
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
});
