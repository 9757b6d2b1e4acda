// What steers the fuzzer: V8's own block coverage of the code under test, read
// through node:inspector after every input. An input that runs a block of that
// code not run before, or runs it a number of times in a new range (1, 2, 3,
// 4-7, ... as libFuzzer counts), is worth keeping and mutating further.
//
// V8 reports coverage as a tree of ranges and leaves out a block that ran as
// often as the range around it: a branch taken is only visible as the absence
// of its range. So every range ever reported is remembered, and a block's
// count in a run is that of the innermost range reported around it.
import { Session } from 'node:inspector';

interface Range {
  startOffset: number;
  endOffset: number;
  count: number;
}
interface ScriptCoverage {
  scriptId: string;
  url: string;
  functions: { ranges: Range[] }[];
}

export class BlockCoverage {
  private readonly session = new Session();
  /** Per function (script URL and offset), every block range V8 has reported in it, as "start:end". */
  private readonly blocks = new Map<string, Set<string>>();
  private readonly features = new Set<string>();

  /** `steers`: whether a script (by URL) is code under test. */
  constructor(private readonly steers: (url: string) => boolean) {}

  start(): void {
    this.session.connect();
    this.post('Profiler.enable');
    this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  }

  stop(): void {
    this.post('Profiler.stopPreciseCoverage');
    this.session.disconnect();
  }

  /** Blocks × count ranges reached so far. */
  get reached(): number {
    return this.features.size;
  }

  /** How many features the code reached since the last call that no earlier input did (V8's counters start again at zero). */
  takeNew(): number {
    const { result } = this.post('Profiler.takePreciseCoverage') as { result: ScriptCoverage[] };
    let fresh = 0;
    for (const script of result) {
      if (!this.steers(script.url)) continue;
      for (const fn of script.functions) {
        const where = `${script.url}@${fn.ranges[0]?.startOffset}`;
        const known = this.blocks.get(where) ?? new Set<string>();
        this.blocks.set(where, known);
        for (const r of fn.ranges) known.add(`${r.startOffset}:${r.endOffset}`);
        for (const key of known) {
          const [start, end] = key.split(':').map(Number) as [number, number];
          const count = countAt(fn.ranges, start, end);
          if (count === 0) continue;
          const feature = `${where}:${key}:${bucket(count)}`;
          if (!this.features.has(feature)) {
            this.features.add(feature);
            fresh++;
          }
        }
      }
    }
    return fresh;
  }

  /** The in-thread inspector answers synchronously. */
  private post(method: string, params?: object): unknown {
    let answer: { error: Error | null; result: unknown } | null = null;
    this.session.post(method, params, (error, result) => (answer = { error, result }));
    if (!answer) throw new Error(`the inspector did not answer ${method} at once`);
    const { error, result } = answer as { error: Error | null; result: unknown };
    if (error) throw error;
    return result;
  }
}

/** The count of the innermost reported range of a function holding [start, end). */
function countAt(ranges: Range[], start: number, end: number): number {
  let count = 0;
  let width = Infinity;
  for (const r of ranges) {
    if (r.startOffset <= start && end <= r.endOffset && r.endOffset - r.startOffset < width) {
      count = r.count;
      width = r.endOffset - r.startOffset;
    }
  }
  return count;
}

/** libFuzzer's hit-count classes: running a loop once more is not new, running it eight times instead of two is. */
function bucket(count: number): number {
  if (count <= 3) return count;
  if (count < 8) return 4;
  if (count < 16) return 8;
  if (count < 32) return 16;
  if (count < 128) return 32;
  return 128;
}
