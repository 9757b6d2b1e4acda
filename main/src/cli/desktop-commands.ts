// Computer use on the command line: see a running branch's desktop and act on
// it (grove screenshot|cursor|move|click|mouse|drag|scroll|key|type|wait).
// Arguments are checked here first, so a typo fails before anything happens;
// key names and what depends on the screen (its size) are checked by the
// helper, before it touches the desktop.
import { writeFile } from 'node:fs/promises';
import { text as readAll } from 'node:stream/consumers';
import type { Command } from 'commander';
import { GroveError, type HelperClient } from '../helper-client/client.js';
import { MAX_TYPED_CHARS, type MouseButton, type PointerState, type Region, type Screenshot } from '../../../privileged-helper/src/protocol/desktop.js';
import { globals, output, withClient } from './context.js';

const BUTTONS: readonly MouseButton[] = ['left', 'right', 'middle'];
const DEFAULT_WAIT_S = 10;
const MAX_WAIT_S = 120;

export function registerDesktopCommands(program: Command): void {
  program
    .command('screenshot')
    .argument('<workspace>', 'id or name of a running branch')
    .option('-o, --out <file>', "write the PNG here ('-': to standard output; default: screenshot-WORKSPACE-TIME.png)")
    .option('--region <x,y,w,h>', 'only this part of the screen', parseRegion)
    .option('--scale <s>', 'scale the picture down by this factor (0 < s ≤ 1)', parseScale)
    .description("take a picture of a branch's desktop as it is now (PNG)")
    .action((ref: string, opts: { out?: string; region?: Region; scale?: number }) =>
      withClient(async (c) => {
        const shot = await c.request('desktop.screenshot', { workspace: ref, region: opts.region, scale: opts.scale });
        if (opts.out === undefined && globals().json) return output(shot, () => undefined);
        const file = opts.out ?? `screenshot-${ref}-${shot.at.replace(/[:.]/g, '-')}.png`;
        const png = Buffer.from(shot.png, 'base64');
        if (file === '-') return void process.stdout.write(png);
        await writeFile(file, png);
        const { png: _png, ...meta } = shot;
        output({ ...meta, file }, () => console.log(`${file}: ${describeShot(shot)}`));
      }),
    );

  program
    .command('cursor')
    .argument('<workspace>', 'id or name of a running branch')
    .description('where the pointer is, and the screen size')
    .action((ref: string) => pointerCall((c) => c.request('desktop.cursor', { workspace: ref })));

  program
    .command('move')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<x>', 'pixels from the left', coordinate('x'))
    .argument('<y>', 'pixels from the top', coordinate('y'))
    .description('move the pointer')
    .action((ref: string, x: number, y: number) => pointerCall((c) => c.request('desktop.move', { workspace: ref, x, y })));

  program
    .command('click')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('[x]', 'pixels from the left (default: where the pointer is)', coordinate('x'))
    .argument('[y]', 'pixels from the top', coordinate('y'))
    .option('--button <button>', 'left, right or middle', parseButton, 'left' as MouseButton)
    .option('--double', 'double click')
    .option('--triple', 'triple click')
    .option('--modifiers <keys>', "keys held during the click, e.g. 'shift' or 'ctrl+alt'")
    .description('click at a point (or where the pointer is)')
    .action(
      (ref: string, x: number | undefined, y: number | undefined, opts: { button: MouseButton; double?: boolean; triple?: boolean; modifiers?: string }) => {
        if (opts.double && opts.triple) throw new GroveError('E_INVALID_PARAMS', 'give --double or --triple, not both');
        const count = opts.triple ? 3 : opts.double ? 2 : 1;
        const at = point(x, y);
        return pointerCall((c) => c.request('desktop.click', { workspace: ref, ...at, button: opts.button, count, modifiers: opts.modifiers }));
      },
    );

  program
    .command('mouse')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<action>', 'down or up', (v: string) => oneOf(v, ['down', 'up'] as const, 'a mouse action'))
    .option('--button <button>', 'left, right or middle', parseButton, 'left' as MouseButton)
    .option('--at <x,y>', 'move there first', parsePoint)
    .description('press or release a mouse button (drags at your own pace)')
    .action((ref: string, action: 'down' | 'up', opts: { button: MouseButton; at?: { x: number; y: number } }) =>
      pointerCall((c) => c.request('desktop.button', { workspace: ref, ...opts.at, button: opts.button, action })),
    );

  program
    .command('drag')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<x1>', 'from: pixels from the left', coordinate('x1'))
    .argument('<y1>', 'from: pixels from the top', coordinate('y1'))
    .argument('<x2>', 'to: pixels from the left', coordinate('x2'))
    .argument('<y2>', 'to: pixels from the top', coordinate('y2'))
    .option('--button <button>', 'left, right or middle', parseButton, 'left' as MouseButton)
    .description('press a button at one point, move to another, release')
    .action((ref: string, x1: number, y1: number, x2: number, y2: number, opts: { button: MouseButton }) =>
      pointerCall((c) => c.request('desktop.drag', { workspace: ref, from: { x: x1, y: y1 }, to: { x: x2, y: y2 }, button: opts.button })),
    );

  program
    .command('scroll')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('[x]', 'pixels from the left (default: where the pointer is)', coordinate('x'))
    .argument('[y]', 'pixels from the top', coordinate('y'))
    .option('--dx <n>', 'wheel notches to the right (negative: left)', notches('--dx'), 0)
    .option('--dy <n>', 'wheel notches down (negative: up)', notches('--dy'), 0)
    .description('turn the mouse wheel at a point')
    .action((ref: string, x: number | undefined, y: number | undefined, opts: { dx: number; dy: number }) => {
      if (opts.dx === 0 && opts.dy === 0) throw new GroveError('E_INVALID_PARAMS', 'give --dy (down, or up when negative) and/or --dx (right, or left)');
      const at = point(x, y);
      return pointerCall((c) => c.request('desktop.scroll', { workspace: ref, ...at, dx: opts.dx, dy: opts.dy }));
    });

  program
    .command('key')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<combo...>', "key combos pressed in turn, e.g. ctrl+l, alt+F4, Return, 'ctrl+a BackSpace'")
    .description('press keys and key combos')
    .action((ref: string, combos: string[]) => pointerCall((c) => c.request('desktop.key', { workspace: ref, keys: combos.join(' ') })));

  program
    .command('type')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<text>', "the text to type ('-': read it from standard input)")
    .description('type text as key presses (any Unicode; a new line is Return)')
    .action(async (ref: string, arg: string) => {
      const text = arg === '-' ? await readAll(process.stdin) : arg;
      if (text.length === 0) throw new GroveError('E_INVALID_PARAMS', 'nothing to type');
      if (text.length > MAX_TYPED_CHARS)
        throw new GroveError('E_INVALID_PARAMS', `text is at most ${MAX_TYPED_CHARS} characters a call (this is ${text.length})`);
      return pointerCall((c) => c.request('desktop.type', { workspace: ref, text }));
    });

  program
    .command('wait')
    .argument('<workspace>', 'id or name of a running branch')
    .option('--still', 'until the screen has not changed for --quiet ms')
    .option('--changed', 'until the screen changes')
    .option('--timeout <seconds>', `give up after this long (default ${DEFAULT_WAIT_S}, at most ${MAX_WAIT_S})`, parseTimeout, DEFAULT_WAIT_S)
    .option('--quiet <ms>', 'with --still: how long the screen must stay unchanged (default 500)', parseQuiet)
    .description('wait until the screen is still, or changes; exit code 1 when the timeout came first')
    .action((ref: string, opts: { still?: boolean; changed?: boolean; timeout: number; quiet?: number }) => {
      if (Boolean(opts.still) === Boolean(opts.changed)) throw new GroveError('E_INVALID_PARAMS', 'give --still or --changed');
      if (opts.changed && opts.quiet !== undefined) throw new GroveError('E_INVALID_PARAMS', '--quiet goes with --still');
      const until = opts.still ? 'still' : 'changed';
      return withClient(async (c) => {
        const r = await c.request('desktop.wait', { workspace: ref, until, timeoutMs: Math.round(opts.timeout * 1000), quietMs: opts.quiet });
        output(r, () => console.log(r.satisfied ? `${until} after ${r.waitedMs} ms` : `timed out after ${r.waitedMs} ms`));
        if (!r.satisfied) process.exitCode = 1;
      });
    });
}

