// What the activity log says about requests in the approvals queue: who asked
// for what, who decided (this app's person included: the helper reports the
// decision under its identity), and why one closed without a decision. What an
// approved request then did, the audit log tells: the helper carries it out in
// the name of the agent that asked.
import { describeEgressChange } from '../../../privileged-helper/src/protocol/egress-rules.js';
import type { ActivityEntry, Actor, Approval, ApprovalAction, ApprovalState } from '../api/contract.js';
import { REQUEST_VERB, actorName, describeConnection } from '../api/words.js';
import { HELPER, attribute, type Who } from './activity.js';

export interface LogLine {
  who: Who;
  action: string;
  target: string | null;
  outcome: ActivityEntry['outcome'];
  detail: string;
}

/** The log's name for a decision: 'allow outside access once', 'approve promote', 'deny discard'. */
export function decisionAction(action: ApprovalAction, approve: boolean, always: boolean): string {
  if (action.kind === 'egress.connection') return approve ? (always ? 'always allow outside access' : 'allow outside access once') : 'deny outside access';
  return `${approve ? 'approve' : 'deny'} ${REQUEST_VERB[action.kind]}`;
}

/** 'GET http://outside.test:8080/x'; for an agent's request, who asked and why. */
export function describeApproval(a: Approval): string {
  if (a.action.kind === 'egress.connection') return describeConnection(a.action);
  const asked = `${a.requestedBy ? actorName(a.requestedBy) : 'the branch'}: “${a.reason}”`;
  return a.action.kind === 'egress.policy' ? `${describeEgressChange(a.action.change)} · ${asked}` : asked;
}

/** What to log when a request moves from `before` (null: new to the app) to the state it is in now. */
export function approvalLines(a: Approval, before: ApprovalState | null, self: Actor | null): LogLine[] {
  const line = (who: Who, action: string, outcome: LogLine['outcome'], detail: string): LogLine => ({ who, action, target: a.workspaceName, outcome, detail });
  const lines: LogLine[] = [];
  if (a.state === 'pending' && before === null) lines.push(asked(a, line, self));
  if ((before === null || before === 'pending') && DECIDED.has(a.state) && a.decision !== null) lines.push(decided(a, line, self));
  if (a.state === 'expired') lines.push(line(HELPER, 'request expired', 'info', `${describeApproval(a)} · nobody decided in time`));
  if (a.state === 'withdrawn') lines.push(line(attribute(a.requestedBy, self), 'withdrew its request', 'info', describeApproval(a)));
  if (a.state === 'abandoned') lines.push(line(HELPER, 'request abandoned', 'info', a.outcome ?? describeApproval(a)));
  return lines;
}

/** States a decision leads to (approved: being carried out, or carried out already). */
const DECIDED: ReadonlySet<ApprovalState> = new Set(['running', 'done', 'failed', 'denied']);

type Line = (who: Who, action: string, outcome: LogLine['outcome'], detail: string) => LogLine;

function asked(a: Approval, line: Line, self: Actor | null): LogLine {
  if (a.action.kind === 'egress.connection') {
    const mutating = a.action.held === 'mutating' ? ' (a mutating request)' : '';
    return line(HELPER, 'asks for outside access', 'info', `${describeConnection(a.action)} · waiting for a person${mutating}`);
  }
  return line(attribute(a.requestedBy, self), `asks to ${REQUEST_VERB[a.action.kind]}`, 'info', `“${a.reason}” · waiting for a person`);
}

function decided(a: Approval, line: Line, self: Actor | null): LogLine {
  const d = a.decision!;
  const action = decisionAction(a.action, a.state !== 'denied', d.always);
  const note = d.note ? ` · note: ${d.note}` : '';
  // A standing approval decides without a person; the helper applies it.
  if (d.grant) return line(HELPER, action, 'ok', `${describeApproval(a)} · by standing approval ${d.grant}`);
  return line(attribute(d.by, self), action, 'ok', `${describeApproval(a)}${note}`);
}
