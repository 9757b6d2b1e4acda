// The fuzzing loop. First every input of the target's committed corpus is run
// (seeds, and every crash found before: a regression fails here). Then, until
// the time is up, fast-check draws inputs: new ones from the format's grammar,
// or mutations of an input kept because it reached code no input reached
// before (coverage.ts). An input fails when the target's run throws (a
// property did not hold), hangs, or leaves an uncaught exception, an unhandled
// rejection or an open socket behind; fast-check then shrinks it and it is saved beside the
// corpus as crash-<hash>.
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { BlockCoverage } from './coverage.js';
import { mutated } from './mutate.js';

export interface FuzzTarget {
  /** Also the name of its corpus folder. */
  name: string;
  /** Whether a script (by URL) is code under test, whose coverage steers the fuzzer. */
  steers(url: string): boolean;
  /** The longest input worth trying. */
  maxBytes: number;
  /** New inputs from the format's grammar, valid or nearly so. */
  grammar: fc.Arbitrary<Uint8Array>;
  /** Pieces of the format worth inserting anywhere: keywords, separators, numbers at limits. */
  tokens: readonly Uint8Array[];
  setUp(): Promise<void>;
  /** Feeds one input to the code under test; throws when a property does not hold. */
  run(input: Buffer): Promise<void>;
  tearDown(): Promise<void>;
}

export interface FuzzOptions {
  seconds: number;
  /** The folder of committed inputs (corpus/<target>); crashes are written there too. */
  corpus: string;
  seed: number;
  log(line: string): void;
}

/** One input that takes longer than this is a hang (every target's own waits are shorter). */
const RUN_TIMEOUT_MS = 20_000;
/** Sockets an input opened close within this after it ends (closing takes a turn of the event loop or two). */
const SOCKET_CLOSE_MS = 2_000;
/** How often the grammar draws a new input, against mutating a kept one. */
const GRAMMAR_WEIGHT = 1;
const MUTATION_WEIGHT = 3;

/** Runs the corpus, then fuzzes for o.seconds; true when nothing failed. */
export async function fuzz(target: FuzzTarget, o: FuzzOptions): Promise<boolean> {
  const strays: Error[] = [];
  const onStray = (e: unknown) => void strays.push(e instanceof Error ? e : new Error(String(e)));
  process.on('uncaughtException', onStray);
  process.on('unhandledRejection', onStray);
  const coverage = new BlockCoverage(target.steers);
  await target.setUp();
  coverage.start();
  try {
    const kept = await replayCorpus(target, o, strays, coverage);
    if (!kept) return false;
    if (coverage.reached === 0) throw new Error(`${target.name}: the corpus ran none of the code under test: steers() matches no script it ran`);
    const fromCorpus = kept.length;
    let runs = 0;
    let running: Promise<void> = Promise.resolve();
    const started = Date.now();
    const inputs: fc.Arbitrary<Uint8Array> = fc.oneof(
      { arbitrary: target.grammar, weight: GRAMMAR_WEIGHT },
      { arbitrary: mutated(kept, target.tokens, target.maxBytes), weight: MUTATION_WEIGHT },
    );
    const details = await fc.check<[Uint8Array]>(
      fc.asyncProperty(inputs, async (input) => {
        runs++;
        running = runOne(target, input, strays);
        await running;
        if (coverage.takeNew() > 0) kept.push(input);
      }),
      { numRuns: Number.MAX_SAFE_INTEGER, seed: o.seed, plugins: [fc.interruptAfterTimeLimit(o.seconds * 1000)] },
    );
    await running.catch(() => undefined); // an interrupted run still ends before the target is torn down
    const seconds = (Date.now() - started) / 1000;
    o.log(
      `${target.name}: ${runs} inputs in ${seconds.toFixed(0)} s (${Math.round(runs / seconds)}/s), ${coverage.reached} coverage features, ` +
        `${kept.length} inputs kept (${fromCorpus} from the corpus), fast-check seed ${o.seed}`,
    );
    if (!details.failed) return true;
    const input = details.counterexample?.[0];
    if (!input) throw new Error(`${target.name}: fast-check failed without a counterexample: ${details.errorInstance}`);
    report(target, o, Buffer.from(input), details.errorInstance);
    return false;
  } finally {
    coverage.stop();
    await target.tearDown();
    process.off('uncaughtException', onStray);
    process.off('unhandledRejection', onStray);
  }
}

/** Every input of the corpus, run once (what it reaches is known from then on); null (said why) when one fails. */
async function replayCorpus(target: FuzzTarget, o: FuzzOptions, strays: Error[], coverage: BlockCoverage): Promise<Uint8Array[] | null> {
  const names = fs.readdirSync(o.corpus).sort();
  if (names.length === 0) throw new Error(`${o.corpus} holds no input: the fuzzer needs at least one seed`);
  const inputs: Uint8Array[] = [];
  for (const name of names) {
    const input = fs.readFileSync(path.join(o.corpus, name));
    try {
      await runOne(target, input, strays);
      coverage.takeNew();
    } catch (e) {
      o.log(`${target.name}: the corpus input ${path.join(o.corpus, name)} fails:\n${describe(e)}`);
      return null;
    }
    inputs.push(input);
  }
  return inputs;
}

/** Runs one input: fails on a throw, a hang, anything left uncaught meanwhile, or a socket left open. */
async function runOne(target: FuzzTarget, input: Uint8Array, strays: Error[]): Promise<void> {
  const socketsBefore = openSockets();
  let timer: NodeJS.Timeout | undefined;
  const hang = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no result within ${RUN_TIMEOUT_MS} ms`)), RUN_TIMEOUT_MS);
  });
  try {
    await Promise.race([target.run(Buffer.from(input)), hang]);
  } finally {
    clearTimeout(timer);
  }
  await new Promise((r) => setImmediate(r)); // an unhandled rejection is told once the microtasks have run
  const stray = strays.splice(0)[0];
  if (stray) throw new Error(`left uncaught: ${describe(stray)}`, { cause: stray });
  const deadline = Date.now() + SOCKET_CLOSE_MS;
  while (openSockets() > socketsBefore) {
    if (Date.now() > deadline) throw new Error(`left ${openSockets() - socketsBefore} socket(s) open ${SOCKET_CLOSE_MS} ms after it ended`);
    await new Promise((r) => setImmediate(r));
  }
}

/** TCP sockets of this process not closed yet: a parser that leaks one per input runs out of descriptors. */
function openSockets(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'TCPSocketWrap').length;
}

function report(target: FuzzTarget, o: FuzzOptions, input: Buffer, error: unknown): void {
  const file = path.join(o.corpus, `crash-${createHash('sha256').update(input).digest('hex').slice(0, 16)}`);
  fs.writeFileSync(file, input);
  const shown = input.subarray(0, 160);
  o.log(
    `${target.name}: FOUND an input that fails (shrunk by fast-check), saved as ${file}:\n` +
      `  ${JSON.stringify(shown.toString('latin1'))}${input.length > shown.length ? ` … (${input.length} bytes)` : ''}\n${describe(error)}\n` +
      'Fix the code, add a unit test beside the code, and commit the file: every later run replays it first (docs/fuzzing.md).',
  );
}

function describe(e: unknown): string {
  return e instanceof Error ? (e.stack ?? e.message) : String(e);
}
