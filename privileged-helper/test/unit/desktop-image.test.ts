import { PNG } from 'pngjs';
import { describe, expect, it } from 'vitest';
import { crop, encodePng, scaleDown, scaledSize, type Image } from '../../src/desktop/image.js';

/** An image whose pixel (x, y) is (x, y, x + y), unused byte 0xee (it must not leak into the PNG). */
function gradient(width: number, height: number): Image {
  const pixels = Buffer.alloc(width * height * 4);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) pixels.set([x, y, (x + y) & 255, 0xee], (y * width + x) * 4);
  return { width, height, pixels };
}

const rgb = (img: Image, x: number, y: number) => [...img.pixels.subarray((y * img.width + x) * 4, (y * img.width + x) * 4 + 3)];

describe('encodePng', () => {
  it('encodes RGB that decodes back to the same pixels', async () => {
    const img = gradient(37, 23);
    const png = PNG.sync.read(await encodePng(img));
    expect([png.width, png.height]).toEqual([37, 23]);
    for (let y = 0; y < 23; y++) {
      for (let x = 0; x < 37; x++) {
        const i = (y * 37 + x) * 4;
        expect([...png.data.subarray(i, i + 4)]).toEqual([...rgb(img, x, y), 255]);
      }
    }
  });

  it('encodes a 1x1 image', async () => {
    const png = PNG.sync.read(await encodePng({ width: 1, height: 1, pixels: Buffer.from([1, 2, 3, 4]) }));
    expect([...png.data]).toEqual([1, 2, 3, 255]);
  });
});

describe('crop', () => {
  it('cuts out the region', () => {
    const part = crop(gradient(20, 10), { x: 3, y: 4, width: 5, height: 2 });
    expect([part.width, part.height]).toEqual([5, 2]);
    expect(rgb(part, 0, 0)).toEqual([3, 4, 7]);
    expect(rgb(part, 4, 1)).toEqual([7, 5, 12]);
  });

  it('refuses a region past the edge', () => {
    expect(() => crop(gradient(20, 10), { x: 18, y: 0, width: 3, height: 1 })).toThrow(/outside the 20x10 image/);
  });
});

describe('scaleDown', () => {
  it('averages each box of source pixels (not nearest-neighbour)', () => {
    // A 1-pixel checkerboard of black and white: nearest-neighbour would keep one colour, a box filter gives grey.
    const board: Image = { width: 4, height: 4, pixels: Buffer.alloc(64) };
    for (let y = 0; y < 4; y++) for (let x = 0; x < 4; x++) if ((x + y) % 2) board.pixels.fill(255, (y * 4 + x) * 4, (y * 4 + x) * 4 + 3);
    const half = scaleDown(board, 0.5);
    expect([half.width, half.height]).toEqual([2, 2]);
    for (const [x, y] of [
      [0, 0],
      [1, 0],
      [0, 1],
      [1, 1],
    ] as const)
      expect(rgb(half, x, y)).toEqual([128, 128, 128]);
  });

  it('gives the size of the region times the scale, at least 1x1', () => {
    expect(scaledSize(1280, 800, 0.5)).toEqual({ width: 640, height: 400 });
    expect(scaledSize(1280, 800, 0.3333)).toEqual({ width: 427, height: 267 });
    expect(scaledSize(3, 3, 0.01)).toEqual({ width: 1, height: 1 });
    const small = scaleDown(gradient(100, 60), 0.25);
    expect([small.width, small.height]).toEqual([25, 15]);
    // Box (4..7, 0..3): x averages 5.5, y 1.5.
    expect(rgb(small, 1, 0)).toEqual([6, 2, 7]);
  });

  it('keeps the image as it is at scale 1', () => {
    const img = gradient(5, 5);
    expect(scaleDown(img, 1)).toBe(img);
  });
});
