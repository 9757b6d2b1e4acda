// request_status: how a request stands, waiting a while for its decision if asked to.
import { ApprovalId } from '../../../../privileged-helper/src/protocol/approvals.js';
import { requestAnswer, waitForDecision, waitLimitMs } from '../asking.js';
import { waitSeconds } from '../inputs.js';
import { defineTool } from '../tool.js';

export const requestStatusTool = defineTool({
  name: 'request_status',
  title: 'A request’s state',
  description:
    'How a request you made stands (done, denied with who and why, expired, failed, or still waiting); waits up to wait_seconds (default 0: answer at once) for a person to decide.',
  input: { request: ApprovalId.describe('the request id (q and 8 hex digits)'), wait_seconds: waitSeconds(0) },
  annotations: { readOnlyHint: true },
  async run(args, h, call) {
    const asked = await h.request('approval.get', { id: args.request });
    return requestAnswer(await waitForDecision(h, asked, waitLimitMs(args.wait_seconds ?? 0, call), call));
  },
});
