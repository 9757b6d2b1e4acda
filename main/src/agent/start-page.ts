// What an agent needs to know of the desktop's start page
// (privileged-helper/image/desktop/start.html on a 1280x800 desktop: Chromium
// on the left, 853x800 at 0,0): where its note field is, and which colour its
// top section shows — the colour tells which note a branch holds, no OCR needed.
import { PNG } from 'pngjs';
import type { Rgb } from './note-colour.js';

/** The middle of the page's note field (about x 53-667, y 213-260). */
export const NOTE_FIELD = { x: 360, y: 236 } as const;

/** A stretch of the page's top section below the note field, inside Chromium's window. */
const PAGE_SAMPLE = { x: 20, y: 290, width: 780, height: 480 } as const;

export interface ColourSeen {
  /** The colour most of the sample shows. */
  rgb: Rgb;
  /** Its share of the sample's pixels (0-1). */
  share: number;
}

/** The page's colour in a full-screen screenshot (PNG). */
export function pageColour(png: Buffer): ColourSeen {
  const image = PNG.sync.read(png);
  if (image.width < PAGE_SAMPLE.x + PAGE_SAMPLE.width || image.height < PAGE_SAMPLE.y + PAGE_SAMPLE.height) {
    throw new Error(`the screenshot is ${image.width}x${image.height}; the start page needs the 1280x800 desktop`);
  }
  const counts = new Map<number, number>();
  for (let y = PAGE_SAMPLE.y; y < PAGE_SAMPLE.y + PAGE_SAMPLE.height; y++) {
    for (let x = PAGE_SAMPLE.x; x < PAGE_SAMPLE.x + PAGE_SAMPLE.width; x++) {
      const i = (y * image.width + x) * 4;
      const key = (image.data[i]! << 16) | (image.data[i + 1]! << 8) | image.data[i + 2]!;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  const [key, count] = [...counts.entries()].reduce((best, e) => (e[1] > best[1] ? e : best));
  return { rgb: [(key >> 16) & 0xff, (key >> 8) & 0xff, key & 0xff], share: count / (PAGE_SAMPLE.width * PAGE_SAMPLE.height) };
}

/** Whether the page shows `rgb` over most of the sample (the pointer or a repaint may cover a little). */
export function shows(seen: ColourSeen, rgb: Rgb): boolean {
  return seen.rgb.join() === rgb.join() && seen.share >= 0.8;
}

/** The share of a picture's pixels (PNG, any size) that are exactly `rgb`. */
export function shareOf(png: Buffer, rgb: Rgb): number {
  const image = PNG.sync.read(png);
  let same = 0;
  for (let i = 0; i < image.data.length; i += 4) {
    if (image.data[i] === rgb[0] && image.data[i + 1] === rgb[1] && image.data[i + 2] === rgb[2]) same++;
  }
  return same / (image.width * image.height);
}
