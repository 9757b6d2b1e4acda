// request_discard: ask a person to remove a branch.
import { requestDecision } from '../asking.js';
import { Branch, Reason, waitSeconds } from '../inputs.js';
import { defineTool } from '../tool.js';

export const requestDiscardTool = defineTool({
  name: 'request_discard',
  title: 'Ask to discard a branch',
  description:
    'Asks a person to remove a branch with its processes and files (its versions are kept); the person sees your reason, its screen and what would end. Answers with the decision as soon as a person makes it (see wait_seconds); a denial or expiry is an error result. (Branches you forked yourself you may also discard at once with discard.)',
  input: { branch: Branch, reason: Reason, wait_seconds: waitSeconds('decision') },
  annotations: { destructiveHint: false },
  run: (args, h, call) => requestDecision(h, args.branch, { kind: 'branch.discard' }, args.reason, args.wait_seconds, call),
});
