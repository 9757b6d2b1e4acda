// The computer-use vocabulary agents already speak (the actions and fields of
// Anthropic's computer-use tool) mapped onto the helper's desktop.* methods,
// and the helper's answers put back into short words. Pure: no I/O, so the
// mapping is unit-tested on its own.
import { z } from 'zod';
import { GroveError } from '../helper-client/client.js';
import {
  FrameToken,
  MAX_HOLD_MS,
  MAX_TYPED_CHARS,
  MAX_ZOOM_SIDE,
  Region,
  type MouseButton,
  type PointerState,
  type Screenshot,
  type WaitResult,
} from '../../../privileged-helper/src/protocol/desktop.js';
import type { MethodName, Params } from '../../../privileged-helper/src/protocol/methods.js';
import { Branch } from './inputs.js';

export const COMPUTER_ACTIONS = [
  'screenshot',
  'left_click',
  'right_click',
  'middle_click',
  'double_click',
  'triple_click',
  'mouse_move',
  'left_click_drag',
  'left_mouse_down',
  'left_mouse_up',
  'scroll',
  'key',
  'hold_key',
  'type',
  'zoom',
  'wait',
  'wait_still',
  'wait_changed',
  'cursor_position',
] as const;
export type ComputerAction = (typeof COMPUTER_ACTIONS)[number];

const Coordinate = z.array(z.number().int().min(0).max(16383)).length(2);

/** How long `wait_still` and `wait_changed` wait at most when no duration is given, and any wait at the very most (seconds). */
export const WAIT_DEFAULT_S = 5;
export const WAIT_MAX_S = 60;
/** How long a plain `wait` pauses when no duration is given (seconds). */
export const PAUSE_DEFAULT_S = 1;
/** The screen counts as still after this long without a change. */
const STILL_MS = 500;
const DEFAULT_SCROLL_NOTCHES = 3;

export const computerInput = {
  branch: Branch,
  action: z.enum(COMPUTER_ACTIONS).describe("what to do on the branch's desktop"),
  coordinate: Coordinate.optional().describe(
    '[x, y] in screen pixels from the top-left corner: where to click, press, release, move to, scroll, or end a drag. Clicks, presses and scrolls default to where the pointer is',
  ),
  start_coordinate: Coordinate.optional().describe('left_click_drag: [x, y] where the drag starts'),
  text: z
    .string()
    .min(1)
    .optional()
    .describe(
      'key: the key combo, e.g. "ctrl+l", "Return", "alt+F4" (several separated by spaces are pressed in turn); hold_key: the keys to hold; type: the text to type; clicks and scroll: keys held meanwhile, e.g. "shift" or "ctrl+alt"',
    ),
  scroll_direction: z.enum(['up', 'down', 'left', 'right']).optional().describe('scroll: which way'),
  scroll_amount: z.number().int().min(1).max(50).optional().describe(`scroll: how many wheel notches (default ${DEFAULT_SCROLL_NOTCHES})`),
  duration: z
    .number()
    .positive()
    .max(WAIT_MAX_S)
    .optional()
    .describe(
      `seconds. wait: pause this long (default ${PAUSE_DEFAULT_S}); wait_still / wait_changed: at most this long (default ${WAIT_DEFAULT_S}); hold_key: how long to hold the keys (at most ${MAX_HOLD_MS / 1000})`,
    ),
  region: Region.optional().describe('screenshot and zoom: this part of the screen, {x, y, width, height} in screen pixels'),
  scale: z.number().gt(0).max(1).optional().describe('screenshot: scale the picture down by this factor (0 < scale ≤ 1)'),
  width: z
    .number()
    .int()
    .min(1)
    .max(MAX_ZOOM_SIDE)
    .optional()
    .describe("zoom: the picture's width in pixels, the region scaled up to it (default: the region's own width, at the screen's resolution)"),
  since: FrameToken.optional().describe(
    'wait_changed: the frame a screenshot or an action answered; any change after it counts, also one before this call (default: the frame of your last action on this branch)',
  ),
};

type Field = Exclude<keyof typeof computerInput, 'branch' | 'action'>;
const ALL_FIELDS = Object.keys(computerInput).filter((k) => k !== 'branch' && k !== 'action') as Field[];
export type ComputerArgs = z.infer<z.ZodObject<typeof computerInput>>;

