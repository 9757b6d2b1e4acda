// rollback: return a branch to one of its workspace's versions.
import { Id } from '../../../../privileged-helper/src/protocol/names.js';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const rollbackTool = defineTool({
  name: 'rollback',
  title: 'Roll a branch back',
  description:
    "Returns a branch to a version's processes and files (see list_branches for versions). What the branch did since is lost unless you checkpoint it first.",
  input: { branch: Branch, version: Id.describe('the version id (8 hex digits)') },
  annotations: { destructiveHint: true, idempotentHint: true },
  async run(args, h) {
    const w = await h.request('branch.rollback', { workspace: args.branch, version: args.version });
    return textResult(`${w.name} is back at version ${args.version} (${w.state})`, {
      branch: { id: w.id, name: w.name },
      version: args.version,
      state: w.state,
    });
  },
});
