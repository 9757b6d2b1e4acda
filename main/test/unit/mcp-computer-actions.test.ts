// The computer tool's vocabulary (Anthropic's computer-use actions) mapped onto
// the helper's desktop.* calls, and its answers in words.
import { describe, expect, it } from 'vitest';
import { chunks, desktopCalls, describeOutcome, type ComputerArgs } from '../../src/mcp/computer-actions.js';
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
    expect(on({ action: 'wait' })).toEqual([{ method: 'desktop.wait', params: { workspace: 'one-1', until: 'still', timeoutMs: 5000, quietMs: 500 } }]);
    expect(on({ action: 'wait', duration: 2.5 })[0]!.params).toMatchObject({ timeoutMs: 2500, quietMs: 500 });
    // Shorter than the quiet time: still for all of it (the helper refuses quietMs > timeoutMs).
    expect(on({ action: 'wait', duration: 0.01 })[0]!.params).toMatchObject({ timeoutMs: 50, quietMs: 50 });
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
    const shot = { png: '', width: 100, height: 50, region: { x: 0, y: 0, width: 200, height: 100 }, screen: SCREEN, cursor: { x: 3, y: 4 }, at: '' };
    expect(describeOutcome({ branch: 'b', action: 'screenshot' }, shot)).toBe(
      'screenshot (100x50 px) of a 200x100 region at 0,0 of the 1280x800 screen; the pointer is at 3,4',
    );
    expect(describeOutcome({ branch: 'b', action: 'screenshot' }, { ...shot, width: 1280, height: 800, region: { x: 0, y: 0, ...SCREEN } })).toBe(
      'screenshot (1280x800 px) of the 1280x800 screen; the pointer is at 3,4',
    );
    expect(describeOutcome({ branch: 'b', action: 'wait' }, { satisfied: true, waitedMs: 612, screen: SCREEN })).toBe('the screen was still after 612 ms');
    expect(describeOutcome({ branch: 'b', action: 'wait' }, { satisfied: false, waitedMs: 5000, screen: SCREEN })).toMatch(/still changing after 5000 ms/);
    expect(describeOutcome({ branch: 'b', action: 'double_click' }, { cursor: { x: 9, y: 8 }, screen: SCREEN })).toBe(
      'double click done; the pointer is now at 9,8 (screen 1280x800)',
    );
    expect(describeOutcome({ branch: 'b', action: 'cursor_position' }, { cursor: { x: 9, y: 8 }, screen: SCREEN })).toBe(
      'the pointer is at 9,8 (screen 1280x800)',
    );
  });
});
