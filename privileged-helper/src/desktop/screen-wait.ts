// wait(): until the screen changes, or has not changed for a while, as the
// RFB session's updates report it. A text cursor blinking is not a change:
// Chromium's blinks forever in a focused field, and would satisfy every
// 'changed' and break every 'still' longer than its half period (600 ms).
//
// Frames: each session counts the changes it received, from its opening on,
// so a call can say "the screen as I saw it" (a FrameToken: the session's id
// and that count) and a later wait for a change can start from there: the
// change an action caused is not missed when it came before the wait began.
import { randomBytes } from 'node:crypto';
import type { FrameToken, WaitResult } from '../protocol/desktop.js';
import { GroveError } from '../protocol/wire.js';
import type { Rect } from './rfb-protocol.js';
import type { RfbSession } from './rfb-session.js';

/** Changes no wider than this (px) are a text cursor blinking (Chromium's is 1 px wide). */
const CARET_MAX_WIDTH = 2;

const isChange = (changed: Rect) => changed.width > CARET_MAX_WIDTH;

/** The changes one session received. */
class FrameCounter {
  readonly id = randomBytes(4).toString('hex');
  changes = 0;

  constructor(s: RfbSession) {
    s.onChange((changed) => {
      if (changed && isChange(changed)) this.changes++;
    });
  }
}

const counters = new WeakMap<RfbSession, FrameCounter>();

/** Counting starts with the session (SessionPool calls this as it opens one). */
export function countFrames(s: RfbSession): void {
  if (!counters.has(s)) counters.set(s, new FrameCounter(s));
}

/** The screen as the session has it now. */
export function frameOf(s: RfbSession): FrameToken {
  countFrames(s);
  const counter = counters.get(s)!;
  return `${counter.id}.${counter.changes}`;
}

/** Whether the screen changed after `since`; a frame of another session (closed since, or another desktop) is refused. */
function changedSince(s: RfbSession, since: FrameToken): boolean {
  const [id, count] = since.split('.') as [string, string];
  const counter = counters.get(s);
  if (counter?.id !== id) {
    throw new GroveError(
      'E_CONFLICT',
      `frame ${since} is not of the desktop's current connection (it was closed after a while without calls, or the desktop restarted): take a screenshot and wait since its frame`,
    );
  }
  return counter.changes > Number(count);
}

/** Waits until the screen changes (a blinking text cursor aside) after `since` or now, or has not changed for quietMs. */
export function waitForScreen(s: RfbSession, p: { until: 'still' | 'changed'; quietMs: number; timeoutMs: number; since?: FrameToken }): Promise<WaitResult> {
  const start = performance.now();
  const answer = (satisfied: boolean): WaitResult => ({ satisfied, waitedMs: Math.round(performance.now() - start), screen: s.size, frame: frameOf(s) });
  if (p.since !== undefined && changedSince(s, p.since)) return Promise.resolve(answer(true));
  return new Promise((resolve, reject) => {
    let quiet: NodeJS.Timeout | undefined;
    const end = () => {
      unsubscribe();
      clearTimeout(quiet);
      clearTimeout(timeout);
    };
    const finish = (satisfied: boolean) => {
      end();
      resolve(answer(satisfied));
    };
    const restartQuiet = () => {
      clearTimeout(quiet);
      if (p.until === 'still') quiet = setTimeout(() => finish(true), p.quietMs);
    };
    const unsubscribe = s.onChange((changed) => {
      if (changed === null) {
        end();
        reject(new GroveError('E_HOST', `the connection to the desktop's VNC server broke: ${s.closed?.message ?? 'closed'}`));
      } else if (isChange(changed)) {
        if (p.until === 'changed') finish(true);
        else restartQuiet();
      }
    });
    restartQuiet();
    const timeout = setTimeout(() => finish(false), p.timeoutMs);
  });
}
