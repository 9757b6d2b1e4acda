// copy_in: a file or folder of the agent's own, on the host, into a branch.
// Nothing leaves a branch this way: copying out onto the host is a person's.
import { BranchPath, HostPath } from '../../../../privileged-helper/src/protocol/names.js';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const copyInTool = defineTool({
  name: 'copy_in',
  title: 'Copy a file or folder into a branch',
  description:
    "Copies a file or folder from the host into a running branch, as `docker cp` does: into an existing folder under its own name, or as the path given. The host side is read as you (your user on the host): what you cannot read is refused. The branch side is resolved inside the branch. Copying out of a branch onto the host is for persons only; read a branch's files with exec.",
  input: {
    branch: Branch,
    from: HostPath.describe('an absolute path on the host that you may read'),
    to: BranchPath.describe('an absolute path in the branch: an existing folder receives the copy under its own name'),
  },
  annotations: { destructiveHint: true },
  async run(args, h) {
    const copied = await h.request('file.copyIn', { workspace: args.branch, from: args.from, to: args.to });
    return textResult(`copied ${copied.bytes} bytes into ${args.branch}:${args.to}`, { bytes: copied.bytes, branch: args.branch, to: args.to });
  },
});
