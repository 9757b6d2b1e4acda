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

/** Where the pointer is after an action, and the screen it is on. */
export const PointerState = z.strictObject({ cursor: Point, screen: ScreenSize });
export type PointerState = z.infer<typeof PointerState>;

export const Screenshot = z.strictObject({
  /** The picture, PNG, base64. */
  png: z.string(),
  /** Its size in pixels (the region's, times the scale). */
  width: z.number().int().positive(),
  height: z.number().int().positive(),
  /** The part of the screen it shows, in screen pixels. */
  region: Region,
  screen: ScreenSize,
  cursor: Point,
  at: z.string(),
});
export type Screenshot = z.infer<typeof Screenshot>;

export const WaitCondition = z.enum(['still', 'changed']);

export const WaitResult = z.strictObject({
  /** False when the timeout came first. */
  satisfied: z.boolean(),
  waitedMs: z.number(),
  screen: ScreenSize,
});
export type WaitResult = z.infer<typeof WaitResult>;

export const DesktopActionKind = z.enum(['screenshot', 'cursor', 'move', 'click', 'button', 'drag', 'scroll', 'key', 'type', 'wait']);
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
