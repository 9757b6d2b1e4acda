// The computer-use API: what an agent sees of a running branch's desktop and
// how it acts on it, over the branch's own VNC server (sessions: session-pool.ts).
// Every call checks its arguments against the screen, waits until the VNC
// server has processed the input it sent (so a following screenshot sees the
// effect as soon as the app has drawn it), and is published as a
// DesktopAction, failed ones included, so a person sees what an agent does.
import { setTimeout as sleep } from 'node:timers/promises';
import {
  MAX_ZOOM_FACTOR,
  MAX_ZOOM_SIDE,
  WindowList,
  type DesktopAction,
  type DesktopActionKind,
  type FrameToken,
  type MouseButton,
  type Point,
  type PointerState,
  type Region,
  type Screenshot,
  type ScreenSize,
  type WaitResult,
} from '../protocol/desktop.js';
import { GroveError } from '../protocol/wire.js';
import { crop, encodePng, scaleDown, scaledSize, scaleUp } from './image.js';
import { keysymsOfText, parseKeys, parseModifiers } from './keys.js';
import { BranchKeymap, type RunInside } from './keymap.js';
import type { Rect } from './rfb-protocol.js';
import type { RfbSession } from './rfb-session.js';
import { countFrames, frameOf, waitForScreen } from './screen-wait.js';
import { SessionPool, type DesktopTarget } from './session-pool.js';
import { X_POINTER_FREE_PY } from './x-catch-up.js';
import { X_POINTER_PY, X_WINDOWS_PY } from './x-queries.js';

export interface DesktopOptions {
  publish(action: DesktopAction): void;
  log(msg: string): void;
  /**
   * Runs a command inside the branch (the helper's exec service), so that
   * typing characters the keyboard layout lacks never runs out of keycodes
   * (keymap.ts); when it fails, Xvnc adds them itself while it has room.
   */
  exec(
    t: DesktopTarget,
    req: { argv: string[]; env: Record<string, string>; timeoutMs: number },
  ): Promise<{ exitCode: number; stdout: string; stderr: string }>;
  vncPort?: number;
  /** A branch's session is closed after this long without calls. */
  idleMs?: number;
  connectTimeoutMs?: number;
}

/** RFB button mask bits: 1 left, 2 middle, 3 right; wheel buttons 4 up, 5 down, 6 left, 7 right. */
const BUTTON_BIT: Record<MouseButton, number> = { left: 1, middle: 2, right: 4 };
const WHEEL = { up: 8, down: 16, left: 32, right: 64 };
/** Between two wheel notches: Chromium loses some of a burst of notches sent back to back, none paced like a real wheel. */
const WHEEL_NOTCH_MS = 5;
const CLICK_WORDS = ['', '', 'double ', 'triple '];
const DEFAULT_QUIET_MS = 500;
/** Characters typed between two waits for the server: bounds what Xvnc and the app have queued. */
const TYPE_BATCH = 64;
/** A drag moves in steps this far apart (px), between these bounds, one every DRAG_STEP_MS, like a hand would. */
const DRAG_STEP_PX = 20;
const DRAG_STEPS = { min: 5, max: 25 };
const DRAG_STEP_MS = 10;
/** The desktop's X display inside the branch (session.sh starts Xvnc on :0). */
const DISPLAY = ':0';
const IN_BRANCH_TIMEOUT_MS = 10_000;
/** The most keys wait for a click before them to reach the app, in seconds. */
const POINTER_FREE_S = 5;
/**
 * The branch's browser with the profile its session runs (image/desktop/session.sh): started again, it hands
 * the address to the running one and ends; with none running, it is the browser. As root it starts only
 * without its sandbox, as the session's does.
 */
const BROWSER = ['chromium', '--no-sandbox', '--user-data-dir=/root/.config/grove-chromium'];
/**
 * Starts "$@" detached in the branch (its own session, no stdio kept: it
 * outlives the call) and prints its pid; a program that is not there exits
 * 127 with a sentence instead.
 */
const LAUNCH_SH = `command -v -- "$1" >/dev/null 2>&1 || { echo "there is no program '$1' in the branch" >&2; exit 127; }
setsid "$@" </dev/null >/dev/null 2>&1 &
echo $!`;

type At = { x?: number; y?: number };

