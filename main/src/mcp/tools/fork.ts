// fork: live copies of a running branch, each with its own desktop, network and files.
import { z } from 'zod';
import { Id, Name } from '../../../../privileged-helper/src/protocol/names.js';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const forkTool = defineTool({
  name: 'fork',
  title: 'Fork a branch',
  description:
    "Forks a running branch into 1-16 live sibling branches: each child continues from this moment with the same processes, screen and files, isolated from the others. With `version` (a checkpoint of the branch's workspace) the children continue from that version instead, and the branch itself is not touched. Try several ideas at once, then ask for the best to be promoted. You may discard branches you forked yourself. Takes a few seconds per copy.",
  input: {
    branch: Branch,
    copies: z.number().int().min(1).max(16).optional().describe('how many children (default 1)'),
    names: z.array(Name).max(16).optional().describe('names for the children, one each (default NAME-1, NAME-2, …)'),
    version: Id.optional().describe("a version (checkpoint) of the branch's workspace to restore the children from, instead of the branch as it runs"),
  },
  annotations: { destructiveHint: false },
  async run(args, h) {
    const report = await h.request('branch.fork', {
      workspace: args.branch,
      copies: args.copies ?? args.names?.length ?? 1,
      names: args.names,
      version: args.version,
    });
    const children = report.children.map((c) => ({ id: c.id, name: c.name, state: c.state }));
    const list = children.map((c) => `${c.name} (${c.id}, ${c.state})`).join(', ');
    const from = report.version ? ` from version ${report.version}` : '';
    return textResult(`forked${from} into ${children.length} in ${(report.timings.total / 1000).toFixed(1)} s: ${list}`, {
      source: report.source,
      ...(report.version && { version: report.version }),
      children,
      totalMs: report.timings.total,
    });
  },
});
