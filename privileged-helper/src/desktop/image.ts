// Screenshots from the framebuffer: crop to a region, scale down with a box
// filter (each output pixel averages the source pixels it covers, so text and
// thin lines fade instead of vanishing as with nearest-neighbour), scale up
// (a zoom) by repeating pixels (edges stay sharp, no colour is made up), and encode
// as PNG. The encoder is a small one over Node's own zlib: RGB, the Up filter
// (screens repeat a lot from row to row) and deflate level 1 (higher levels
// barely shrink a screen) keep a screenshot cheap, where pngjs's general
// encoder costs several times more per frame.
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Rect } from './rfb-protocol.js';

/** Pixels as the framebuffer holds them: 4 bytes each (R, G, B, unused), rows top to bottom, no padding. */
export interface Image {
  width: number;
  height: number;
  pixels: Buffer;
}

const BPP = 4;
const deflate = promisify(zlib.deflate);
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const FILTER_UP = 2;
const DEFLATE_LEVEL = 1;

export function crop(image: Image, r: Rect): Image {
  if (r.x + r.width > image.width || r.y + r.height > image.height) {
    throw new Error(`region ${r.width}x${r.height}+${r.x}+${r.y} is outside the ${image.width}x${image.height} image`);
  }
  const pixels = Buffer.allocUnsafe(r.width * r.height * BPP);
  for (let row = 0; row < r.height; row++) {
    const from = ((r.y + row) * image.width + r.x) * BPP;
    image.pixels.copy(pixels, row * r.width * BPP, from, from + r.width * BPP);
  }
  return { width: r.width, height: r.height, pixels };
}

/** The image's size times scale (0 < scale ≤ 1), at least 1x1. */
export function scaledSize(width: number, height: number, scale: number): { width: number; height: number } {
  return { width: Math.max(1, Math.round(width * scale)), height: Math.max(1, Math.round(height * scale)) };
}

/** Box filter: output pixel (x, y) is the mean of the source pixels whose block it is. */
export function scaleDown(image: Image, scale: number): Image {
  const out = scaledSize(image.width, image.height, scale);
  if (out.width === image.width && out.height === image.height) return image;
  const xs = boxEdges(image.width, out.width);
  const ys = boxEdges(image.height, out.height);
  // Columns first: each source row is summed into out.width boxes, then rows of sums into out.height boxes.
  const rowSums = new Float64Array(image.height * out.width * 3);
  for (let y = 0; y < image.height; y++) {
    for (let ox = 0; ox < out.width; ox++) {
      let r = 0, g = 0, b = 0; // prettier-ignore
      for (let x = xs[ox]!, i = (y * image.width + x) * BPP; x < xs[ox + 1]!; x++, i += BPP) {
        r += image.pixels[i]!;
        g += image.pixels[i + 1]!;
        b += image.pixels[i + 2]!;
      }
      const o = (y * out.width + ox) * 3;
      rowSums[o] = r;
      rowSums[o + 1] = g;
      rowSums[o + 2] = b;
    }
  }
  const pixels = Buffer.alloc(out.width * out.height * BPP);
  for (let oy = 0; oy < out.height; oy++) {
    for (let ox = 0; ox < out.width; ox++) {
      let r = 0, g = 0, b = 0; // prettier-ignore
      for (let y = ys[oy]!; y < ys[oy + 1]!; y++) {
        const o = (y * out.width + ox) * 3;
        r += rowSums[o]!;
        g += rowSums[o + 1]!;
        b += rowSums[o + 2]!;
      }
      const n = (xs[ox + 1]! - xs[ox]!) * (ys[oy + 1]! - ys[oy]!);
      const i = (oy * out.width + ox) * BPP;
      pixels[i] = Math.round(r / n);
      pixels[i + 1] = Math.round(g / n);
      pixels[i + 2] = Math.round(b / n);
    }
  }
  return { ...out, pixels };
}

/** Each output pixel is the source pixel it falls on (scale ≥ 1). */
export function scaleUp(image: Image, scale: number): Image {
  const out = scaledSize(image.width, image.height, scale);
  if (out.width === image.width && out.height === image.height) return image;
  const sourceX = Array.from({ length: out.width }, (_, x) => Math.floor((x * image.width) / out.width) * BPP);
  const stride = out.width * BPP;
  const pixels = Buffer.allocUnsafe(stride * out.height);
  let previousRow = -1;
  for (let y = 0; y < out.height; y++) {
    const row = Math.floor((y * image.height) / out.height);
    const o = y * stride;
    // A source row repeated is copied whole from the output row before.
    if (row === previousRow) {
      pixels.copy(pixels, o, o - stride, o);
      continue;
    }
    previousRow = row;
    const from = row * image.width * BPP;
    for (let x = 0; x < out.width; x++) {
      const i = from + sourceX[x]!;
      const j = o + x * BPP;
      pixels[j] = image.pixels[i]!;
      pixels[j + 1] = image.pixels[i + 1]!;
      pixels[j + 2] = image.pixels[i + 2]!;
    }
  }
  return { ...out, pixels };
}

/** Where each of `to` boxes starts along a source of `from` pixels (to + 1 edges; every box at least one pixel). */
function boxEdges(from: number, to: number): number[] {
  return Array.from({ length: to + 1 }, (_, i) => Math.floor((i * from) / to));
}

/** PNG, 8-bit RGB. The deflate runs on libuv's thread pool, off the helper's event loop. */
export async function encodePng(image: Image): Promise<Buffer> {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(image.width, 0);
  header.writeUInt32BE(image.height, 4);
  header.writeUInt8(8, 8); // bit depth
  header.writeUInt8(2, 9); // colour type: RGB
  // compression, filter method, interlace: 0
  const data = await deflate(filteredRows(image), { level: DEFLATE_LEVEL });
  return Buffer.concat([PNG_SIGNATURE, chunk('IHDR', header), chunk('IDAT', data), chunk('IEND', Buffer.alloc(0))]);
}

/** Each row: the Up filter byte, then each byte of R, G, B minus the same byte in the row above (mod 256; row 0 as is). */
function filteredRows(image: Image): Buffer {
  const { width, height, pixels } = image;
  const out = Buffer.allocUnsafe((1 + width * 3) * height);
  const stride = width * BPP;
  let o = 0;
  for (let y = 0; y < height; y++) {
    out[o++] = FILTER_UP;
    const end = (y + 1) * stride;
    if (y === 0) {
      for (let i = 0; i < end; i += BPP, o += 3) pixels.copy(out, o, i, i + 3);
      continue;
    }
    for (let i = y * stride, a = i - stride; i < end; i += BPP, a += BPP) {
      out[o++] = pixels[i]! - pixels[a]!;
      out[o++] = pixels[i + 1]! - pixels[a + 1]!;
      out[o++] = pixels[i + 2]! - pixels[a + 2]!;
    }
  }
  return out;
}

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length, 0);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(zlib.crc32(data, zlib.crc32(head.subarray(4))), 0);
  return Buffer.concat([head, data, crc]);
}