/** Calls a method answering where the pointer is, and prints it. */
function pointerCall(call: (c: HelperClient) => Promise<PointerState>): Promise<void> {
  return withClient(async (c) => {
    const state = await call(c);
    output(state, () => console.log(`pointer at ${state.cursor.x},${state.cursor.y} (screen ${state.screen.width}x${state.screen.height})`));
  });
}

function describeShot(s: Screenshot): string {
  const r = s.region;
  const whole = r.x === 0 && r.y === 0 && r.width === s.screen.width && r.height === s.screen.height;
  return `${s.width}x${s.height} PNG of ${whole ? 'the whole screen' : `${r.width}x${r.height} at ${r.x},${r.y}`} (screen ${s.screen.width}x${s.screen.height}, taken ${s.at})`;
}

function point(x: number | undefined, y: number | undefined): { x?: number; y?: number } {
  if ((x === undefined) !== (y === undefined)) throw new GroveError('E_INVALID_PARAMS', 'give both x and y, or neither (where the pointer is)');
  return x === undefined ? {} : { x, y };
}

function coordinate(name: string) {
  return (value: string): number => wholeNumber(value, name, 0, 16383);
}

function notches(name: string) {
  return (value: string): number => wholeNumber(value, name, -50, 50);
}

function wholeNumber(value: string, name: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value.trim()) || n < min || n > max)
    throw new GroveError('E_INVALID_PARAMS', `${name} must be a whole number from ${min} to ${max}, not '${value}'`);
  return n;
}