export class DesktopService {
  private readonly pool: SessionPool;
  /**
   * Branches whose last input pressed a mouse button, which the window
   * manager may still hold back from the app (x-catch-up.ts, X_POINTER_FREE_PY):
   * keys wait for it.
   */
  private readonly buttonsSent = new Set<string>();
  /** Per branch: the keycodes its last keymap change gave (BranchKeymap). */
  private readonly keycodesGiven = new Map<string, { keycodes: ReadonlySet<number> }>();

  constructor(private readonly o: DesktopOptions) {
    this.pool = new SessionPool({
      vncPort: o.vncPort ?? 5900,
      idleMs: o.idleMs ?? 60_000,
      connectTimeoutMs: o.connectTimeoutMs ?? 10_000,
      log: o.log,
      opened: (t, s) => this.sessionOpened(t, s),
    });
  }

  screenshot(t: DesktopTarget, p: { region?: Region; scale?: number }): Promise<Screenshot> {
    const part = p.region ? ` of ${p.region.width}x${p.region.height} at ${p.region.x},${p.region.y}` : '';
    const summary = `screenshot${part}${p.scale !== undefined && p.scale !== 1 ? `, scaled ${p.scale}` : ''}`;
    return this.publish(t, 'screenshot', summary, () => this.capture(t, p));
  }

  /** A region at the screen's own resolution, scaled up to `width` pixels across (default: as it is). */
  zoom(t: DesktopTarget, p: { region: Region; width?: number }): Promise<Screenshot> {
    const r = p.region;
    const width = p.width ?? r.width;
    return this.publish(t, 'zoom', `zoom into ${r.width}x${r.height} at ${r.x},${r.y}, ${width} px wide`, () => {
      const scale = width / r.width;
      const out = scaledSize(r.width, r.height, scale);
      if (scale < 1)
        throw new GroveError('E_INVALID_PARAMS', `width ${width} is less than the region's ${r.width}: a zoom scales up; a screenshot with scale scales down`);
      if (scale > MAX_ZOOM_FACTOR || Math.max(out.width, out.height) > MAX_ZOOM_SIDE) {
        throw new GroveError(
          'E_INVALID_PARAMS',
          `a zoom of ${r.width}x${r.height} to ${out.width}x${out.height} is too large: at most ${MAX_ZOOM_FACTOR}x and ${MAX_ZOOM_SIDE} px a side`,
        );
      }
      return this.capture(t, { region: r, scale });
    });
  }

  /**
   * The whole screen scaled to `width` pixels across, as a data: URL, for the
   * helper's own use (a request's preview): not an agent's action, so not published.
   */
  async thumbnail(t: DesktopTarget, width: number): Promise<string> {
    const size = await this.pool.use(t, async (s) => s.size, { retry: true });
    const shot = await this.capture(t, { scale: Math.min(1, width / size.width) });
    return `data:image/png;base64,${shot.png}`;
  }

  private capture(t: DesktopTarget, p: { region?: Region; scale?: number }): Promise<Screenshot> {
    const scale = p.scale ?? 1;
    return this.pool.use(
      t,
      async (s) => {
        const region = p.region ?? { x: 0, y: 0, ...s.size };
        checkRegion(region, s.size);
        await s.refresh({ x: region.x, y: region.y, width: 1, height: 1 });
        // crop and the scaling copy the pixels before the first await, so later updates cannot tear the picture.
        const part = crop(s.framebuffer, region);
        const picture = scale > 1 ? scaleUp(part, scale) : scaleDown(part, scale);
        const taken = { region, scale, screen: s.size, cursor: { ...s.cursor }, frame: frameOf(s), at: new Date().toISOString() };
        const png = await encodePng(picture);
        return { png: png.toString('base64'), width: picture.width, height: picture.height, ...taken };
      },
      { retry: true },
    );
  }

  cursor(t: DesktopTarget): Promise<PointerState> {
    return this.publish(t, 'cursor', 'where the pointer is', () => this.pool.use(t, async (s) => pointerState(s, frameOf(s)), { retry: true }));
  }

  move(t: DesktopTarget, p: Point): Promise<PointerState> {
    return this.publish(t, 'move', `move to ${p.x},${p.y}`, () =>
      this.pool.input(t, async (s) => {
        checkPoint(p, s.size);
        const frame = frameOf(s);
        s.pointer(p.x, p.y, s.buttons);
        return settled(s, frame);
      }),
    );
  }

