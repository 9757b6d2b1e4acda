// "What it did": the timeline the helper keeps of what agents did in each
// branch since it was made (a fork's child starts empty), with a small
// screenshot every few actions, for the person deciding a promote or export
// request to scrub through (desktop/timeline.ts keeps it, bounded).
import { z } from 'zod';
import { Maker } from './identity.js';
import { Id } from './names.js';

/** Bounds of one branch's timeline, and of all branches' screenshots together. */
export const TIMELINE_LIMITS = {
  entries: 500,
  /** The longest summary kept, in characters. */
  summaryChars: 200,
  shots: 24,
  shotBytes: 4 << 20,
  allShotBytes: 64 << 20,
  /** A screenshot after the first action, then after every this many (doubled each time the shots are thinned out). */
  shotEvery: 4,
  /** A screenshot's width in pixels. */
  shotWidth: 480,
} as const;

export const TimelineEntry = z.strictObject({
  /** Counts every action the branch saw, dropped ones too: a gap in the numbers is what was dropped. */
  n: z.number().int().positive(),
  by: Maker,
  /** A computer-use action's kind (screenshot, click, type, …), or the method of another call (exec.run, file.upload, …). */
  action: z.string().max(64),
  summary: z.string().max(TIMELINE_LIMITS.summaryChars),
  ok: z.boolean(),
  at: z.string(),
});
export type TimelineEntry = z.infer<typeof TimelineEntry>;

export const TimelineShot = z.strictObject({
  /** The screen after this action (its `n`). */
  after: z.number().int().positive(),
  at: z.string(),
  /** A PNG, as a data: URL. */
  image: z.string().startsWith('data:image/png;base64,'),
});
export type TimelineShot = z.infer<typeof TimelineShot>;

export const Timeline = z.strictObject({
  workspace: Id,
  entries: z.array(TimelineEntry).max(TIMELINE_LIMITS.entries),
  shots: z.array(TimelineShot).max(TIMELINE_LIMITS.shots),
  /** Actions older than the first entry kept, left out to bound it. */
  droppedEntries: z.number().int().nonnegative(),
});
export type Timeline = z.infer<typeof Timeline>;
