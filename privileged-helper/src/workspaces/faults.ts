// Fault injection, for the tests that prove each lifecycle operation is a
// transaction: an operation given a fault fails right after that stage, or,
// with crash, the helper dies there (SIGKILL), so that the next start must
// finish or undo what it was doing (reconcile.ts).
import { stat } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { GroveError } from '../protocol/wire.js';

/** Where an operation is to stop, and how: fail there (undone as any failure is), or the helper dies there. */
export interface Fault<S extends string> {
  at: S;
  crash: boolean;
}

/** The fault a request asks for, or none; refused unless the helper was started to allow fault injection (GROVE_FAULT_INJECTION=1). */
export function requestedFault<S extends string>(allowFaultInjection: boolean, p: { faultAt?: S; crash?: boolean }): Fault<S> | undefined {
  if (p.crash && !p.faultAt) throw new GroveError('E_INVALID_PARAMS', 'crash needs faultAt: the stage to crash at');
  if (!p.faultAt) return undefined;
  if (!allowFaultInjection) throw new GroveError('E_INVALID_PARAMS', 'fault injection is disabled (start the helper with GROVE_FAULT_INJECTION=1)');
  return { at: p.faultAt, crash: p.crash === true };
}

/** The operation has reached `stage`: if the fault is there, the operation fails (`failure` says how) or the helper dies. */
export function injectFault<S extends string>(fault: Fault<S> | undefined, stage: S, failure: string): void {
  if (fault?.at !== stage) return;
  if (fault.crash) process.kill(process.pid, 'SIGKILL');
  throw new GroveError('E_HOST', failure);
}

/**
 * A fault in a dump's freeze: injected once `snapshot` exists (the action
 * program takes it while the tree is frozen), unless the dump ends first.
 */
export async function injectInFreeze<S extends string>(fault: Fault<S> | undefined, stage: S, snapshot: string, dumpEnded: Promise<unknown>): Promise<void> {
  if (fault?.at !== stage) return;
  let ended = false;
  void dumpEnded.then(
    () => (ended = true),
    () => (ended = true),
  );
  while (!ended) {
    if (
      await stat(snapshot).then(
        () => true,
        () => false,
      )
    )
      return injectFault(fault, stage, "fault injected in the dump's freeze");
    await sleep(1);
  }
}
