// launch: a program in the branch's desktop session, left running.
import { z } from 'zod';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const launchTool = defineTool({
  name: 'launch',
  title: 'Start a program in a branch',
  description:
    "Starts a program on a running branch's desktop (DISPLAY :0, as root in its container), detached: it keeps running after the call, and belongs to the branch (forks copy it). Returns its pid in the branch. A program the branch does not have is refused by name. For a command whose output you want, use exec.",
  input: {
    branch: Branch,
    command: z.array(z.string().max(4096)).min(1).max(256).describe('[program, ...arguments], e.g. ["mousepad", "/root/notes.txt"]'),
  },
  annotations: { destructiveHint: false },
  async run(args, h) {
    const started = await h.request('desktop.launch', { workspace: args.branch, argv: args.command });
    return textResult(`started ${args.command[0]} in ${args.branch} (pid ${started.pid} there)`, started);
  },
});
