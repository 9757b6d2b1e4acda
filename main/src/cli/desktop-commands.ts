// Computer use on the command line: see a running branch's desktop and act on
// it (grove screenshot|zoom|cursor|move|click|mouse|drag|scroll|key|hold-key|
// type|wait|windows|open-url|launch), and move files in and out of it (grove
// upload|download). Arguments are checked here first, so a typo fails before
// anything happens; key names and what depends on the screen (its size) are
// checked by the helper, before it touches the desktop.
import { readFile, writeFile } from 'node:fs/promises';
import { text as readAll } from 'node:stream/consumers';
import type { Command } from 'commander';
import { GroveError, type HelperClient } from '../helper-client/client.js';
import {
  FrameToken,
  MAX_HOLD_MS,
  MAX_TRANSFER_BYTES,
  MAX_TYPED_CHARS,
  type MouseButton,
  type PointerState,
  type Region,
  type Screenshot,
} from '../../../privileged-helper/src/protocol/desktop.js';
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
      withClient(async (c) => savePicture(await c.request('desktop.screenshot', { workspace: ref, region: opts.region, scale: opts.scale }), ref, opts.out)),
    );

  program
    .command('zoom')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<region>', 'the part of the screen, X,Y,W,H (e.g. 0,0,320,200)', parseRegion)
    .option('--width <px>', "scale it up to this many pixels across (default: the region's own width)", (v: string) => wholeNumber(v, '--width', 1, 2560))
    .option('-o, --out <file>', "write the PNG here ('-': to standard output; default: zoom-WORKSPACE-TIME.png)")
    .description('a part of the screen at full resolution, scaled up if asked (PNG)')
    .action((ref: string, region: Region, opts: { width?: number; out?: string }) =>
      withClient(async (c) => savePicture(await c.request('desktop.zoom', { workspace: ref, region, width: opts.width }), ref, opts.out, 'zoom')),
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
    .option('--modifiers <keys>', "keys held while the wheel turns, e.g. 'ctrl' or 'shift'")
    .description('turn the mouse wheel at a point')
    .action((ref: string, x: number | undefined, y: number | undefined, opts: { dx: number; dy: number; modifiers?: string }) => {
      if (opts.dx === 0 && opts.dy === 0) throw new GroveError('E_INVALID_PARAMS', 'give --dy (down, or up when negative) and/or --dx (right, or left)');
      const at = point(x, y);
      return pointerCall((c) => c.request('desktop.scroll', { workspace: ref, ...at, dx: opts.dx, dy: opts.dy, modifiers: opts.modifiers }));
    });

  program
    .command('key')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<combo...>', "key combos pressed in turn, e.g. ctrl+l, alt+F4, Return, 'ctrl+a BackSpace'")
    .description('press keys and key combos')
    .action((ref: string, combos: string[]) => pointerCall((c) => c.request('desktop.key', { workspace: ref, keys: combos.join(' ') })));

  program
    .command('hold-key')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<keys...>', "the keys to hold, e.g. shift, 'ctrl+a', Left")
    .option('--for <seconds>', `how long (at most ${MAX_HOLD_MS / 1000})`, parseHold, 1)
    .description('press keys, hold them, and release them')
    .action((ref: string, keys: string[], opts: { for: number }) =>
      pointerCall((c) => c.request('desktop.holdKey', { workspace: ref, keys: keys.join(' '), durationMs: Math.round(opts.for * 1000) })),
    );

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
    .option('--since <frame>', 'with --changed: a change after this frame (which an action or screenshot printed) counts, also one before the wait', parseFrame)
    .description('wait until the screen is still, or changes; exit code 1 when the timeout came first')
    .action((ref: string, opts: { still?: boolean; changed?: boolean; timeout: number; quiet?: number; since?: string }) => {
      if (Boolean(opts.still) === Boolean(opts.changed)) throw new GroveError('E_INVALID_PARAMS', 'give --still or --changed');
      if (opts.changed && opts.quiet !== undefined) throw new GroveError('E_INVALID_PARAMS', '--quiet goes with --still');
      if (opts.still && opts.since !== undefined) throw new GroveError('E_INVALID_PARAMS', '--since goes with --changed');
      const until = opts.still ? 'still' : 'changed';
      return withClient(async (c) => {
        const timeoutMs = Math.round(opts.timeout * 1000);
        const r = await c.request('desktop.wait', { workspace: ref, until, timeoutMs, quietMs: opts.quiet, since: opts.since });
        output(r, () => console.log(`${r.satisfied ? `${until} after ${r.waitedMs} ms` : `timed out after ${r.waitedMs} ms`}; frame ${r.frame}`));
        if (!r.satisfied) process.exitCode = 1;
      });
    });

  program
    .command('windows')
    .argument('<workspace>', 'id or name of a running branch')
    .description("the desktop's windows: application, title, geometry, and which has the focus (*)")
    .action((ref: string) =>
      withClient(async (c) => {
        const list = await c.request('desktop.windows', { workspace: ref });
        output(list, () => {
          for (const w of list.windows) console.log(`${w.focused ? '*' : ' '} ${w.id}\t${w.app}\t${w.width}x${w.height}+${w.x}+${w.y}\t${w.title}`);
        });
      }),
    );

  program
    .command('open-url')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<url>', 'an http:// or https:// address')
    .description("open a web page in a new tab of the branch's browser")
    .action((ref: string, url: string) =>
      withClient(async (c) => {
        const opened = await c.request('desktop.openUrl', { workspace: ref, url });
        output(opened, () => console.log(`opening ${opened.url}`));
      }),
    );

  program
    .command('launch')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<command...>', 'the program and its arguments (put -- before options of its own)')
    .description("start a program on the branch's desktop, detached; prints its pid in the branch")
    .action((ref: string, argv: string[]) =>
      withClient(async (c) => {
        const started = await c.request('desktop.launch', { workspace: ref, argv });
        output(started, () => console.log(`${argv[0]} started, pid ${started.pid}`));
      }),
    );

  program
    .command('upload')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<file>', "a file of yours ('-': standard input)")
    .argument('<path>', 'where it goes in the branch (absolute; replaced if there)')
    .description(`write a file into a branch (at most ${MAX_TRANSFER_BYTES / (1 << 20)} MiB; grove cp copies more, and folders)`)
    .action((ref: string, file: string, to: string) =>
      withClient(async (c) => {
        const bytes = file === '-' ? await readStdin() : await readFile(file).catch((e: NodeJS.ErrnoException) => fileError('read', file, e));
        if (bytes.length > MAX_TRANSFER_BYTES)
          throw new GroveError('E_TOO_LARGE', `${file} is ${bytes.length} bytes: an upload is at most ${MAX_TRANSFER_BYTES} (grove cp copies more)`);
        const written = await c.request('file.upload', { workspace: ref, path: to, data: bytes.toString('base64') });
        output(written, () => console.log(`wrote ${written.bytes} bytes to ${ref}:${written.path}`));
      }),
    );

  program
    .command('download')
    .argument('<workspace>', 'id or name of a running branch')
    .argument('<path>', 'a file in the branch (absolute)')
    .option('-o, --out <file>', "write it here ('-', the default: to standard output)")
    .description(`read a file of a branch (at most ${MAX_TRANSFER_BYTES / (1 << 20)} MiB)`)
    .action((ref: string, from: string, opts: { out?: string }) =>
      withClient(async (c) => {
        const file = await c.request('file.download', { workspace: ref, path: from });
        const bytes = Buffer.from(file.data, 'base64');
        if (opts.out === undefined || opts.out === '-') return void process.stdout.write(bytes);
        await writeOut(opts.out, bytes);
        output({ path: file.path, bytes: file.bytes, file: opts.out }, () => console.log(`${opts.out}: ${file.bytes} bytes from ${ref}:${file.path}`));
      }),
    );
}

