// How tests wait: on a condition, never for a fixed time. A fixed sleep is
// too short on a busy machine (a flaky test) and too long on a quiet one
// (a slow suite); a condition polled often is neither.
import { setTimeout as sleep } from 'node:timers/promises';

/** What a poll's answer is once it counts as ready. */
type Truthy<T> = Exclude<T, false | 0 | '' | null | undefined>;

export interface UntilOptions {
  /** Said when the wait times out: what never came. */
  what?: string;
  timeoutMs?: number;
  everyMs?: number;
}

/** Polls `ready` until it gives a truthy value, and returns that value; fails after `timeoutMs`. */
export async function until<T>(ready: () => T | Promise<T>, { what = 'a condition', timeoutMs = 5000, everyMs = 10 }: UntilOptions = {}): Promise<Truthy<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await ready();
    if (value) return value as Truthy<T>;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(everyMs);
  }
}

/**
 * For a test that asserts something does not happen: an absence sends no
 * event, so `holds` is watched for `ms` and the test fails the moment it
 * stops holding, saying what broke.
 */
export async function holdsFor(ms: number, holds: () => boolean | Promise<boolean>, what: string): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    if (!(await holds())) throw new Error(`no longer true within ${ms} ms: ${what}`);
    const left = end - Date.now();
    if (left <= 0) return;
    await sleep(Math.min(10, left));
  }
}
