// request_discard: ask a person to remove a branch.
import { requestDecision } from '../asking.js';
import { Branch, DEFAULT_WAIT_SECONDS, Reason, waitSeconds } from '../inputs.js';
import { defineTool } from '../tool.js';

export const requestDiscardTool = defineTool({
  name: 'request_discard',
  title: 'Ask to discard a branch',
  description:
    'Asks a person to remove a branch with its processes and files (its versions are kept); the person sees your reason, its screen and what would end. Waits up to wait_seconds for the decision; if none came yet, returns the request id for request_status. (Branches you forked yourself you may also discard at once with discard.)',
  input: { branch: Branch, reason: Reason, wait_seconds: waitSeconds(DEFAULT_WAIT_SECONDS) },
  annotations: { destructiveHint: false },
  run: (args, h) => requestDecision(h, args.branch, { kind: 'branch.discard' }, args.reason, args.wait_seconds),
});