const CLICKS = {
  left_click: { button: 'left', count: 1 },
  right_click: { button: 'right', count: 1 },
  middle_click: { button: 'middle', count: 1 },
  double_click: { button: 'left', count: 2 },
  triple_click: { button: 'left', count: 3 },
} as const satisfies Partial<Record<ComputerAction, { button: MouseButton; count: number }>>;

/** The fields each action takes; any other one given is a mistake worth telling the model about. */
const FIELDS: Record<ComputerAction, { required: Field[]; optional: Field[] }> = {
  screenshot: { required: [], optional: ['region', 'scale'] },
  left_click: { required: [], optional: ['coordinate', 'text'] },
  right_click: { required: [], optional: ['coordinate', 'text'] },
  middle_click: { required: [], optional: ['coordinate', 'text'] },
  double_click: { required: [], optional: ['coordinate', 'text'] },
  triple_click: { required: [], optional: ['coordinate', 'text'] },
  mouse_move: { required: ['coordinate'], optional: [] },
  left_click_drag: { required: ['start_coordinate', 'coordinate'], optional: [] },
  left_mouse_down: { required: [], optional: ['coordinate'] },
  left_mouse_up: { required: [], optional: ['coordinate'] },
  scroll: { required: ['scroll_direction'], optional: ['coordinate', 'scroll_amount', 'text'] },
  key: { required: ['text'], optional: [] },
  hold_key: { required: ['text', 'duration'], optional: [] },
  type: { required: ['text'], optional: [] },
  zoom: { required: ['region'], optional: ['width'] },
  wait: { required: [], optional: ['duration'] },
  wait_still: { required: [], optional: ['duration'] },
  wait_changed: { required: [], optional: ['duration', 'since'] },
  cursor_position: { required: [], optional: [] },
};

/** The helper's methods the computer actions use: each answers a screenshot, where the pointer is, or a wait. */
type DesktopMethod = Extract<
  MethodName,
  | 'desktop.screenshot'
  | 'desktop.zoom'
  | 'desktop.cursor'
  | 'desktop.move'
  | 'desktop.click'
  | 'desktop.button'
  | 'desktop.drag'
  | 'desktop.scroll'
  | 'desktop.key'
  | 'desktop.holdKey'
  | 'desktop.type'
  | 'desktop.wait'
>;
/** One helper call; `method` and `params` belong together. */
export type DesktopCall = { [M in DesktopMethod]: { method: M; params: Params<M> } }[DesktopMethod];

/**
 * The helper calls that carry out one computer action, in order; none for a
 * plain `wait` (a pause: pauseMs). `lastFrame`: what the branch's last
 * action answered, where wait_changed starts from unless told. Throws
 * E_INVALID_PARAMS for fields that do not fit the action.
 */
export function desktopCalls(args: ComputerArgs, lastFrame?: FrameToken): DesktopCall[] {
  checkFields(args);
  const workspace = args.branch;
  const at = args.coordinate ? point(args.coordinate) : {};
  switch (args.action) {
    case 'screenshot':
      return [{ method: 'desktop.screenshot', params: { workspace, region: args.region, scale: args.scale } }];
    case 'left_click':
    case 'right_click':
    case 'middle_click':
    case 'double_click':
    case 'triple_click':
      return [{ method: 'desktop.click', params: { workspace, ...at, ...CLICKS[args.action], modifiers: args.text } }];
    case 'mouse_move':
      return [{ method: 'desktop.move', params: { workspace, ...point(args.coordinate!) } }];
    case 'left_click_drag':
      return [{ method: 'desktop.drag', params: { workspace, from: point(args.start_coordinate!), to: point(args.coordinate!), button: 'left' } }];
    case 'left_mouse_down':
    case 'left_mouse_up':
      return [{ method: 'desktop.button', params: { workspace, ...at, button: 'left', action: args.action === 'left_mouse_down' ? 'down' : 'up' } }];
    case 'scroll': {
      const notches = wheel(args.scroll_direction!, args.scroll_amount ?? DEFAULT_SCROLL_NOTCHES);
      return [{ method: 'desktop.scroll', params: { workspace, ...at, ...notches, modifiers: args.text } }];
    }
    case 'key':
      return [{ method: 'desktop.key', params: { workspace, keys: args.text! } }];
    case 'hold_key':
      return [{ method: 'desktop.holdKey', params: { workspace, keys: args.text!, durationMs: Math.round(args.duration! * 1000) } }];
    case 'type':
      return chunks(args.text!, MAX_TYPED_CHARS).map((text) => ({ method: 'desktop.type', params: { workspace, text } }));
    case 'zoom':
      return [{ method: 'desktop.zoom', params: { workspace, region: args.region!, width: args.width } }];
    case 'wait':
      return [];
    case 'wait_still':
      return [{ method: 'desktop.wait', params: { workspace, until: 'still', ...waitBounds(args.duration ?? WAIT_DEFAULT_S) } }];
    case 'wait_changed': {
      const timeoutMs = Math.round((args.duration ?? WAIT_DEFAULT_S) * 1000);
      return [{ method: 'desktop.wait', params: { workspace, until: 'changed', timeoutMs, since: args.since ?? lastFrame } }];
    }
    case 'cursor_position':
      return [{ method: 'desktop.cursor', params: { workspace } }];
  }
}