  click(t: DesktopTarget, p: At & { button?: MouseButton; count?: number; modifiers?: string }): Promise<PointerState> {
    const button = p.button ?? 'left';
    const count = p.count ?? 1;
    const held = p.modifiers ? ` with ${p.modifiers}` : '';
    return this.publish(t, 'click', `${CLICK_WORDS[count] ?? ''}click ${button}${held}${atWords(p)}`, () => {
      const modifiers = p.modifiers ? parseModifiers(p.modifiers) : [];
      return this.pool.input(t, async (s) => {
        const at = pointOrCursor(p, s);
        const frame = await pointerThere(s, at);
        for (const k of modifiers) s.key(k, true);
        for (let i = 0; i < count; i++) {
          s.pointer(at.x, at.y, s.buttons | BUTTON_BIT[button]);
          s.pointer(at.x, at.y, s.buttons & ~BUTTON_BIT[button]);
        }
        for (const k of modifiers.toReversed()) s.key(k, false);
        this.buttonsSent.add(t.id);
        return settled(s, frame);
      });
    });
  }

  button(t: DesktopTarget, p: At & { button?: MouseButton; action: 'down' | 'up' }): Promise<PointerState> {
    const button = p.button ?? 'left';
    return this.publish(t, 'button', `${p.action === 'down' ? 'press' : 'release'} ${button}${atWords(p)}`, () =>
      this.pool.input(t, async (s) => {
        const at = pointOrCursor(p, s);
        const frame = await pointerThere(s, at);
        const bit = BUTTON_BIT[button];
        s.pointer(at.x, at.y, p.action === 'down' ? s.buttons | bit : s.buttons & ~bit);
        this.buttonsSent.add(t.id);
        return settled(s, frame);
      }),
    );
  }

  drag(t: DesktopTarget, p: { from: Point; to: Point; button?: MouseButton }): Promise<PointerState> {
    const button = p.button ?? 'left';
    return this.publish(t, 'drag', `drag ${button} from ${p.from.x},${p.from.y} to ${p.to.x},${p.to.y}`, () =>
      this.pool.input(t, async (s) => {
        checkPoint(p.from, s.size);
        checkPoint(p.to, s.size);
        const bit = BUTTON_BIT[button];
        const frame = await pointerThere(s, p.from);
        s.pointer(p.from.x, p.from.y, s.buttons | bit);
        await s.sync();
        const distance = Math.hypot(p.to.x - p.from.x, p.to.y - p.from.y);
        const steps = Math.min(DRAG_STEPS.max, Math.max(DRAG_STEPS.min, Math.round(distance / DRAG_STEP_PX)));
        for (let i = 1; i <= steps; i++) {
          await sleep(DRAG_STEP_MS);
          s.pointer(Math.round(p.from.x + ((p.to.x - p.from.x) * i) / steps), Math.round(p.from.y + ((p.to.y - p.from.y) * i) / steps), s.buttons);
        }
        s.pointer(p.to.x, p.to.y, s.buttons & ~bit);
        this.buttonsSent.add(t.id);
        return settled(s, frame);
      }),
    );
  }

  scroll(t: DesktopTarget, p: At & { dx: number; dy: number; modifiers?: string }): Promise<PointerState> {
    const words = [p.dy && `${p.dy > 0 ? 'down' : 'up'} ${Math.abs(p.dy)}`, p.dx && `${p.dx > 0 ? 'right' : 'left'} ${Math.abs(p.dx)}`].filter(Boolean);
    const held = p.modifiers ? ` with ${p.modifiers}` : '';
    return this.publish(t, 'scroll', `scroll ${words.join(', ') || 'by nothing'}${held}${atWords(p)}`, () => {
      const modifiers = p.modifiers ? parseModifiers(p.modifiers) : [];
      return this.pool.input(t, async (s) => {
        const at = pointOrCursor(p, s);
        const frame = await pointerThere(s, at);
        for (const k of modifiers) s.key(k, true);
        const turns = [
          ...Array<number>(Math.abs(p.dy)).fill(p.dy > 0 ? WHEEL.down : WHEEL.up),
          ...Array<number>(Math.abs(p.dx)).fill(p.dx > 0 ? WHEEL.right : WHEEL.left),
        ];
        for (const [i, wheel] of turns.entries()) {
          if (i > 0) await sleep(WHEEL_NOTCH_MS);
          s.pointer(at.x, at.y, s.buttons | wheel);
          s.pointer(at.x, at.y, s.buttons & ~wheel);
        }
        for (const k of modifiers.toReversed()) s.key(k, false);
        this.buttonsSent.add(t.id);
        return settled(s, frame);
      });
    });
  }

