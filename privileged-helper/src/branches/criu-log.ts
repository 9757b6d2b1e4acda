// Reads timings out of a CRIU log written with -v4 (lines start "(SS.micros)").
// The source is stopped from the first task CRIU seizes to the last it
// releases, so that span is how long the source branch was frozen.

const STAMP = /^\((\d+\.\d+)\)\s/;

export function sourceFrozenMs(log: string): number | null {
  let first: number | null = null;
  let last: number | null = null;
  for (const line of log.split('\n')) {
    const at = STAMP.exec(line)?.[1];
    if (at === undefined) continue;
    if (first === null && line.includes('Seized task')) first = Number(at);
    if (line.includes('Unseizing')) last = Number(at);
  }
  return first === null || last === null ? null : Math.round((last - first) * 1000);
}