/** How long a plain `wait` pauses. */
export function pauseMs(args: ComputerArgs): number {
  return Math.round((args.duration ?? PAUSE_DEFAULT_S) * 1000);
}

function checkFields(args: ComputerArgs): void {
  const { required, optional } = FIELDS[args.action];
  const missing = required.filter((f) => args[f] === undefined);
  if (missing.length > 0) throw new GroveError('E_INVALID_PARAMS', `${args.action} needs ${missing.join(' and ')}`);
  const stray = ALL_FIELDS.filter((f) => args[f] !== undefined && !required.includes(f) && !optional.includes(f));
  if (stray.length > 0) {
    const takes = [...required, ...optional];
    throw new GroveError(
      'E_INVALID_PARAMS',
      `${args.action} does not take ${stray.join(' or ')}${takes.length ? ` (it takes ${takes.join(', ')})` : ' (it takes no other field)'}`,
    );
  }
}

function point([x, y]: number[]): { x: number; y: number } {
  return { x: x!, y: y! };
}

/** Wheel notches as the helper counts them: dy > 0 scrolls down, dx > 0 right. */
export function wheel(direction: 'up' | 'down' | 'left' | 'right', notches: number): { dx: number; dy: number } {
  switch (direction) {
    case 'up':
      return { dx: 0, dy: -notches };
    case 'down':
      return { dx: 0, dy: notches };
    case 'left':
      return { dx: -notches, dy: 0 };
    case 'right':
      return { dx: notches, dy: 0 };
  }
}

/** Waits for the screen to be still, for at most `seconds`; a very short wait needs only be still for all of it. */
function waitBounds(seconds: number): { timeoutMs: number; quietMs: number } {
  const timeoutMs = Math.max(50, Math.round(seconds * 1000));
  return { timeoutMs, quietMs: Math.min(STILL_MS, timeoutMs) };
}

/** `text` in pieces of at most `max` UTF-16 units, never splitting a character. */
export function chunks(text: string, max: number): string[] {
  const pieces: string[] = [];
  let piece = '';
  for (const character of text) {
    if (piece.length + character.length > max) {
      pieces.push(piece);
      piece = '';
    }
    piece += character;
  }
  return piece ? [...pieces, piece] : pieces;
}

/** The helper's answer to the last call of an action, in a few words for the model. */
export function describeOutcome(args: ComputerArgs, result: Screenshot | PointerState | WaitResult): string {
  if ('png' in result) {
    const part =
      result.region.width === result.screen.width && result.region.height === result.screen.height
        ? 'the'
        : `a ${result.region.width}x${result.region.height} region at ${result.region.x},${result.region.y} of the`;
    const zoomed = result.scale > 1 ? `, zoomed ${Number(result.scale.toFixed(2))}x` : '';
    return `${args.action === 'zoom' ? 'zoom' : 'screenshot'} (${result.width}x${result.height} px${zoomed}) of ${part} ${result.screen.width}x${result.screen.height} screen; the pointer is at ${result.cursor.x},${result.cursor.y}`;
  }
  if ('satisfied' in result) {
    if (args.action === 'wait_changed')
      return result.satisfied ? `the screen changed (after ${result.waitedMs} ms of waiting)` : `the screen did not change in ${result.waitedMs} ms`;
    return result.satisfied
      ? `the screen was still after ${result.waitedMs} ms`
      : `the screen was still changing after ${result.waitedMs} ms (gave up waiting)`;
  }
  const done = args.action === 'cursor_position' ? 'the pointer is' : `${args.action.replaceAll('_', ' ')} done; the pointer is now`;
  return `${done} at ${result.cursor.x},${result.cursor.y} (screen ${result.screen.width}x${result.screen.height})`;
}