  key(t: DesktopTarget, p: { keys: string }): Promise<PointerState> {
    return this.publish(t, 'key', `key ${p.keys.trim()}`, () => {
      const combos = parseKeys(p.keys);
      return this.pool.input(t, async (s) => {
        await this.clickDelivered(t);
        const keymap = this.keymap(t);
        const segments = await keymap.segments(combos.flatMap((c) => c.keysyms));
        if (segments.length > 1) throw new GroveError('E_INVALID_PARAMS', 'too many different characters in one key call: type text with type');
        await keymap.prepare(segments[0]!, true);
        const frame = frameOf(s);
        for (const combo of combos) {
          for (const k of combo.keysyms) s.key(k, true);
          for (const k of combo.keysyms.toReversed()) s.key(k, false);
          // Each combo is handled before the next is sent: e.g. the focus a shortcut moves has moved.
          await s.sync();
        }
        return pointerState(s, frame);
      });
    });
  }

  /** Presses the keys in order, holds them for durationMs, and releases them in reverse. */
  holdKey(t: DesktopTarget, p: { keys: string; durationMs: number }): Promise<PointerState> {
    return this.publish(t, 'hold_key', `hold ${p.keys.trim()} for ${p.durationMs} ms`, () => {
      const keysyms = parseKeys(p.keys).flatMap((c) => c.keysyms);
      return this.pool.input(t, async (s) => {
        await this.clickDelivered(t);
        const keymap = this.keymap(t);
        const segments = await keymap.segments(keysyms);
        if (segments.length > 1) throw new GroveError('E_INVALID_PARAMS', 'too many different characters held at once');
        await keymap.prepare(segments[0]!, true);
        const frame = frameOf(s);
        for (const k of keysyms) s.key(k, true);
        try {
          await s.sync();
          await sleep(p.durationMs);
        } finally {
          // Released whatever happened meanwhile: a key left down would repeat in the app (a broken session releases them itself).
          if (!s.closed) for (const k of keysyms.toReversed()) s.key(k, false);
        }
        return settled(s, frame);
      });
    });
  }

  type(t: DesktopTarget, p: { text: string }): Promise<PointerState> {
    const characters = [...p.text].length;
    return this.publish(t, 'type', `type ${characters} character${characters === 1 ? '' : 's'}`, () => {
      const keysyms = keysymsOfText(p.text);
      return this.pool.input(t, async (s) => {
        await this.clickDelivered(t);
        const keymap = this.keymap(t);
        const segments = await keymap.segments(keysyms);
        const frame = frameOf(s);
        for (const [n, segment] of segments.entries()) {
          await keymap.prepare(segment, n === 0);
          for (let i = 0; i < segment.keysyms.length; i += TYPE_BATCH) {
            for (const k of segment.keysyms.slice(i, i + TYPE_BATCH)) {
              s.key(k, true);
              s.key(k, false);
            }
            await s.sync();
          }
        }
        return pointerState(s, frame);
      });
    });
  }

  wait(t: DesktopTarget, p: { until: 'still' | 'changed'; timeoutMs: number; quietMs?: number; since?: FrameToken }): Promise<WaitResult> {
    const quietMs = p.quietMs ?? DEFAULT_QUIET_MS;
    const condition = p.until === 'still' ? `still for ${quietMs} ms` : `the screen changes${p.since ? ` after frame ${p.since}` : ''}`;
    return this.publish(t, 'wait', `wait until ${condition}, at most ${p.timeoutMs} ms`, () => {
      if (p.until === 'changed' && p.quietMs !== undefined) throw new GroveError('E_INVALID_PARAMS', "quietMs applies only to until: 'still'");
      if (p.until === 'still' && p.since !== undefined) throw new GroveError('E_INVALID_PARAMS', "since applies only to until: 'changed'");
      if (p.until === 'still' && quietMs > p.timeoutMs) {
        throw new GroveError('E_INVALID_PARAMS', `quietMs (${quietMs}) is longer than timeoutMs (${p.timeoutMs}): the wait could never be satisfied`);
      }
      return this.pool.use(t, (s) => waitForScreen(s, { until: p.until, quietMs, timeoutMs: p.timeoutMs, since: p.since }));
    });
  }

