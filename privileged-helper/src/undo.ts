// Undoing what a failed operation made. Every step is tried, whatever the
// others do, and the error told is the operation's own, with each step that
// failed said after it: neither the cause nor what was left behind is lost
// (an undo's error thrown instead of the operation's hides why it failed).
import { GroveError } from './protocol/wire.js';

/** One part of an undo; steps that depend on each other go in one. */
export type UndoStep = () => Promise<unknown> | undefined;

/** Runs every step in turn after `failure`; returns the error to throw: `failure`, or it with the undo's failures told. */
export async function undoAfter(failure: unknown, steps: readonly UndoStep[]): Promise<unknown> {
  const failed: string[] = [];
  for (const step of steps) {
    try {
      await step();
    } catch (err) {
      failed.push(messageOf(err));
    }
  }
  if (failed.length === 0) return failure;
  const told = `${messageOf(failure)}; undoing it failed too: ${failed.join('; ')}`;
  return failure instanceof GroveError ? new GroveError(failure.code, told, failure.details) : new Error(told, { cause: failure });
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
