// open_url: a web address in the branch's own browser.
import { z } from 'zod';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const openUrlTool = defineTool({
  name: 'open_url',
  title: "Open a web page in a branch's browser",
  description:
    "Opens an http:// or https:// address in a new tab of the branch's browser (Chromium, inside the branch: what it reaches is the branch's network, under its outside-access rules). Other addresses (file://, chrome://, javascript:) are refused. Take a screenshot to see the page.",
  input: { branch: Branch, url: z.string().min(1).max(8192).describe('the address, e.g. http://127.0.0.1:3000/') },
  annotations: { destructiveHint: false },
  async run(args, h) {
    const opened = await h.request('desktop.openUrl', { workspace: args.branch, url: args.url });
    return textResult(`opening ${opened.url} in ${args.branch}'s browser`, opened);
  },
});