  /** The window manager's windows, read from X inside the branch. */
  windows(t: DesktopTarget): Promise<WindowList> {
    return this.publish(t, 'windows', 'list the windows', async () => {
      const screen = await this.pool.use(t, async (s) => s.size, { retry: true });
      const res = await this.inBranch(t, ['python3', '-c', X_WINDOWS_PY]);
      if (res.exitCode !== 0) throw new GroveError('E_HOST', `could not list the branch's windows: ${oneLine(res.stderr || res.stdout)}`);
      const listed = WindowList.safeParse({ windows: parseJson(res.stdout), screen });
      if (!listed.success) throw new GroveError('E_HOST', `the branch's window list is not what X gives: ${oneLine(listed.error.message)}`);
      return listed.data;
    });
  }

  /** Opens an http(s) address in a new tab of the branch's browser. */
  openUrl(t: DesktopTarget, p: { url: string }): Promise<{ url: string }> {
    return this.publish(t, 'open_url', `open ${p.url.slice(0, 200)}`, async () => {
      const url = webAddress(p.url);
      // '--' ends the browser's options: nothing in the address is read as one.
      await this.startDetached(t, [...BROWSER, '--', url]);
      return { url };
    });
  }

  /** Starts a program in the branch's desktop session, detached; a program the branch does not have is refused with its name. */
  launch(t: DesktopTarget, p: { argv: string[] }): Promise<{ pid: number }> {
    return this.publish(t, 'launch', `launch ${p.argv.join(' ').slice(0, 200)}`, async () => ({ pid: await this.startDetached(t, p.argv) }));
  }

  /** The branch stopped, was rolled back or removed: drop its session. */
  forget(branchId: string): void {
    this.pool.forget(branchId);
    this.keycodesGiven.delete(branchId);
    this.buttonsSent.delete(branchId);
  }

  closeAll(): Promise<void> {
    return this.pool.closeAll();
  }

  /** Before keys: a click sent before them has reached the app (the window manager let it through). */
  private async clickDelivered(t: DesktopTarget): Promise<void> {
    if (!this.buttonsSent.delete(t.id)) return;
    const res = await this.inBranch(t, ['python3', '-c', X_POINTER_FREE_PY, String(POINTER_FREE_S)]);
    if (res.exitCode !== 0 || /still grabbed/.test(res.stdout))
      this.o.log(`desktop ${t.name}: keys may reach the app before the click before them (${res.stdout.trim() || res.stderr.trim()})`);
  }

  /** Runs argv detached in the branch (LAUNCH_SH); resolves to its pid there. */
  private async startDetached(t: DesktopTarget, argv: string[]): Promise<number> {
    const res = await this.inBranch(t, ['sh', '-c', LAUNCH_SH, 'launch', ...argv]);
    if (res.exitCode === 127) throw new GroveError('E_NOT_FOUND', oneLine(res.stderr));
    const pid = Number(res.stdout.trim());
    if (res.exitCode !== 0 || !Number.isSafeInteger(pid) || pid <= 0)
      throw new GroveError('E_HOST', `could not start ${argv[0]}: ${oneLine(res.stderr || res.stdout) || `exit code ${res.exitCode}`}`);
    return pid;
  }

  private inBranch(t: DesktopTarget, argv: string[]) {
    return this.o.exec(t, { argv, env: { DISPLAY }, timeoutMs: IN_BRANCH_TIMEOUT_MS });
  }

  /**
   * A new session learns where the pointer is from X: after a fork, a
   * rollback, a restore or a session closed for idling, it is wherever it was
   * left, not where a fresh Xvnc starts it.
   */
  private async sessionOpened(t: DesktopTarget, s: RfbSession): Promise<void> {
    countFrames(s);
    const res = await this.inBranch(t, ['python3', '-c', X_POINTER_PY]).catch((e: Error) => ({ exitCode: -1, stdout: '', stderr: e.message }));
    const m = /^(\d{1,5}) (\d{1,5})\n?$/.exec(res.stdout);
    const at = m ? { x: Number(m[1]), y: Number(m[2]) } : null;
    if (res.exitCode === 0 && at && at.x < s.size.width && at.y < s.size.height) s.cursor = at;
    else
      this.o.log(
        `desktop ${t.name}: where the pointer is could not be read from X (${oneLine(res.stderr || res.stdout) || `exit code ${res.exitCode}`}); taking ${s.cursor.x},${s.cursor.y}`,
      );
  }

