// Where a point of a branch's screen is drawn in the app: noVNC draws the
// screen into a canvas that it scales to fit (or leaves full size and lets
// scroll), so a screen pixel lands at the canvas's offset plus the pixel times
// the canvas's scale. Selkies's client (a stream's frame) draws the screen
// fitted to its page at the screen's aspect, centred. The overlay measures
// the boxes; this does the sums.
import type { Point, ScreenSize } from '../../../main/src/api/contract.js';

export interface Box {
  left: number;
  top: number;
  width: number;
  height: number;
}

/** The inner box in the outer one's coordinates (both as the browser measures them, e.g. getBoundingClientRect). */
export function relativeBox(inner: Box, outer: Pick<Box, 'left' | 'top'>): Box {
  return { left: inner.left - outer.left, top: inner.top - outer.top, width: inner.width, height: inner.height };
}

/** The position of a screen point inside the overlay, or null when it is off the screen or nothing is drawn yet. */
export function pointerPosition(cursor: Point, screen: ScreenSize, canvas: Box): { left: number; top: number } | null {
  if (canvas.width <= 0 || canvas.height <= 0) return null;
  if (cursor.x >= screen.width || cursor.y >= screen.height) return null;
  return {
    left: canvas.left + (cursor.x * canvas.width) / screen.width,
    top: canvas.top + (cursor.y * canvas.height) / screen.height,
  };
}

/** Where a screen is drawn when scaled to fit the outer box at its own aspect, centred (Selkies's client in its frame). */
export function fittedBox(screen: ScreenSize, outer: Box): Box {
  const scale = Math.min(outer.width / screen.width, outer.height / screen.height);
  const width = screen.width * scale;
  const height = screen.height * scale;
  return { left: outer.left + (outer.width - width) / 2, top: outer.top + (outer.height - height) / 2, width, height };
}
