// discard: remove a branch. One the caller forked itself goes at once; any
// other becomes a request to a person (as request_discard).
import { mayActAtOnce } from '../../helper-client/requests.js';
import { requestDecision } from '../asking.js';
import { Branch, Reason, waitSeconds } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const discardTool = defineTool({
  name: 'discard',
  title: 'Discard a branch',
  description:
    'Removes a branch with its processes and files (its versions are kept). A branch you forked yourself is removed at once; any other becomes a request to a person, answered like request_discard.',
  input: { branch: Branch, reason: Reason, wait_seconds: waitSeconds('decision') },
  annotations: { destructiveHint: true },
  async run(args, h, call) {
    const ws = await h.request('workspace.get', { workspace: args.branch });
    if (!mayActAtOnce(h.identity, ws)) return requestDecision(h, args.branch, { kind: 'branch.discard' }, args.reason, args.wait_seconds, call);
    await h.request('workspace.delete', { workspace: ws.id });
    return textResult(`discarded ${ws.name} (${ws.id})`, { discarded: { id: ws.id, name: ws.name } });
  },
});
