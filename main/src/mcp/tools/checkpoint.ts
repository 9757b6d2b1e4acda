// checkpoint: a version of a branch (its processes and files) to roll back to, saved in the background.
import { z } from 'zod';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const checkpointTool = defineTool({
  name: 'checkpoint',
  title: 'Checkpoint a branch',
  description:
    'Records a version of a running branch — its processes, memory and files — that rollback can return to later. The branch keeps running. It returns once the point in time is fixed; the version is saved in the background (a rollback to it waits until then).',
  input: { branch: Branch, label: z.string().max(200).optional().describe('a note to remember this version by') },
  annotations: { destructiveHint: false },
  async run(args, h) {
    const v = await h.request('branch.checkpoint', { workspace: args.branch, label: args.label });
    return textResult(`version ${v.id} of branch ${v.branch}${v.label ? ` (${v.label})` : ''}${v.saved ? '' : ', being saved'}`, {
      version: v.id,
      branch: v.branch,
      label: v.label,
      saved: v.saved,
    });
  },
});
