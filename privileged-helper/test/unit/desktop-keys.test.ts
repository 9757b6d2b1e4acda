import { describe, expect, it } from 'vitest';
import { keysymOfChar, keysymsOfText, parseKeys, parseModifiers } from '../../src/desktop/keys.js';

const keysyms = (spec: string) => parseKeys(spec).map((c) => c.keysyms);

describe('parseKeys', () => {
  it('reads combos the way xdotool writes them, several pressed in turn', () => {
    expect(parseKeys('ctrl+a BackSpace')).toEqual([
      { text: 'ctrl+a', keysyms: [0xffe3, 0x61] },
      { text: 'BackSpace', keysyms: [0xff08] },
    ]);
    expect(keysyms('alt+F4 ctrl+shift+t super+l')).toEqual([
      [0xffe9, 0xffc1],
      [0xffe3, 0xffe1, 0x74],
      [0xffeb, 0x6c],
    ]);
  });

  it('knows the usual names and aliases, case-insensitively', () => {
    const same: [string, number][] = [
      ['Control ctrl CTRL Control_L', 0xffe3],
      ['super meta cmd win Super_L', 0xffeb],
      ['Return enter ENTER', 0xff0d],
      ['Escape esc', 0xff1b],
      ['Page_Up pageup pgup Prior', 0xff55],
      ['Page_Down pagedown pgdn Next', 0xff56],
      ['Delete del', 0xffff],
      ['space', 0x20],
      ['Tab', 0xff09],
      ['Home', 0xff50],
      ['End', 0xff57],
      ['Insert', 0xff63],
      ['F1', 0xffbe],
      ['F12', 0xffc9],
      ['F24', 0xffd5],
      ['KP_0', 0xffb0],
      ['KP_Enter', 0xff8d],
      ['minus', 0x2d],
      ['plus', 0x2b],
      ['asciitilde', 0x7e],
      ['bar', 0x7c],
    ];
    for (const [names, keysym] of same) for (const name of names.split(' ')) expect(keysyms(name), name).toEqual([[keysym]]);
    expect(keysyms('Left Up Right Down')).toEqual([[0xff51], [0xff52], [0xff53], [0xff54]]);
  });

  it('takes single characters as themselves, case kept, and a + key written last', () => {
    expect(keysyms('A a $ é ж')).toEqual([[0x41], [0x61], [0x24], [0xe9], [0x01000436]]);
    expect(keysyms('ctrl++ +')).toEqual([[0xffe3, 0x2b], [0x2b]]);
  });

  it('names the unknown word and gives examples', () => {
    expect(() => parseKeys('ctrl+a Bakspace')).toThrow(/unknown key 'Bakspace': use key names such as ctrl, .*Return/);
    expect(() => parseKeys('ctl+a')).toThrow(/unknown key 'ctl' in 'ctl\+a'/);
    expect(() => parseKeys('ctrl+')).toThrow(/empty key/);
    expect(() => parseKeys('   ')).toThrow(/no keys/);
    expect(() => parseKeys('hyper+x')).toThrow(expect.objectContaining({ code: 'E_INVALID_PARAMS' }));
  });
});

describe('parseModifiers', () => {
  it('takes modifier keys only', () => {
    expect(parseModifiers('shift')).toEqual([0xffe1]);
    expect(parseModifiers('ctrl+Alt')).toEqual([0xffe3, 0xffe9]);
    expect(() => parseModifiers('ctrl+x')).toThrow(/'x' in 'ctrl\+x' is not a modifier key/);
  });
});

describe('text to keysyms', () => {
  it('maps Latin-1 to its code point and everything else to a Unicode keysym', () => {
    expect(keysymsOfText('Az~"')).toEqual([0x41, 0x7a, 0x7e, 0x22]);
    expect(keysymsOfText('é ß ж 漢 █')).toEqual([0xe9, 0x20, 0xdf, 0x20, 0x01000436, 0x20, 0x01006f22, 0x20, 0x01002588]);
    expect(keysymsOfText('😀')).toEqual([0x0101f600]); // one code point, not two surrogates
  });

  it('types line ends as Return (CR LF once) and a tab as Tab', () => {
    expect(keysymsOfText('a\r\nb\nc\td')).toEqual([0x61, 0xff0d, 0x62, 0xff0d, 0x63, 0xff09, 0x64]);
  });

  it('refuses other control characters', () => {
    expect(() => keysymOfChar('\u0007')).toThrow(/control character U\+0007/);
    expect(() => keysymsOfText('a\u0085')).toThrow(/U\+0085/);
  });
});
