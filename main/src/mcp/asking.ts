// What an agent cannot do itself it asks a person for: the request is made
// (approval.create) and the call waits for the decision, answered the moment
// a person decides (the helper ends its approval.wait then): done, denied (by
// whom, with the note), expired or failed, the last three as errors. A client
// that takes progress notifications is sent one every few seconds and waits
// until the decision; one that does not, a bounded time (its own request
// timeout would end the call first), after which it is told "still waiting"
// with the request's id for request_status.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { OPEN_STATES, type AgentRequestAction, type Approval } from '../../../privileged-helper/src/protocol/approvals.js';
import { describeActor } from '../../../privileged-helper/src/protocol/identity.js';
import type { Helper } from './helper-link.js';
import { DEFAULT_WAIT_SECONDS, PROGRESS_EVERY_S } from './inputs.js';
import { closedVerdict } from '../helper-client/requests.js';
import { textResult, type ToolCall } from './tool.js';

export async function requestDecision(
  h: Helper,
  branch: string,
  action: AgentRequestAction,
  reason: string,
  waitSeconds: number | undefined,
  call: ToolCall,
): Promise<CallToolResult> {
  const opened = await h.request('approval.create', { workspace: branch, action, reason });
  return requestAnswer(await waitForDecision(h, opened, waitLimitMs(waitSeconds, call), call));
}

/** As asked; else until the decision for a client that takes progress, DEFAULT_WAIT_SECONDS for one that does not. */
export function waitLimitMs(waitSeconds: number | undefined, call: ToolCall): number {
  if (waitSeconds !== undefined) return waitSeconds * 1000;
  return call.takesProgress ? Infinity : DEFAULT_WAIT_SECONDS * 1000;
}

/** The request once it closed, or as it is after `limitMs` (or when the client cancels the call). */
export async function waitForDecision(h: Helper, a: Approval, limitMs: number, call: ToolCall): Promise<Approval> {
  const deadline = Date.now() + limitMs;
  let now = a;
  while (OPEN_STATES.has(now.state) && Date.now() < deadline && !call.signal.aborted) {
    now = await h.request('approval.wait', { id: a.id, timeoutMs: Math.min(PROGRESS_EVERY_S * 1000, deadline - Date.now()) });
    if (OPEN_STATES.has(now.state)) await call.progress(`waiting for a person to decide request ${a.id} (${now.state}; it expires at ${now.expiresAt})`);
  }
  return now;
}

/** The request in words and as data; one that closed without being carried out is an error the model cannot miss. */
export function requestAnswer(a: Approval): CallToolResult {
  const result = textResult(requestWords(a), {
    request: a.id,
    state: a.state,
    kind: a.action.kind,
    branch: { id: a.workspace, name: a.workspaceName },
    decidedBy: a.decision?.by ? describeActor(a.decision.by) : null,
    note: a.decision?.note ?? null,
    outcome: a.outcome,
    expiresAt: a.expiresAt,
  });
  return OPEN_STATES.has(a.state) || a.state === 'done' ? result : { ...result, isError: true };
}

function requestWords(a: Approval): string {
  switch (a.state) {
    case 'pending':
      return `still waiting: request ${a.id} (use request_status; it expires at ${a.expiresAt})`;
    case 'running':
      return `still waiting: request ${a.id} was approved and is being carried out (use request_status)`;
    default:
      return `${a.state}: ${closedVerdict(a).words}`;
  }
}