/** Writes a screenshot's or zoom's PNG (to a file, or standard output) and says what it shows. */
async function savePicture(shot: Screenshot, ref: string, out: string | undefined, kind = 'screenshot'): Promise<void> {
  if (out === undefined && globals().json) return output(shot, () => undefined);
  const file = out ?? `${kind}-${ref}-${shot.at.replace(/[:.]/g, '-')}.png`;
  const png = Buffer.from(shot.png, 'base64');
  if (file === '-') return void process.stdout.write(png);
  await writeOut(file, png);
  const { png: _png, ...meta } = shot;
  output({ ...meta, file }, () => console.log(`${file}: ${describeShot(shot)}`));
}

/** Writes the file, or says in a sentence why it cannot (no stack trace). */
async function writeOut(file: string, bytes: Buffer): Promise<void> {
  await writeFile(file, bytes).catch((e: NodeJS.ErrnoException) => fileError('write', file, e));
}

const WHY: Record<string, string> = {
  EACCES: 'you may not',
  EPERM: 'you may not',
  ENOENT: 'no such file or folder',
  EISDIR: 'it is a folder',
  ENOTDIR: 'a part of the path is not a folder',
  EROFS: 'the file system is read-only',
  ENOSPC: 'the disk is full',
};

function fileError(verb: 'read' | 'write', file: string, e: NodeJS.ErrnoException): never {
  throw new GroveError('E_INVALID_PARAMS', `cannot ${verb} ${file}: ${(e.code && WHY[e.code]) ?? e.message}`);
}

async function readStdin(): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Calls a method answering where the pointer is, and prints it. */
function pointerCall(call: (c: HelperClient) => Promise<PointerState>): Promise<void> {
  return withClient(async (c) => {
    const state = await call(c);
    output(state, () =>
      console.log(`pointer at ${state.cursor.x},${state.cursor.y} (screen ${state.screen.width}x${state.screen.height}); frame ${state.frame}`),
    );
  });
}

function describeShot(s: Screenshot): string {
  const r = s.region;
  const whole = r.x === 0 && r.y === 0 && r.width === s.screen.width && r.height === s.screen.height;
  return `${s.width}x${s.height} PNG of ${whole ? 'the whole screen' : `${r.width}x${r.height} at ${r.x},${r.y}`} (screen ${s.screen.width}x${s.screen.height}, taken ${s.at}); frame ${s.frame}`;
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

function parseHold(value: string): number {
  const s = Number(value);
  if (!(s > 0 && s * 1000 <= MAX_HOLD_MS))
    throw new GroveError('E_INVALID_PARAMS', `--for is in seconds, above 0 and at most ${MAX_HOLD_MS / 1000}, not '${value}'`);
  return s;
}

function parseFrame(value: string): string {
  if (!FrameToken.safeParse(value).success)
    throw new GroveError('E_INVALID_PARAMS', `--since takes a frame as an action or screenshot printed it (e.g. 3fa2c01b.17), not '${value}'`);
  return value;
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
