// Room in the X keymap for any character. Xvnc types a keysym by finding a
// keycode that carries it; for one the layout lacks (é, ж, 漢) it writes the
// keysym onto a free keycode, but TigerVNC 1.12 never frees one again, and a
// US layout has only ~20-40 free: after that many distinct characters in a
// desktop's life (forks inherit it) further ones are silently dropped. So
// before typing, Grove puts the characters the keymap lacks onto keycodes
// itself, reusing those that only ever held such characters (its own and
// Xvnc's additions), a batch at a time, with xmodmap run inside the branch.
import { setTimeout as sleep } from 'node:timers/promises';
import { GroveError } from '../protocol/wire.js';
import { X_CATCH_UP_PY } from './x-catch-up.js';

/** keycode → its keysyms (0: none), as `xmodmap -pk` shows them. */
export type KeycodeMap = Map<number, number[]>;

/** Part of a text: first these keycodes get these keysyms, then the keysyms are typed. */
export interface Segment {
  assign: [keycode: number, keysym: number][];
  keysyms: number[];
}

/** Runs a command inside the branch (the helper's exec service), with DISPLAY set. */
export type RunInside = (argv: string[]) => Promise<{ exitCode: number; stdout: string; stderr: string }>;

/** Around a keymap change (see prepare): at least this long, and this long per keycode changed. */
const SETTLE_MS = 200;
const PER_KEYCODE_MS = 150;
/** The most a keymap change waits for the desktop's apps to catch up (x-catch-up.ts), in seconds. */
const CATCH_UP_S = 5;

/** A character beyond ASCII (Latin-1's upper half, or a Unicode keysym; not XF86's 0x1008xxxx): what a layout may lack. */
const beyondAscii = (k: number) => (k >= 0xa0 && k <= 0xff) || (k >= 0x01000100 && k <= 0x0110ffff);

/** The keycodes Grove may rewrite and the keysyms reachable without them, for planning. */
export function parseKeycodes(xmodmapPk: string): KeycodeMap {
  const map: KeycodeMap = new Map();
  for (const line of xmodmapPk.split('\n')) {
    const m = /^\s*(\d+)\s+((?:0x[0-9a-f]+ \([^)]*\)\s*)*)$/i.exec(line);
    if (m)
      map.set(
        Number(m[1]),
        [...m[2]!.matchAll(/0x([0-9a-f]+)/gi)].map((v) => parseInt(v[1]!, 16)),
      );
  }
  if (map.size === 0) throw new Error('xmodmap -pk printed no keycodes');
  return map;
}

/**
 * Splits the keysyms into segments whose missing keysyms fit on the keycodes
 * free to (re)use, and says which keycode gets which keysym before each one.
 * A keycode holding a keysym the segment types is not reused during it.
 *
 * Nor is one the segment before was given (for the first segment, `recent`:
 * those the last change gave), unless nothing else is left: an app that has
 * not read that segment's keys yet when the keymap changes reads them with
 * the new keysyms (seen with a desktop starved of CPU). So a text that needs
 * more than one segment gives each at most half the keycodes there are to
 * give, and the segments take turns.
 */
export function planSegments(keysyms: readonly number[], keycodes: KeycodeMap, recent: ReadonlySet<number> = new Set()): Segment[] {
  const atOnce = segmentsOf(keysyms, keycodes, recent, Infinity);
  if (atOnce.length === 1) return atOnce;
  const givable = [...keycodes.values()].filter((syms) => syms.every((k) => k === 0) || onlyAdded(syms)).length;
  return segmentsOf(keysyms, keycodes, recent, Math.max(1, Math.floor(givable / 2)));
}

function segmentsOf(keysyms: readonly number[], keycodes: KeycodeMap, recent: ReadonlySet<number>, most: number): Segment[] {
  const map = new Map([...keycodes].map(([code, syms]) => [code, [...syms]]));
  const segments: Segment[] = [];
  let avoid: ReadonlySet<number> = recent;
  let i = 0;
  while (i < keysyms.length) {
    const start = i;
    let taken = takeSegment(keysyms, start, map, avoid, most);
    if (taken.end === start) taken = takeSegment(keysyms, start, map, new Set(), most);
    if (taken.end === start) throw new GroveError('E_HOST', "the desktop's keymap has no keycode free for new characters");
    i = taken.end;
    for (const [code, keysym] of taken.plan) map.set(code, [keysym]);
    segments.push({ assign: taken.plan, keysyms: keysyms.slice(start, i) });
    if (taken.plan.length > 0) avoid = new Set(taken.plan.map(([code]) => code));
  }
  return segments;
}

/** The longest run of keysyms from `start` whose missing ones fit on at most `most` keycodes, none of them in `avoid`. */
function takeSegment(
  keysyms: readonly number[],
  start: number,
  map: KeycodeMap,
  avoid: ReadonlySet<number>,
  most: number,
): { end: number; plan: Segment['assign'] } {
  const wanted = new Set<number>();
  const reachable = reachableKeysyms(map);
  let plan: Segment['assign'] = [];
  let i = start;
  for (; i < keysyms.length; i++) {
    if (wanted.has(keysyms[i]!)) continue;
    wanted.add(keysyms[i]!);
    const next = assignments(wanted, map, reachable, avoid);
    if (!next || next.length > most) break;
    plan = next;
  }
  return { end: i, plan };
}