function parsePoint(value: string): { x: number; y: number } {
  const parts = value.split(',');
  if (parts.length !== 2) throw new GroveError('E_INVALID_PARAMS', `--at takes X,Y, not '${value}'`);
  return { x: wholeNumber(parts[0]!, 'x', 0, 16383), y: wholeNumber(parts[1]!, 'y', 0, 16383) };
}

function parseRegion(value: string): Region {
  const parts = value.split(',');
  if (parts.length !== 4) throw new GroveError('E_INVALID_PARAMS', `--region takes X,Y,W,H (e.g. 0,0,640,400), not '${value}'`);
  const [x, y, width, height] = parts.map((p, i) => wholeNumber(p, ['x', 'y', 'width', 'height'][i]!, i < 2 ? 0 : 1, 16384)) as [
    number,
    number,
    number,
    number,
  ];
  return { x, y, width, height };
}

function parseScale(value: string): number {
  const s = Number(value);
  if (!(s > 0 && s <= 1)) throw new GroveError('E_INVALID_PARAMS', `--scale must be above 0 and at most 1 (e.g. 0.5), not '${value}'`);
  return s;
}

function parseTimeout(value: string): number {
  const s = Number(value);
  if (!(s > 0 && s <= MAX_WAIT_S)) throw new GroveError('E_INVALID_PARAMS', `--timeout is in seconds, above 0 and at most ${MAX_WAIT_S}, not '${value}'`);
  return s;
}

function parseQuiet(value: string): number {
  return wholeNumber(value, '--quiet (ms)', 50, 10_000);
}

function parseButton(value: string): MouseButton {
  return oneOf(value, BUTTONS, 'a mouse button');
}

function oneOf<T extends string>(value: string, allowed: readonly T[], what: string): T {
  if (!(allowed as readonly string[]).includes(value)) throw new GroveError('E_INVALID_PARAMS', `'${value}' is not ${what}: use ${allowed.join(', ')}`);
  return value as T;
}
