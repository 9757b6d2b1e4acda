// Keys as people and agents write them ('ctrl+l', 'alt+F4', 'Return',
// 'ctrl+a BackSpace'), and text, turned into X keysyms for RFB key events.
// Names follow xdotool / X keysym names, case-insensitively, with the usual
// aliases; a single character stands for itself. Text becomes one keysym per
// character: Latin-1 keysyms equal the code point, everything else uses the
// Unicode keysym range (0x01000000 + code point), which Xvnc maps onto a
// spare keycode on the fly.
import { GroveError } from '../protocol/wire.js';

/** A combo: keys pressed in this order and released in reverse ('ctrl+shift+t'). */
export interface Combo {
  /** As written, for summaries. */
  text: string;
  keysyms: number[];
}

const CONTROL_L = 0xffe3;
const SHIFT_L = 0xffe1;
const ALT_L = 0xffe9;
const SUPER_L = 0xffeb;
const RETURN = 0xff0d;
const TAB = 0xff09;
const UNICODE_KEYSYM = 0x01000000;
/** ASCII punctuation in code point order, matching the names in NAMED. */
const PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';

const MODIFIERS = new Map<string, number>([
  ['ctrl', CONTROL_L],
  ['control', CONTROL_L],
  ['control_l', CONTROL_L],
  ['control_r', 0xffe4],
  ['shift', SHIFT_L],
  ['shift_l', SHIFT_L],
  ['shift_r', 0xffe2],
  ['alt', ALT_L],
  ['alt_l', ALT_L],
  ['alt_r', 0xffea],
  ['altgr', 0xfe03],
  ['iso_level3_shift', 0xfe03],
  ['super', SUPER_L],
  ['super_l', SUPER_L],
  ['super_r', 0xffec],
  ['meta', SUPER_L],
  ['cmd', SUPER_L],
  ['win', SUPER_L],
]);

/** Every other key known by name (lower case); single characters need no name. */
const NAMED = new Map<string, number>([
  ['return', RETURN],
  ['enter', RETURN],
  ['escape', 0xff1b],
  ['esc', 0xff1b],
  ['tab', TAB],
  ['iso_left_tab', 0xfe20],
  ['space', 0x20],
  ['backspace', 0xff08],
  ['delete', 0xffff],
  ['del', 0xffff],
  ['insert', 0xff63],
  ['ins', 0xff63],
  ['home', 0xff50],
  ['end', 0xff57],
  ['left', 0xff51],
  ['up', 0xff52],
  ['right', 0xff53],
  ['down', 0xff54],
  ['page_up', 0xff55],
  ['pageup', 0xff55],
  ['pgup', 0xff55],
  ['prior', 0xff55],
  ['page_down', 0xff56],
  ['pagedown', 0xff56],
  ['pgdn', 0xff56],
  ['next', 0xff56],
  ['menu', 0xff67],
  ['print', 0xff61],
  ['pause', 0xff13],
  ['scroll_lock', 0xff14],
  ['sys_req', 0xff15],
  ['caps_lock', 0xffe5],
  ['num_lock', 0xff7f],
  ['kp_enter', 0xff8d],
  ['kp_home', 0xff95],
  ['kp_left', 0xff96],
  ['kp_up', 0xff97],
  ['kp_right', 0xff98],
  ['kp_down', 0xff99],
  ['kp_page_up', 0xff9a],
  ['kp_page_down', 0xff9b],
  ['kp_end', 0xff9c],
  ['kp_insert', 0xff9e],
  ['kp_delete', 0xff9f],
  ['kp_equal', 0xffbd],
  ['kp_multiply', 0xffaa],
  ['kp_add', 0xffab],
  ['kp_separator', 0xffac],
  ['kp_subtract', 0xffad],
  ['kp_decimal', 0xffae],
  ['kp_divide', 0xffaf],
  ...Array.from({ length: 10 }, (_, i) => [`kp_${i}`, 0xffb0 + i] as const),
  ...Array.from({ length: 24 }, (_, i) => [`f${i + 1}`, 0xffbe + i] as const),
  // X's names for ASCII punctuation ('ctrl+minus', 'ctrl+plus'): the keysym is the character.
  ...[
    'exclam quotedbl numbersign dollar percent ampersand apostrophe parenleft parenright asterisk plus comma minus period slash',
    'colon semicolon less equal greater question at',
    'bracketleft backslash bracketright asciicircum underscore grave',
    'braceleft bar braceright asciitilde',
  ]
    .join(' ')
    .split(' ')
    .map((name, i) => [name, PUNCTUATION.codePointAt(i)!] as const),
]);

const EXAMPLES = 'ctrl, shift, alt, super, Return, Escape, Tab, space, BackSpace, Delete, Home, End, Page_Up, Left, F5, KP_Enter, minus, or one character';

/** 'ctrl+a BackSpace' → the combos, in the order they are pressed. */
export function parseKeys(spec: string): Combo[] {
  const combos = spec.trim().split(/\s+/).filter(Boolean);
  if (combos.length === 0) throw new GroveError('E_INVALID_PARAMS', 'no keys given');
  return combos.map((text) => ({ text, keysyms: comboParts(text).map((part) => keysymOf(part, text)) }));
}

/** 'ctrl+shift' → the modifier keys to hold (during a click); anything but modifiers is refused. */
export function parseModifiers(spec: string): number[] {
  const parts = comboParts(spec.trim());
  for (const part of parts) {
    if (!MODIFIERS.has(part.toLowerCase())) {
      throw new GroveError('E_INVALID_PARAMS', `'${part}' in '${spec}' is not a modifier key: use ctrl, shift, alt, altgr or super, joined by '+'`);
    }
  }
  return parts.map((part) => MODIFIERS.get(part.toLowerCase())!);
}

/** The keysym that types one character (a code point). */
export function keysymOfChar(char: string): number {
  if (char === '\n' || char === '\r') return RETURN;
  if (char === '\t') return TAB;
  const cp = char.codePointAt(0)!;
  if (cp < 0x20 || (cp >= 0x7f && cp < 0xa0)) {
    throw new GroveError('E_INVALID_PARAMS', `cannot type the control character U+${cp.toString(16).toUpperCase().padStart(4, '0')}: use key for keys`);
  }
  return cp <= 0xff ? cp : UNICODE_KEYSYM + cp;
}

/** One keysym per character of the text; a Windows line end (CR LF) is one Return. */
export function keysymsOfText(text: string): number[] {
  return [...text.replace(/\r\n/g, '\n')].map(keysymOfChar);
}

/** 'ctrl+shift+t' → ['ctrl', 'shift', 't']; a '+' key is written last ('ctrl++') or alone ('+'). */
function comboParts(combo: string): string[] {
  if (combo === '+') return ['+'];
  const parts = combo.endsWith('++') ? [...combo.slice(0, -2).split('+'), '+'] : combo.split('+');
  if (parts.some((p) => p === '')) throw new GroveError('E_INVALID_PARAMS', `'${combo}' has an empty key: join keys with '+', e.g. ctrl+shift+t`);
  return parts;
}

function keysymOf(part: string, combo: string): number {
  if ([...part].length === 1) return keysymOfChar(part);
  const name = part.toLowerCase();
  const keysym = MODIFIERS.get(name) ?? NAMED.get(name);
  if (keysym === undefined) {
    const where = part === combo ? '' : ` in '${combo}'`;
    throw new GroveError('E_INVALID_PARAMS', `unknown key '${part}'${where}: use key names such as ${EXAMPLES}`);
  }
  return keysym;
}
