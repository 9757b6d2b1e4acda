// windows: the desktop's windows, as its window manager lists them.
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

export const windowsTool = defineTool({
  name: 'windows',
  title: "A branch's windows",
  description:
    "The top-level windows of a running branch's desktop: id, title, application (e.g. Chromium, Mousepad, XTerm), pid in the branch, position and size in screen pixels, and which one has the keyboard focus.",
  input: { branch: Branch },
  annotations: { readOnlyHint: true },
  async run(args, h) {
    const list = await h.request('desktop.windows', { workspace: args.branch });
    const lines = list.windows.map((w) => `${w.focused ? '* ' : '  '}${w.app} "${w.title}" ${w.width}x${w.height} at ${w.x},${w.y} (${w.id})`);
    const head = `${list.windows.length} window${list.windows.length === 1 ? '' : 's'} on the ${list.screen.width}x${list.screen.height} screen (* has the focus)`;
    return textResult([head, ...lines].join('\n'), list);
  },
});
