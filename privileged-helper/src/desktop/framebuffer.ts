// The client's copy of a desktop's screen: 4 bytes a pixel (R, G, B, unused),
// rows top to bottom, kept current by the RFB session's updates. Each write
// reports the rectangle of pixels it changed, which is what "the screen
// changed" means to wait().
import type { Rect } from './rfb-protocol.js';

export const BYTES_PER_PIXEL = 4;

export class Framebuffer {
  pixels: Buffer;

  constructor(
    public width: number,
    public height: number,
  ) {
    this.pixels = Buffer.alloc(width * height * BYTES_PER_PIXEL);
  }

  /** A new screen size: the old content is gone (the server sends the whole new screen). */
  resize(width: number, height: number): void {
    this.width = width;
    this.height = height;
    this.pixels = Buffer.alloc(width * height * BYTES_PER_PIXEL);
  }

  contains(r: Rect): boolean {
    return r.x + r.width <= this.width && r.y + r.height <= this.height;
  }

  /** Raw rectangle data, rows of r.width pixels; returns the smallest rectangle holding every pixel that changed. */
  putRaw(r: Rect, data: Buffer): Rect | null {
    this.check(r);
    const rowBytes = r.width * BYTES_PER_PIXEL;
    let box: Rect | null = null;
    for (let row = 0; row < r.height; row++) {
      const at = this.offset(r.x, r.y + row);
      const src = data.subarray(row * rowBytes, (row + 1) * rowBytes);
      const dst = this.pixels.subarray(at, at + rowBytes);
      if (!src.equals(dst)) box = union(box, changedSpan(src, dst, r.x, r.y + row));
      src.copy(this.pixels, at);
    }
    return box;
  }

  /** CopyRect: r's pixels come from the same-sized rectangle at (srcX, srcY); returns what changed, as putRaw. */
  copyRect(r: Rect, srcX: number, srcY: number): Rect | null {
    this.check(r);
    this.check({ x: srcX, y: srcY, width: r.width, height: r.height });
    // Through a temporary copy: source and destination may overlap.
    const rowBytes = r.width * BYTES_PER_PIXEL;
    const moved = Buffer.allocUnsafe(rowBytes * r.height);
    for (let row = 0; row < r.height; row++) this.pixels.copy(moved, row * rowBytes, this.offset(srcX, srcY + row), this.offset(srcX, srcY + row) + rowBytes);
    return this.putRaw(r, moved);
  }

  private offset(x: number, y: number): number {
    return (y * this.width + x) * BYTES_PER_PIXEL;
  }

  /** Throws unless r lies inside the screen: checked before a rectangle's pixels are read, so a size the screen cannot explain is never read. */
  check(r: Rect): void {
    if (!this.contains(r)) throw new Error(`rectangle ${r.width}x${r.height}+${r.x}+${r.y} is outside the ${this.width}x${this.height} screen`);
  }
}

/** The part of one row that differs, from the first differing pixel to the last (rows known to differ). */
function changedSpan(a: Buffer, b: Buffer, x: number, y: number): Rect {
  const pixels = a.length / BYTES_PER_PIXEL;
  let first = 0;
  while (first < pixels && a.readUInt32LE(first * BYTES_PER_PIXEL) === b.readUInt32LE(first * BYTES_PER_PIXEL)) first++;
  let last = pixels - 1;
  while (last > first && a.readUInt32LE(last * BYTES_PER_PIXEL) === b.readUInt32LE(last * BYTES_PER_PIXEL)) last--;
  return { x: x + first, y, width: last - first + 1, height: 1 };
}

export function union(a: Rect | null, b: Rect | null): Rect | null {
  if (!a || !b) return a ?? b;
  const x = Math.min(a.x, b.x);
  const y = Math.min(a.y, b.y);
  return { x, y, width: Math.max(a.x + a.width, b.x + b.width) - x, height: Math.max(a.y + a.height, b.y + b.height) - y };
}
