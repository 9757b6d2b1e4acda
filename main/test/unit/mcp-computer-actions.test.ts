// The computer tool's vocabulary (Anthropic's computer-use actions) mapped onto
// the helper's desktop.* calls, and its answers in words.
import { describe, expect, it } from 'vitest';
import { chunks, desktopCalls, describeOutcome, pauseMs, type ComputerArgs } from '../../src/mcp/computer-actions.js';
import { MAX_TYPED_CHARS } from '../../../privileged-helper/src/protocol/desktop.js';

const on = (args: Omit<ComputerArgs, 'branch'>) => desktopCalls({ branch: 'one-1', ...args });
const SCREEN = { width: 1280, height: 800 };

describe('computer actions → desktop calls', () => {
  it('maps scroll direction and amount onto wheel notches (dy > 0 down, dx > 0 right), 3 by default', () => {
    expect(on({ action: 'scroll', scroll_direction: 'down', scroll_amount: 5 })).toEqual([
      { method: 'desktop.scroll', params: { workspace: 'one-1', dx: 0, dy: 5 } },
    ]);
    expect(on({ action: 'scroll', scroll_direction: 'up', coordinate: [700, 450] })).toEqual([
      { method: 'desktop.scroll', params: { workspace: 'one-1', x: 700, y: 450, dx: 0, dy: -3 } },
    ]);
    expect(on({ action: 'scroll', scroll_direction: 'left', scroll_amount: 2 })[0]!.params).toMatchObject({ dx: -2, dy: 0 });
    expect(on({ action: 'scroll', scroll_direction: 'right', scroll_amount: 1 })[0]!.params).toMatchObject({ dx: 1, dy: 0 });
    expect(on({ action: 'scroll', scroll_direction: 'down', text: 'ctrl' })[0]!.params).toMatchObject({ dy: 3, modifiers: 'ctrl' });
  });

  it('maps zoom, hold_key and the three waits: a pause (no call), until still, until changed since the last frame', () => {
    const region = { x: 100, y: 200, width: 300, height: 100 };
    expect(on({ action: 'zoom', region, width: 900 })).toEqual([{ method: 'desktop.zoom', params: { workspace: 'one-1', region, width: 900 } }]);
    expect(() => on({ action: 'zoom' })).toThrow('zoom needs region');
    expect(on({ action: 'hold_key', text: 'shift', duration: 1.5 })).toEqual([
      { method: 'desktop.holdKey', params: { workspace: 'one-1', keys: 'shift', durationMs: 1500 } },
    ]);
    expect(() => on({ action: 'hold_key', text: 'shift' })).toThrow('hold_key needs duration');
    expect(on({ action: 'wait', duration: 2 })).toEqual([]);
    expect(pauseMs({ branch: 'one-1', action: 'wait', duration: 2 })).toBe(2000);
    expect(pauseMs({ branch: 'one-1', action: 'wait' })).toBe(1000);
    expect(on({ action: 'wait_still', duration: 2 })).toEqual([
      { method: 'desktop.wait', params: { workspace: 'one-1', until: 'still', timeoutMs: 2000, quietMs: 500 } },
    ]);
    expect(desktopCalls({ branch: 'one-1', action: 'wait_changed' }, 'abcdef01.4')).toEqual([
      { method: 'desktop.wait', params: { workspace: 'one-1', until: 'changed', timeoutMs: 5000, since: 'abcdef01.4' } },
    ]);
    expect(desktopCalls({ branch: 'one-1', action: 'wait_changed', since: 'abcdef01.9', duration: 3 }, 'abcdef01.4')[0]!.params).toMatchObject({
      since: 'abcdef01.9',
      timeoutMs: 3000,
    });
  });

  it('maps the click kinds onto button and count, with keys held and the pointer position by default', () => {
    const kinds = {
      left_click: ['left', 1],
      right_click: ['right', 1],
      middle_click: ['middle', 1],
      double_click: ['left', 2],
      triple_click: ['left', 3],
    } as const;
    for (const [action, [button, count]] of Object.entries(kinds)) {
      expect(on({ action: action as keyof typeof kinds, coordinate: [10, 20] }), action).toEqual([
        { method: 'desktop.click', params: { workspace: 'one-1', x: 10, y: 20, button, count, modifiers: undefined } },
      ]);
    }
    expect(on({ action: 'left_click', text: 'shift' })).toEqual([
      { method: 'desktop.click', params: { workspace: 'one-1', button: 'left', count: 1, modifiers: 'shift' } },
    ]);
  });

  it('maps moves, drags and single button presses', () => {
    expect(on({ action: 'mouse_move', coordinate: [5, 6] })).toEqual([{ method: 'desktop.move', params: { workspace: 'one-1', x: 5, y: 6 } }]);
    expect(on({ action: 'left_click_drag', start_coordinate: [1, 2], coordinate: [300, 400] })).toEqual([
      { method: 'desktop.drag', params: { workspace: 'one-1', from: { x: 1, y: 2 }, to: { x: 300, y: 400 }, button: 'left' } },
    ]);
    expect(on({ action: 'left_mouse_down' })).toEqual([{ method: 'desktop.button', params: { workspace: 'one-1', button: 'left', action: 'down' } }]);
    expect(on({ action: 'left_mouse_up', coordinate: [7, 8] })).toEqual([
      { method: 'desktop.button', params: { workspace: 'one-1', x: 7, y: 8, button: 'left', action: 'up' } },
    ]);
  });

  it('maps keys, screenshots and the pointer position', () => {
    expect(on({ action: 'key', text: 'ctrl+l Return' })).toEqual([{ method: 'desktop.key', params: { workspace: 'one-1', keys: 'ctrl+l Return' } }]);
    expect(on({ action: 'cursor_position' })).toEqual([{ method: 'desktop.cursor', params: { workspace: 'one-1' } }]);
    const region = { x: 0, y: 0, width: 200, height: 100 };
    expect(on({ action: 'screenshot', region, scale: 0.5 })).toEqual([{ method: 'desktop.screenshot', params: { workspace: 'one-1', region, scale: 0.5 } }]);
  });

  it('types long text in calls the helper takes, never splitting a character', () => {
    const text = `${'a'.repeat(MAX_TYPED_CHARS - 1)}😀${'b'.repeat(10)}`;
    const calls = on({ action: 'type', text });
    expect(calls.map((c) => c.method)).toEqual(['desktop.type', 'desktop.type']);
    const pieces = calls.map((c) => (c.params as { text: string }).text);
    expect(pieces.join('')).toBe(text);
    expect(pieces.every((p) => p.length <= MAX_TYPED_CHARS)).toBe(true);
    expect(pieces[1]!.startsWith('😀')).toBe(true);
    expect(chunks('', 10)).toEqual([]);
  });

  it('waits for a still screen for at most the duration (5 s by default)', () => {
    expect(on({ action: 'wait_still' })).toEqual([{ method: 'desktop.wait', params: { workspace: 'one-1', until: 'still', timeoutMs: 5000, quietMs: 500 } }]);
    expect(on({ action: 'wait_still', duration: 2.5 })[0]!.params).toMatchObject({ timeoutMs: 2500, quietMs: 500 });
    // Shorter than the quiet time: still for all of it (the helper refuses quietMs > timeoutMs).
    expect(on({ action: 'wait_still', duration: 0.01 })[0]!.params).toMatchObject({ timeoutMs: 50, quietMs: 50 });
  });

  it('refuses missing and stray fields, naming them', () => {
    expect(() => on({ action: 'mouse_move' })).toThrow(expect.objectContaining({ code: 'E_INVALID_PARAMS', message: 'mouse_move needs coordinate' }));
    expect(() => on({ action: 'left_click_drag', coordinate: [1, 1] })).toThrow('left_click_drag needs start_coordinate');
    expect(() => on({ action: 'scroll' })).toThrow('scroll needs scroll_direction');
    expect(() => on({ action: 'type' })).toThrow('type needs text');
    expect(() => on({ action: 'key', text: 'a', coordinate: [1, 1] })).toThrow('key does not take coordinate (it takes text)');
    expect(() => on({ action: 'cursor_position', duration: 1 })).toThrow('cursor_position does not take duration (it takes no other field)');
    expect(() => on({ action: 'screenshot', text: 'x' })).toThrow('screenshot does not take text (it takes region, scale)');
  });
});

