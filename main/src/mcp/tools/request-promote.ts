// request_promote: ask a person to make a branch its workspace's main line.
import { z } from 'zod';
import { requestDecision } from '../asking.js';
import { Branch, Reason, waitSeconds } from '../inputs.js';
import { defineTool } from '../tool.js';

export const requestPromoteTool = defineTool({
  name: 'request_promote',
  title: 'Ask to promote a branch',
  description:
    "Asks a person to make a branch its workspace's main line (it takes over the stable ports). The person sees your reason, its screen and its diff against the main line. Answers with the decision as soon as a person makes it (see wait_seconds); a denial or expiry is an error result.",
  input: {
    branch: Branch,
    reason: Reason,
    old_main: z
      .enum(['version', 'discard', 'keep'])
      .optional()
      .describe(
        'what becomes of the current main line: retired (default: a version is taken of it and it is stopped, kept in the tree), discarded, or kept running as a branch',
      ),
    wait_seconds: waitSeconds('decision'),
  },
  annotations: { destructiveHint: false },
  run: (args, h, call) => requestDecision(h, args.branch, { kind: 'branch.promote', oldMain: args.old_main }, args.reason, args.wait_seconds, call),
});
