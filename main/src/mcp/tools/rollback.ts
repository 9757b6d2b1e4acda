// rollback: return a branch to one of its workspace's versions. A branch the
// agent owns goes back at once; any other (a person's work) becomes a
// request to a person, answered like request_promote.
import { z } from 'zod';
import { Id } from '../../../../privileged-helper/src/protocol/names.js';
import { mayActAtOnce } from '../../helper-client/requests.js';
import { requestDecision } from '../asking.js';
import { Branch, Reason, waitSeconds } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const rollbackTool = defineTool({
  name: 'rollback',
  title: 'Roll a branch back',
  description:
    "Returns a branch to a version's processes and files (see list_branches for versions). What the branch did since is lost unless you keep it or checkpoint it first. A branch you own (you made it and no person has acted on it) goes back at once; any other becomes a request to a person with your reason, answered as soon as they decide.",
  input: {
    branch: Branch,
    version: Id.describe('the version id (8 hex digits)'),
    keep: z.boolean().optional().describe('keep what the running branch was as a version ("before rollback to …"; list_branches shows it)'),
    reason: Reason.optional().describe('why, for a branch that is not yours: the person deciding reads it'),
    wait_seconds: waitSeconds('decision'),
  },
  annotations: { destructiveHint: true, idempotentHint: true },
  async run(args, h, call) {
    const ws = await h.request('workspace.get', { workspace: args.branch });
    if (!mayActAtOnce(h.identity, ws)) {
      if (!args.reason) return { ...textResult(`${ws.name} is not yours to roll back: give a reason, and a person is asked`), isError: true };
      return requestDecision(h, ws.id, { kind: 'branch.rollback', version: args.version }, args.reason, args.wait_seconds, call);
    }
    const w = await h.request('branch.rollback', { workspace: ws.id, version: args.version, ...(args.keep && { keep: true }) });
    return textResult(`${w.name} is back at version ${args.version} (${w.state})`, {
      branch: { id: w.id, name: w.name },
      version: args.version,
      state: w.state,
    });
  },
});
