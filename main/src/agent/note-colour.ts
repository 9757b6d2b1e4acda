// The start page's marker (privileged-helper/image/desktop/start.html): while
// its note field holds text, the top of the page takes a colour derived from
// that text, so a screenshot shows which text a branch holds without OCR.
// The same function runs in the page; keep the two alike.

export type Rgb = [number, number, number];

/** The page's colour while the note is empty. */
export const EMPTY_NOTE_RGB: Rgb = [13, 122, 95];

/** FNV-1a (32 bit) over the text's UTF-16 code units, as bytes 2, 1 and 0 of the hash. */
export function noteColour(text: string): Rgb {
  if (text === '') return EMPTY_NOTE_RGB;
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return [(h >>> 16) & 0xff, (h >>> 8) & 0xff, h & 0xff];
}
