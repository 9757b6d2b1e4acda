import { describe, expect, it } from 'vitest';
import { needsKeymap, parseKeycodes, planSegments, type KeycodeMap } from '../../src/desktop/keymap.js';

/** As `xmodmap -pk` prints it (tabs and all), cut down. */
const XMODMAP_PK = [
  'There are 7 KeySyms per KeyCode; KeyCodes range from 8 to 255.',
  '',
  '    KeyCode\tKeysym (Keysym)\t...',
  '    Value  \tValue   (Name) \t...',
  '',
  '      8    \t',
  '     38    \t0x0061 (a)\t0x0041 (A)\t0x0061 (a)\t0x0041 (A)\t',
  '     93    \t',
  '    126    \t0x00b1 (plusminus)\t0x0000 (NoSymbol)\t0x00b1 (plusminus)\t',
  '    166    \t0x1008ff26 (XF86Back)\t0x0000 (NoSymbol)\t0x1008ff26 (XF86Back)\t',
  '    230    \t0x1000436 (U0436)\t0x0000 (NoSymbol)\t0x1000436 (U0436)\t',
  '    248    \t0x00e9 (eacute)\t0x00c9 (Eacute)\t0x00e9 (eacute)\t0x00c9 (Eacute)\t',
  '    250    \t',
].join('\n');

const ZHE = 0x01000436; // ж
const u = (cp: number) => 0x01000000 + cp;

describe('parseKeycodes', () => {
  it('reads every keycode with its keysyms, empty ones included', () => {
    const map = parseKeycodes(XMODMAP_PK);
    expect([...map.keys()]).toEqual([8, 38, 93, 126, 166, 230, 248, 250]);
    expect(map.get(38)).toEqual([0x61, 0x41, 0x61, 0x41]);
    expect(map.get(230)).toEqual([ZHE, 0, ZHE]);
    expect(map.get(93)).toEqual([]);
  });

  it('refuses output without keycodes', () => {
    expect(() => parseKeycodes('xmodmap: unable to open display')).toThrow(/no keycodes/);
  });
});

describe('planSegments', () => {
  const map = (): KeycodeMap => parseKeycodes(XMODMAP_PK);
  const chars = (...cps: number[]) => cps.map((cp) => (cp <= 0xff ? cp : u(cp)));

  it('types what the keymap has without changing it', () => {
    expect(planSegments([0x61, 0x41, 0xe9, 0xc9, ZHE], map())).toEqual([{ assign: [], keysyms: [0x61, 0x41, 0xe9, 0xc9, ZHE] }]);
  });

  it('puts missing characters on free keycodes from the top down, then on ones only added characters held', () => {
    const keysyms = chars(0x3b1, 0x3b2, 0x3b3, 0x3b4, 0x3b1);
    expect(planSegments(keysyms, map())).toEqual([
      {
        assign: [
          [250, u(0x3b1)],
          [93, u(0x3b2)],
          [8, u(0x3b3)],
          [248, u(0x3b4)],
        ],
        keysyms,
      },
    ]);
  });

  it('never reuses a keycode of the layout (XF86 keys, letters) and splits the text when keycodes run out', () => {
    // Free: 250, 93, 8; reusable: 248 (é/É), 230 (ж), 126 (±): six in all, so three per segment, taking turns.
    const keysyms = chars(0x3b1, 0x3b2, 0x3b3, 0x3b4, 0x3b5, 0x3b6, 0x3b7, 0x3b8);
    const segments = planSegments(keysyms, map());
    expect(segments.map((s) => s.keysyms.length)).toEqual([3, 3, 2]);
    const used = segments.flatMap((s) => s.assign.map(([code]) => code));
    expect(new Set(used)).toEqual(new Set([250, 93, 8, 248, 230, 126]));
    expect(segments[2]!.assign).toEqual([
      [250, u(0x3b7)],
      [93, u(0x3b8)],
    ]);
  });

  it("never gives a keycode the segment before was given: that segment's keys may not have been read yet", () => {
    const keysyms = chars(...Array.from({ length: 20 }, (_, n) => 0x3b1 + n));
    const segments = planSegments(keysyms, map());
    expect(segments.flatMap((s) => s.keysyms)).toEqual(keysyms);
    for (let n = 1; n < segments.length; n++) {
      const before = new Set(segments[n - 1]!.assign.map(([code]) => code));
      expect(segments[n]!.assign.filter(([code]) => before.has(code))).toEqual([]);
    }
  });

  it('avoids the keycodes the last call gave, unless nothing else is left', () => {
    expect(planSegments(chars(0x3b1, 0x3b2), map(), new Set([250, 93]))).toEqual([
      {
        assign: [
          [8, u(0x3b1)],
          [248, u(0x3b2)],
        ],
        keysyms: chars(0x3b1, 0x3b2),
      },
    ]);
    // Only 250 could take new characters: it is given again rather than not at all.
    const full: KeycodeMap = new Map([
      [38, [0x61, 0x41]],
      [166, [0x1008ff26]],
      [250, []],
    ]);
    expect(planSegments(chars(0x3b1, 0x3b2), full, new Set([250]))).toEqual([
      { assign: [[250, u(0x3b1)]], keysyms: chars(0x3b1) },
      { assign: [[250, u(0x3b2)]], keysyms: chars(0x3b2) },
    ]);
  });

  it('keeps a keycode whose character the segment types', () => {
    // ж is typed, so keycode 230 keeps it while the other five free/reusable keycodes are handed out.
    const keysyms = chars(0x436, 0x3b1, 0x3b2, 0x3b3, 0x3b4, 0x3b5, 0x436);
    const segments = planSegments(keysyms, map());
    expect(segments).toHaveLength(1);
    expect(segments[0]!.assign.map(([code]) => code).sort()).toEqual([126, 248, 250, 8, 93].sort());
  });

  it('leaves ASCII and named keys alone', () => {
    expect(needsKeymap([0x61, 0xffe3, 0xff0d, 0x1008ff26])).toBe(false);
    expect(needsKeymap([0x61, 0xe9])).toBe(true);
    expect(needsKeymap([ZHE])).toBe(true);
  });
});
