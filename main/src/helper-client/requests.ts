// What every client of the helper that asks a person for something shares
// (the CLI and grove mcp): how a closed request ended, in the words an agent
// is told and with the error code a command exits with when it did not
// happen; whether the caller may act at once instead of asking; and how an
// allow-list addition must be asked for.
import type { Approval } from '../../../privileged-helper/src/protocol/approvals.js';
import type { EgressChange, EgressMode, Workspace } from '../../../privileged-helper/src/protocol/entities.js';
import { describeActor, type Actor } from '../../../privileged-helper/src/protocol/identity.js';
import type { ErrorCode } from '../../../privileged-helper/src/protocol/wire.js';

export interface Verdict {
  /** Null when it was carried out. */
  code: ErrorCode | null;
  words: string;
}

/** Only for a request out of the open states (pending, running). */
export function closedVerdict(a: Approval): Verdict {
  const by = a.decision?.by ? describeActor(a.decision.by) : 'the helper';
  const note = a.decision?.note ? `: ${a.decision.note}` : '';
  switch (a.state) {
    case 'done':
      return {
        code: null,
        words: `request ${a.id} was approved by ${by}${a.decision?.grant ? ` (standing approval ${a.decision.grant})` : ''}${a.decision?.note ? ` (note: ${a.decision.note})` : ''} and carried out: ${a.outcome ?? 'done'}`,
      };
    case 'denied':
      return { code: 'E_DENIED', words: `request ${a.id} was denied by ${by}${note}` };
    case 'expired':
      return { code: 'E_TIMEOUT', words: `request ${a.id}: no person decided before it expired (${a.expiresAt})` };
    case 'failed':
      return { code: 'E_HOST', words: `request ${a.id} was approved by ${by} but failed: ${a.outcome ?? 'no reason given'}` };
    default:
      return { code: 'E_CONFLICT', words: `request ${a.id} was ${a.state}${a.outcome ? `: ${a.outcome}` : ''}` };
  }
}

/**
 * Persons may discard, stop or roll back any branch; an agent, without asking,
 * only one it owns: it made it, and no person has acted on it since (the
 * helper's rule: privileged-helper/src/auth/authority.ts).
 */
export function mayActAtOnce(me: Actor, ws: Pick<Workspace, 'madeBy' | 'claimedBy'>): boolean {
  return me.role === 'person' || (ws.madeBy?.role === 'agent' && ws.madeBy.uid === me.uid && ws.claimedBy === null);
}

/** What an agent is told when it finds no workspace: it has none in its scope, and how it gets some. */
export function noWorkspaceWords(me: Actor): string {
  return `No workspace is in your scope (${describeActor(me)}): a person gives you some with grove agents allow ${me.user} WORKSPACE…`;
}

/** A change that adds to the allow list of a branch that lets nothing out also switches it to allow-list-only, or the list would not count. */
export function withAllowListOn(currentMode: EgressMode, change: EgressChange): EgressChange {
  return change.mode === undefined && change.allow?.length && currentMode === 'deny' ? { ...change, mode: 'allow' } : change;
}
