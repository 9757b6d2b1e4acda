// computer: see and drive a branch's desktop with the computer-use actions
// agents know (screenshot, zoom, clicks, drags, scrolls, keys, typing, waiting).
import { setTimeout as sleep } from 'node:timers/promises';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FrameToken, PointerState, Screenshot, WaitResult } from '../../../../privileged-helper/src/protocol/desktop.js';
import { GroveError } from '../../helper-client/client.js';
import { computerInput, describeOutcome, desktopCalls, pauseMs, type ComputerArgs, type DesktopCall } from '../computer-actions.js';
import type { Helper } from '../helper-link.js';
import { defineTool } from '../tool.js';

/** Per branch (as the agent names it): the frame its last call answered, where wait_changed starts from. */
const lastFrames = new Map<string, FrameToken>();

export const computerTool = defineTool({
  name: 'computer',
  title: "Use a branch's desktop",
  description: [
    "See and act on a running branch's Linux desktop (1280x800 by default: Chromium on the left, a terminal and an editor on the right).",
    'Actions: screenshot [region] [scale] (returns a PNG), zoom region [width] (a part of the screen at full resolution, scaled up to width),',
    'left_click / right_click / middle_click / double_click / triple_click [coordinate] [text: keys held],',
    'mouse_move coordinate, left_click_drag start_coordinate → coordinate, left_mouse_down / left_mouse_up [coordinate],',
    'scroll scroll_direction [scroll_amount] [coordinate] [text: keys held], key text (e.g. "ctrl+l", "Return"), hold_key text duration, type text,',
    'wait [duration] (a pause), wait_still [duration] (until the screen is still), wait_changed [duration] [since] (until the screen changed after your last action, or after the frame since),',
    'cursor_position. Coordinates are screen pixels from the top-left. Take a screenshot after acting to see the effect.',
  ].join(' '),
  input: computerInput,
  annotations: { destructiveHint: false },
  run: (args, h) => act(args, h),
});

/**
 * The frame of the branch's last action is from a session the helper has
 * closed since (a minute without calls, or a new desktop): nothing after it
 * can be told, so wait_changed waits from now. A frame the agent gave is its
 * own to renew (the helper's words say how).
 */
function sinceLost(err: unknown, call: DesktopCall, args: ComputerArgs, h: Helper): Promise<WaitResult> {
  if (!(err instanceof GroveError && err.code === 'E_CONFLICT' && call.method === 'desktop.wait' && call.params.since && args.since === undefined)) throw err;
  return h.request('desktop.wait', { ...call.params, since: undefined });
}

async function act(args: ComputerArgs, h: Helper): Promise<CallToolResult> {
  const calls = desktopCalls(args, lastFrames.get(args.branch));
  if (calls.length === 0) {
    const ms = pauseMs(args);
    await sleep(ms);
    return { content: [{ type: 'text', text: `waited ${ms} ms` }] };
  }
  let result: Screenshot | PointerState | WaitResult | undefined;
  for (const call of calls) result = await h.request(call.method, call.params).catch((err: unknown) => sinceLost(err, call, args, h));
  lastFrames.set(args.branch, result!.frame);
  const words = describeOutcome(args, result!);
  if ('png' in result!) {
    const { png, at: _at, ...picture } = result;
    return {
      content: [
        { type: 'image', data: png, mimeType: 'image/png' },
        { type: 'text', text: words },
      ],
      structuredContent: picture,
    };
  }
  return { content: [{ type: 'text', text: words }], structuredContent: { ...result! } };
}