/** Keycodes for the wanted keysyms the map lacks, or null when there are not enough. */
function assignments(wanted: Set<number>, map: KeycodeMap, reachable: Set<number>, avoid: ReadonlySet<number>): Segment['assign'] | null {
  const missing = [...wanted].filter((k) => beyondAscii(k) && !reachable.has(k));
  if (missing.length === 0) return [];
  const inUse = (syms: number[]) => syms.some((k) => wanted.has(k));
  // From the top down, as Xvnc picks them (the lowest keycodes are the oddest to toolkits).
  const codes = (keep: (syms: number[]) => boolean) =>
    [...map]
      .filter(([code, syms]) => !avoid.has(code) && keep(syms))
      .map(([code]) => code)
      .sort((a, b) => b - a);
  const free = codes((syms) => syms.every((k) => k === 0));
  const reusable = codes((syms) => !inUse(syms) && onlyAdded(syms));
  const usable = [...free, ...reusable];
  return missing.length <= usable.length ? missing.map((k, n) => [usable[n]!, k]) : null;
}

/** The keysyms on some keycode's first two levels (unshifted, shifted), where Xvnc finds them. */
function reachableKeysyms(map: KeycodeMap): Set<number> {
  return new Set([...map.values()].flatMap((syms) => syms.slice(0, 2)));
}

/** A keycode that only holds one character beyond ASCII (and maybe its other case): added by Xvnc or Grove. */
function onlyAdded(syms: number[]): boolean {
  const held = new Set(syms.filter((k) => k !== 0));
  return held.size > 0 && held.size <= 2 && [...held].every(beyondAscii);
}

/**
 * The branch's keymap through xmodmap: which characters need keycodes, and
 * giving them theirs. When xmodmap cannot run, typing goes on without it
 * (Xvnc then adds what it can).
 */
export class BranchKeymap {
  /**
   * `given`: the keycodes the branch's last keymap change gave, kept by the
   * caller from one call to the next (planSegments avoids them).
   */
  constructor(
    private readonly run: RunInside,
    private readonly log: (msg: string) => void,
    private readonly given: { keycodes: ReadonlySet<number> },
  ) {}

  /** The keysyms in segments (one when nothing needs a keycode, or when the keymap cannot be managed). */
  async segments(keysyms: number[]): Promise<Segment[]> {
    if (!needsKeymap(keysyms)) return [{ assign: [], keysyms }];
    try {
      return planSegments(keysyms, parseKeycodes(await this.xmodmap(['-pk'])), this.given.keycodes);
    } catch (e) {
      this.log(`cannot manage its keymap (${(e as Error).message}); Xvnc adds what it can`);
      return [{ assign: [], keysyms }];
    }
  }

  /**
   * Gives the segment's keycodes their characters, letting the desktop catch
   * up before and after: apps read a new keymap asynchronously (a key event
   * they have not handled when it changes, or that comes before they have
   * read it, gives a wrong or no character), so each change waits for the
   * apps to have handled the keys before it and read it (x-catch-up.ts);
   * and the window manager (openbox), which answers no pings, re-grabs its
   * key bindings for every changed keycode, one after another, during which a
   * click does not move the focus yet.
   */
  async prepare(segment: Segment, first: boolean): Promise<void> {
    if (segment.assign.length === 0) return;
    if (!first) {
      await sleep(SETTLE_MS);
      await this.catchUp();
    }
    // Both levels: a single keysym with a case (Щ) would become XKB's [щ, Щ], and Щ then needs a faked Shift.
    await this.xmodmap(segment.assign.flatMap(([code, keysym]) => ['-e', `keycode ${code} = 0x${keysym.toString(16)} 0x${keysym.toString(16)}`]));
    this.given.keycodes = new Set(segment.assign.map(([code]) => code));
    await this.catchUp();
    await sleep(Math.max(SETTLE_MS, PER_KEYCODE_MS * segment.assign.length));
  }

  /** Waits for the apps to have handled what the desktop sent them; one that cannot be asked is said in the log, and typing goes on. */
  private async catchUp(): Promise<void> {
    const res = await this.run(['python3', '-c', X_CATCH_UP_PY, String(CATCH_UP_S)]);
    if (res.exitCode !== 0) this.log(`cannot tell whether its apps caught up with its keymap (python3 exited ${res.exitCode}: ${res.stderr.trim()})`);
    else if (/not in time/.test(res.stdout)) this.log(res.stdout.trim());
  }

  private async xmodmap(args: string[]): Promise<string> {
    const res = await this.run(['xmodmap', ...args]);
    if (res.exitCode !== 0) throw new Error(`xmodmap ${args.join(' ')} exited ${res.exitCode}: ${res.stderr.trim()}`);
    return res.stdout;
  }
}

/** Whether typing these keysyms may need the keymap changed at all (ASCII and named keys never do). */
export function needsKeymap(keysyms: readonly number[]): boolean {
  return keysyms.some(beyondAscii);
}
