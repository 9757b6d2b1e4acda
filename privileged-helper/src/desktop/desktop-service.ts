// The computer-use API: what an agent sees of a running branch's desktop and
// how it acts on it, over the branch's own VNC server (sessions: session-pool.ts).
// Every call checks its arguments against the screen, waits until the VNC
// server has processed the input it sent (so a following screenshot sees the
// effect as soon as the app has drawn it), and is published as a
// DesktopAction, failed ones included, so a person sees what an agent does.
import { setTimeout as sleep } from 'node:timers/promises';
import type { DesktopAction, DesktopActionKind, MouseButton, Point, PointerState, Region, Screenshot, ScreenSize, WaitResult } from '../protocol/desktop.js';
import { GroveError } from '../protocol/wire.js';
import { crop, encodePng, scaleDown } from './image.js';
import { keysymsOfText, parseKeys, parseModifiers } from './keys.js';
import { BranchKeymap, type RunInside } from './keymap.js';
import type { Rect } from './rfb-protocol.js';
import type { RfbSession } from './rfb-session.js';
import { waitForScreen } from './screen-wait.js';
import { SessionPool } from './session-pool.js';
import { X_POINTER_FREE_PY } from './x-catch-up.js';

/** A running branch's desktop: its VNC server listens on address:5900. */
export interface DesktopTarget {
  id: string;
  name: string;
  /** Its init process (a new pid means a new desktop: a rollback or restart). */
  pid: number;
  pidStart: number | null;
  address: string;
}

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
    this.pool = new SessionPool({ vncPort: o.vncPort ?? 5900, idleMs: o.idleMs ?? 60_000, connectTimeoutMs: o.connectTimeoutMs ?? 10_000, log: o.log });
  }

  screenshot(t: DesktopTarget, p: { region?: Region; scale?: number }): Promise<Screenshot> {
    const part = p.region ? ` of ${p.region.width}x${p.region.height} at ${p.region.x},${p.region.y}` : '';
    const summary = `screenshot${part}${p.scale !== undefined && p.scale !== 1 ? `, scaled ${p.scale}` : ''}`;
    return this.publish(t, 'screenshot', summary, () => this.capture(t, p));
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
    return this.pool.use(
      t,
      async (s) => {
        const region = p.region ?? { x: 0, y: 0, ...s.size };
        checkRegion(region, s.size);
        await s.refresh({ x: region.x, y: region.y, width: 1, height: 1 });
        // crop and scaleDown copy the pixels before the first await, so later updates cannot tear the picture.
        const picture = scaleDown(crop(s.framebuffer, region), p.scale ?? 1);
        const at = new Date().toISOString();
        const png = await encodePng(picture);
        return { png: png.toString('base64'), width: picture.width, height: picture.height, region, screen: s.size, cursor: { ...s.cursor }, at };
      },
      { retry: true },
    );
  }

  cursor(t: DesktopTarget): Promise<PointerState> {
    return this.publish(t, 'cursor', 'where the pointer is', () => this.pool.use(t, async (s) => pointerState(s), { retry: true }));
  }

  move(t: DesktopTarget, p: Point): Promise<PointerState> {
    return this.publish(t, 'move', `move to ${p.x},${p.y}`, () =>
      this.pool.input(t, async (s) => {
        checkPoint(p, s.size);
        s.pointer(p.x, p.y, s.buttons);
        return settled(s);
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
        s.pointer(at.x, at.y, s.buttons);
        for (const k of modifiers) s.key(k, true);
        for (let i = 0; i < count; i++) {
          s.pointer(at.x, at.y, s.buttons | BUTTON_BIT[button]);
          s.pointer(at.x, at.y, s.buttons & ~BUTTON_BIT[button]);
        }
        for (const k of modifiers.toReversed()) s.key(k, false);
        this.buttonsSent.add(t.id);
        return settled(s);
      });
    });
  }

  button(t: DesktopTarget, p: At & { button?: MouseButton; action: 'down' | 'up' }): Promise<PointerState> {
    const button = p.button ?? 'left';
    return this.publish(t, 'button', `${p.action === 'down' ? 'press' : 'release'} ${button}${atWords(p)}`, () =>
      this.pool.input(t, async (s) => {
        const at = pointOrCursor(p, s);
        const bit = BUTTON_BIT[button];
        s.pointer(at.x, at.y, p.action === 'down' ? s.buttons | bit : s.buttons & ~bit);
        this.buttonsSent.add(t.id);
        return settled(s);
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
        s.pointer(p.from.x, p.from.y, s.buttons);
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
        return settled(s);
      }),
    );
  }

  scroll(t: DesktopTarget, p: At & { dx: number; dy: number }): Promise<PointerState> {
    const words = [p.dy && `${p.dy > 0 ? 'down' : 'up'} ${Math.abs(p.dy)}`, p.dx && `${p.dx > 0 ? 'right' : 'left'} ${Math.abs(p.dx)}`].filter(Boolean);
    return this.publish(t, 'scroll', `scroll ${words.join(', ') || 'by nothing'}${atWords(p)}`, () =>
      this.pool.input(t, async (s) => {
        const at = pointOrCursor(p, s);
        s.pointer(at.x, at.y, s.buttons);
        const turns = [
          ...Array<number>(Math.abs(p.dy)).fill(p.dy > 0 ? WHEEL.down : WHEEL.up),
          ...Array<number>(Math.abs(p.dx)).fill(p.dx > 0 ? WHEEL.right : WHEEL.left),
        ];
        for (const [i, wheel] of turns.entries()) {
          if (i > 0) await sleep(WHEEL_NOTCH_MS);
          s.pointer(at.x, at.y, s.buttons | wheel);
          s.pointer(at.x, at.y, s.buttons & ~wheel);
        }
        this.buttonsSent.add(t.id);
        return settled(s);
      }),
    );
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
        for (const combo of combos) {
          for (const k of combo.keysyms) s.key(k, true);
          for (const k of combo.keysyms.toReversed()) s.key(k, false);
          // Each combo is handled before the next is sent: e.g. the focus a shortcut moves has moved.
          await s.sync();
        }
        return pointerState(s);
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
        return pointerState(s);
      });
    });
  }

  wait(t: DesktopTarget, p: { until: 'still' | 'changed'; timeoutMs: number; quietMs?: number }): Promise<WaitResult> {
    const quietMs = p.quietMs ?? DEFAULT_QUIET_MS;
    const condition = p.until === 'still' ? `still for ${quietMs} ms` : 'the screen changes';
    return this.publish(t, 'wait', `wait until ${condition}, at most ${p.timeoutMs} ms`, () => {
      if (p.until === 'changed' && p.quietMs !== undefined) throw new GroveError('E_INVALID_PARAMS', "quietMs applies only to until: 'still'");
      if (p.until === 'still' && quietMs > p.timeoutMs) {
        throw new GroveError('E_INVALID_PARAMS', `quietMs (${quietMs}) is longer than timeoutMs (${p.timeoutMs}): the wait could never be satisfied`);
      }
      return this.pool.use(t, (s) => waitForScreen(s, p.until, quietMs, p.timeoutMs));
    });
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

  private inBranch(t: DesktopTarget, argv: string[]) {
    return this.o.exec(t, { argv, env: { DISPLAY }, timeoutMs: IN_BRANCH_TIMEOUT_MS });
  }

  /** The branch's keymap, managed with xmodmap inside it (keymap.ts). */
  private keymap(t: DesktopTarget): BranchKeymap {
    const run: RunInside = (argv) => this.inBranch(t, argv);
    let given = this.keycodesGiven.get(t.id);
    if (!given) this.keycodesGiven.set(t.id, (given = { keycodes: new Set() }));
    return new BranchKeymap(run, (msg) => this.o.log(`desktop ${t.name}: ${msg}`), given);
  }

  /** Runs the call and publishes it, whatever the outcome. */
  private async publish<T extends PointerState | Screenshot | WaitResult>(
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
      this.o.publish({ ...event, summary: done, cursor, screen: result.screen, ok: true, at: new Date().toISOString() });
      return result;
    } catch (e) {
      this.o.publish({ ...event, summary: `${summary}: ${(e as Error).message}`, cursor: null, screen: null, ok: false, at: new Date().toISOString() });
      throw e;
    }
  }
}

function pointerState(s: RfbSession): PointerState {
  return { cursor: { ...s.cursor }, screen: s.size };
}

/** After the server has processed the input sent: where the pointer is now. */
async function settled(s: RfbSession): Promise<PointerState> {
  await s.sync();
  return pointerState(s);
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
