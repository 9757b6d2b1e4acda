// computer: see and drive a branch's desktop with the computer-use actions
// agents know (screenshot, clicks, drags, scrolls, keys, typing, waiting).
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { PointerState, Screenshot, WaitResult } from '../../../../privileged-helper/src/protocol/desktop.js';
import { computerInput, describeOutcome, desktopCalls, type ComputerArgs } from '../computer-actions.js';
import type { Helper } from '../helper-link.js';
import { defineTool } from '../tool.js';

export const computerTool = defineTool({
  name: 'computer',
  title: "Use a branch's desktop",
  description: [
    "See and act on a running branch's Linux desktop (1280x800 by default: Chromium on the left, a terminal and an editor on the right).",
    'Actions: screenshot (returns a PNG), left_click / right_click / middle_click / double_click / triple_click [coordinate] [text: keys held],',
    'mouse_move coordinate, left_click_drag start_coordinate → coordinate, left_mouse_down / left_mouse_up [coordinate],',
    'scroll scroll_direction [scroll_amount] [coordinate], key text (e.g. "ctrl+l", "Return"), type text, wait [duration: until the screen is still],',
    'cursor_position. Coordinates are screen pixels from the top-left. Take a screenshot after acting to see the effect.',
  ].join(' '),
  input: computerInput,
  annotations: { destructiveHint: false },
  run: (args, h) => act(args, h),
});

async function act(args: ComputerArgs, h: Helper): Promise<CallToolResult> {
  let result: Screenshot | PointerState | WaitResult | undefined;
  for (const call of desktopCalls(args)) result = await h.request(call.method, call.params);
  const words = describeOutcome(args, result!);
  if (result && 'png' in result)
    return {
      content: [
        { type: 'image', data: result.png, mimeType: 'image/png' },
        { type: 'text', text: words },
      ],
    };
  return { content: [{ type: 'text', text: words }] };
}