describe('computer answers in words', () => {
  it('describes screenshots, waits and pointer actions', () => {
    const frame = '0123abcd.1';
    const shot = {
      png: '',
      width: 100,
      height: 50,
      region: { x: 0, y: 0, width: 200, height: 100 },
      scale: 0.5,
      screen: SCREEN,
      cursor: { x: 3, y: 4 },
      frame,
      at: '',
    };
    expect(describeOutcome({ branch: 'b', action: 'screenshot' }, shot)).toBe(
      'screenshot (100x50 px) of a 200x100 region at 0,0 of the 1280x800 screen; the pointer is at 3,4',
    );
    expect(describeOutcome({ branch: 'b', action: 'screenshot' }, { ...shot, width: 1280, height: 800, region: { x: 0, y: 0, ...SCREEN } })).toBe(
      'screenshot (1280x800 px) of the 1280x800 screen; the pointer is at 3,4',
    );
    expect(describeOutcome({ branch: 'b', action: 'zoom' }, { ...shot, width: 600, height: 300, scale: 3 })).toBe(
      'zoom (600x300 px, zoomed 3x) of a 200x100 region at 0,0 of the 1280x800 screen; the pointer is at 3,4',
    );
    expect(describeOutcome({ branch: 'b', action: 'wait_changed' }, { satisfied: true, waitedMs: 0, screen: SCREEN, frame })).toBe(
      'the screen changed (after 0 ms of waiting)',
    );
    expect(describeOutcome({ branch: 'b', action: 'wait_still' }, { satisfied: true, waitedMs: 612, screen: SCREEN, frame })).toBe(
      'the screen was still after 612 ms',
    );
    expect(describeOutcome({ branch: 'b', action: 'wait_still' }, { satisfied: false, waitedMs: 5000, screen: SCREEN, frame })).toMatch(
      /still changing after 5000 ms/,
    );
    expect(describeOutcome({ branch: 'b', action: 'double_click' }, { cursor: { x: 9, y: 8 }, screen: SCREEN, frame })).toBe(
      'double click done; the pointer is now at 9,8 (screen 1280x800)',
    );
    expect(describeOutcome({ branch: 'b', action: 'cursor_position' }, { cursor: { x: 9, y: 8 }, screen: SCREEN, frame })).toBe(
      'the pointer is at 9,8 (screen 1280x800)',
    );
  });
});
