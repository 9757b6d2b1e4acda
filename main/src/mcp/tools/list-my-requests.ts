// list_my_requests: the requests this agent made, open ones and those closed
// lately, with their state; a decision it missed while it worked is here.
import { z } from 'zod';
import type { Approval } from '../../../../privileged-helper/src/protocol/approvals.js';
import { describeActor } from '../../../../privileged-helper/src/protocol/identity.js';
import { defineTool, jsonResult } from '../tool.js';

export const listMyRequestsTool = defineTool({
  name: 'list_my_requests',
  title: 'My requests',
  description:
    'The requests you made to a person (promote, discard, outside access, rollback, …), oldest first: id, kind, branch, state (pending, running, done, denied, expired, failed, withdrawn, abandoned), who decided and their note.',
  input: { open_only: z.boolean().optional().describe('only those still waiting or being carried out') },
  annotations: { readOnlyHint: true },
  async run(args, h) {
    const all = await h.request('approval.list', { all: !args.open_only });
    const mine = all.filter((a) => a.requestedBy?.uid === h.identity.uid);
    return jsonResult({ requests: mine.map(summary) });
  },
});

function summary(a: Approval) {
  return {
    request: a.id,
    kind: a.action.kind,
    branch: { id: a.workspace, name: a.workspaceName },
    reason: a.reason,
    state: a.state,
    at: a.at,
    expiresAt: a.expiresAt,
    decidedBy: a.decision?.by ? describeActor(a.decision.by) : null,
    note: a.decision?.note ?? null,
    outcome: a.outcome,
  };
}
