// The computer-use API: what an agent sees of a branch's desktop and how it
// acts on it. The helper drives the branch's own VNC server from the host
// (desktop/), so it works with any image and needs nothing inside.
import { z } from 'zod';
import { Id } from './names.js';

/** Screen coordinates in pixels, from the top-left corner. The helper refuses points off the screen. */
export const Point = z.strictObject({ x: z.number().int().min(0).max(16383), y: z.number().int().min(0).max(16383) });
export type Point = z.infer<typeof Point>;

export const Region = z.strictObject({
  x: z.number().int().min(0).max(16383),
  y: z.number().int().min(0).max(16383),
  width: z.number().int().min(1).max(16384),
  height: z.number().int().min(1).max(16384),
});
export type Region = z.infer<typeof Region>;

export const ScreenSize = z.strictObject({ width: z.number().int().positive(), height: z.number().int().positive() });
export type ScreenSize = z.infer<typeof ScreenSize>;

export const MouseButton = z.enum(['left', 'right', 'middle']);
export type MouseButton = z.infer<typeof MouseButton>;

/** Longest text one `type` call takes. */
export const MAX_TYPED_CHARS = 10_000;
/** Longest a `hold_key` call holds its keys (ms): the branch's other input waits meanwhile. */
export const MAX_HOLD_MS = 10_000;
/** A zoomed picture's longest side (px), and the most it scales a region up. */
export const MAX_ZOOM_SIDE = 2560;
export const MAX_ZOOM_FACTOR = 8;
/** The most bytes an upload or download moves (its base64 fits one protocol message). */
export const MAX_TRANSFER_BYTES = 2 << 20;

/**
 * The screen as a call saw it: `wait` until 'changed' with `since` set to it
 * is satisfied by any change after that point, also one that came before the
 * wait was asked for. An action's frame is taken once the pointer is where
 * the action acts (the pointer's own move is not its effect), before its
 * buttons or keys; a screenshot's is its picture's.
 */
export const FrameToken = z.string().regex(/^[0-9a-f]{8}\.[0-9]{1,15}$/, 'a frame is what a screenshot or an action answered, e.g. 3fa2c01b.17');
export type FrameToken = z.infer<typeof FrameToken>;

/** Where the pointer is after an action, and the screen it is on. */
export const PointerState = z.strictObject({ cursor: Point, screen: ScreenSize, frame: FrameToken });
export type PointerState = z.infer<typeof PointerState>;

export const Screenshot = z.strictObject({
  /** The picture, PNG, base64. */
  png: z.string(),
  /** Its size in pixels (the region's, times the scale). */
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  /** The part of the screen it shows, in screen pixels. */
  region: Region,
  /** Picture pixels per screen pixel: below 1 scaled down, above 1 zoomed in. */
  scale: z.number().positive(),
  screen: ScreenSize,
  cursor: Point,
  frame: FrameToken,
  at: z.string(),
});
export type Screenshot = z.infer<typeof Screenshot>;

export const WaitCondition = z.enum(['still', 'changed']);

export const WaitResult = z.strictObject({
  /** False when the timeout came first. */
  satisfied: z.boolean(),
  waitedMs: z.number(),
  screen: ScreenSize,
  /** The screen as the wait ended: the next wait for a change can start from here. */
  frame: FrameToken,
});
export type WaitResult = z.infer<typeof WaitResult>;

/** A top-level window of the branch's desktop, as its window manager lists it. */
export const DesktopWindow = z.strictObject({
  /** The X window id, e.g. 0x1a00003. */
  id: z.string().regex(/^0x[0-9a-f]{1,8}$/),
  title: z.string().max(512),
  /** The application's class (WM_CLASS), e.g. 'Chromium'. */
  app: z.string().max(256),
  pid: z.number().int().positive().nullable(),
  x: z.number().int(),
  y: z.number().int(),
  width: z.number().int().nonnegative(),
  height: z.number().int().nonnegative(),
  focused: z.boolean(),
});
export type DesktopWindow = z.infer<typeof DesktopWindow>;

export const WindowList = z.strictObject({ windows: z.array(DesktopWindow).max(256), screen: ScreenSize });
export type WindowList = z.infer<typeof WindowList>;

export const DesktopActionKind = z.enum([
  'screenshot',
  'zoom',
  'cursor',
  'move',
  'click',
  'button',
  'drag',
  'scroll',
  'key',
  'hold_key',
  'type',
  'wait',
  'windows',
  'open_url',
  'launch',
]);
export type DesktopActionKind = z.infer<typeof DesktopActionKind>;

/** Published for every computer-use call (the event's `by` says who), so a person sees what an agent does. */
export const DesktopAction = z.strictObject({
  workspace: Id,
  workspaceName: z.string(),
  action: DesktopActionKind,
  /** In words: 'double click left at 120,340', 'type 12 characters', 'key ctrl+l'. */
  summary: z.string(),
  /** The pointer after the action (null when the call did not touch it). */
  cursor: Point.nullable(),
  screen: ScreenSize.nullable(),
  ok: z.boolean(),
  at: z.string(),
});
export type DesktopAction = z.infer<typeof DesktopAction>;