  /** The branch's keymap, managed with xmodmap inside it (keymap.ts). */
  private keymap(t: DesktopTarget): BranchKeymap {
    const run: RunInside = (argv) => this.inBranch(t, argv);
    let given = this.keycodesGiven.get(t.id);
    if (!given) this.keycodesGiven.set(t.id, (given = { keycodes: new Set() }));
    return new BranchKeymap(run, (msg) => this.o.log(`desktop ${t.name}: ${msg}`), given);
  }

  /** Runs the call and publishes it, whatever the outcome. */
  private async publish<T extends PointerState | Screenshot | WaitResult | WindowList | { url: string } | { pid: number }>(
    t: DesktopTarget,
    action: DesktopActionKind,
    summary: string,
    call: () => Promise<T>,
  ): Promise<T> {
    const touchesPointer = ['move', 'click', 'button', 'drag', 'scroll'].includes(action);
    const event = { workspace: t.id, workspaceName: t.name, action };
    try {
      const result = await call();
      const cursor = touchesPointer && 'cursor' in result ? result.cursor : null;
      const done = 'satisfied' in result ? `${summary}: ${result.satisfied ? 'done' : 'timed out'} after ${Math.round(result.waitedMs)} ms` : summary;
      const screen = 'screen' in result ? result.screen : null;
      this.o.publish({ ...event, summary: done, cursor, screen, ok: true, at: new Date().toISOString() });
      return result;
    } catch (e) {
      this.o.publish({ ...event, summary: `${summary}: ${(e as Error).message}`, cursor: null, screen: null, ok: false, at: new Date().toISOString() });
      throw e;
    }
  }
}

function pointerState(s: RfbSession, frame: FrameToken): PointerState {
  return { cursor: { ...s.cursor }, screen: s.size, frame };
}

/** After the server has processed the input sent: where the pointer is now, and the screen before the action. */
async function settled(s: RfbSession, frame: FrameToken): Promise<PointerState> {
  await s.sync();
  return pointerState(s, frame);
}

/**
 * Puts the pointer at `at` if it is elsewhere, and waits until the screen
 * shows it there (Xvnc draws the pointer into the picture): the frame then is
 * the screen before what the action does, its own pointer move aside.
 */
async function pointerThere(s: RfbSession, at: Point): Promise<FrameToken> {
  if (s.cursor.x !== at.x || s.cursor.y !== at.y) {
    s.pointer(at.x, at.y, s.buttons);
    await s.refresh({ ...at, width: 1, height: 1 });
  }
  return frameOf(s);
}

/** Only http and https: never a file of the host, nor the browser's own pages or scripts. */
function webAddress(text: string): string {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new GroveError('E_INVALID_PARAMS', `'${text.slice(0, 200)}' is not an address: give a whole one, e.g. https://example.org/`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    const why = url.protocol === 'file:' ? ': to show a file, copy it into the branch (upload) and serve it there' : '';
    throw new GroveError('E_INVALID_PARAMS', `only http:// and https:// addresses are opened, not ${url.protocol}//${why}`);
  }
  return url.href;
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text.slice(0, 200);
  }
}

function oneLine(text: string): string {
  return text.trim().replace(/\s+/g, ' ').slice(0, 500);
}

function atWords(p: At): string {
  return p.x !== undefined && p.y !== undefined ? ` at ${p.x},${p.y}` : '';
}

/** The point given, or the pointer's position when neither coordinate is. */
function pointOrCursor(p: At, s: RfbSession): Point {
  if (p.x === undefined && p.y === undefined) return { ...s.cursor };
  if (p.x === undefined || p.y === undefined) throw new GroveError('E_INVALID_PARAMS', 'give both x and y, or neither (the pointer stays where it is)');
  const point = { x: p.x, y: p.y };
  checkPoint(point, s.size);
  return point;
}

function checkPoint(p: Point, screen: ScreenSize): void {
  if (p.x >= screen.width || p.y >= screen.height) {
    throw new GroveError(
      'E_INVALID_PARAMS',
      `${p.x},${p.y} is off the screen: it is ${screen.width}x${screen.height}, so x is 0-${screen.width - 1} and y 0-${screen.height - 1}`,
    );
  }
}

function checkRegion(r: Rect, screen: ScreenSize): void {
  if (r.x + r.width > screen.width || r.y + r.height > screen.height) {
    throw new GroveError('E_INVALID_PARAMS', `region ${r.width}x${r.height} at ${r.x},${r.y} reaches past the ${screen.width}x${screen.height} screen`);
  }
}
