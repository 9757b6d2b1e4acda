// What an agent cannot do itself it asks a person for: the request is made
// (approval.create), waited on for a bounded time so the MCP call returns
// before the client's own timeout, and answered in words: done, denied (by
// whom, with the note), expired, failed, or still waiting with the request's
// id for request_status.
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { OPEN_STATES, type AgentRequestAction, type Approval } from '../../../privileged-helper/src/protocol/approvals.js';
import { describeActor } from '../../../privileged-helper/src/protocol/identity.js';
import type { Helper } from './helper-link.js';
import { DEFAULT_WAIT_SECONDS } from './inputs.js';
import { closedVerdict } from '../helper-client/requests.js';
import { textResult } from './tool.js';

export async function requestDecision(
  h: Helper,
  branch: string,
  action: AgentRequestAction,
  reason: string,
  waitSeconds: number | undefined,
): Promise<CallToolResult> {
  const opened = await h.request('approval.create', { workspace: branch, action, reason });
  return requestAnswer(await waitForDecision(h, opened, waitSeconds));
}

/** The request once it closed, or as it is after `waitSeconds`. */
export async function waitForDecision(h: Helper, a: Approval, waitSeconds = DEFAULT_WAIT_SECONDS): Promise<Approval> {
  if (!OPEN_STATES.has(a.state) || waitSeconds <= 0) return a;
  return h.request('approval.wait', { id: a.id, timeoutMs: Math.round(waitSeconds * 1000) });
}

export function requestAnswer(a: Approval): CallToolResult {
  return textResult(requestWords(a), {
    request: a.id,
    state: a.state,
    kind: a.action.kind,
    branch: { id: a.workspace, name: a.workspaceName },
    decidedBy: a.decision?.by ? describeActor(a.decision.by) : null,
    note: a.decision?.note ?? null,
    outcome: a.outcome,
    expiresAt: a.expiresAt,
  });
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
