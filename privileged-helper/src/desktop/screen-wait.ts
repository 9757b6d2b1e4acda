// wait(): until the screen changes, or has not changed for a while, as the
// RFB session's updates report it. A text cursor blinking is not a change:
// Chromium's blinks forever in a focused field, and would satisfy every
// 'changed' and break every 'still' longer than its half period (600 ms).
import type { WaitResult } from '../protocol/desktop.js';
import { GroveError } from '../protocol/wire.js';
import type { RfbSession } from './rfb-session.js';

/** Changes no wider than this (px) are a text cursor blinking (Chromium's is 1 px wide). */
const CARET_MAX_WIDTH = 2;

/** Waits until the screen changes (a blinking text cursor aside), or has not changed for quietMs. */
export function waitForScreen(s: RfbSession, until: 'still' | 'changed', quietMs: number, timeoutMs: number): Promise<WaitResult> {
  const start = performance.now();
  return new Promise((resolve, reject) => {
    let quiet: NodeJS.Timeout | undefined;
    const end = () => {
      unsubscribe();
      clearTimeout(quiet);
      clearTimeout(timeout);
    };
    const finish = (satisfied: boolean) => {
      end();
      resolve({ satisfied, waitedMs: Math.round(performance.now() - start), screen: s.size });
    };
    const restartQuiet = () => {
      clearTimeout(quiet);
      if (until === 'still') quiet = setTimeout(() => finish(true), quietMs);
    };
    const unsubscribe = s.onChange((changed) => {
      if (changed === null) {
        end();
        reject(new GroveError('E_HOST', `the connection to the desktop's VNC server broke: ${s.closed?.message ?? 'closed'}`));
      } else if (changed.width > CARET_MAX_WIDTH) {
        if (until === 'changed') finish(true);
        else restartQuiet();
      }
    });
    restartQuiet();
    const timeout = setTimeout(() => finish(false), timeoutMs);
  });
}
