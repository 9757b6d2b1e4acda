// An image's log in the renderer: lines followed as they come and the log
// read from the controller, merged by their sequence numbers, so a line never
// shows twice and a newer build's log replaces an older one, whichever
// arrives first.
import { describe, expect, it } from 'vitest';
import { MAX_IMAGE_LOG_LINES, type ImageLog, type ImageLogLine } from '../../main/src/api/contract.js';
import { appendLine, mergeLog } from '../src/store/image-logs.js';

const line = (seq: number, message = `line ${seq}`): ImageLogLine => ({ seq, stage: 'build', message, at: '2026-01-01T00:00:00.000Z' });
const log = (job: string, ...seqs: number[]): ImageLog => ({ job, lines: seqs.map((s) => line(s)) });
const seqs = (l: ImageLog) => l.lines.map((x) => x.seq);

describe('image logs', () => {
  it('appends a job’s lines once, starts again with a newer job, and ignores a line older than what it has', () => {
    let l = appendLine(undefined, 'j1', line(1));
    l = appendLine(l, 'j1', line(2));
    expect(appendLine(l, 'j1', line(2))).toBe(l);
    expect(seqs(l)).toEqual([1, 2]);
    const next = appendLine(l, 'j2', line(5));
    expect(next).toEqual({ job: 'j2', lines: [line(5)] });
    expect(appendLine(next, 'j1', line(3))).toBe(next);
  });

  it('keeps the newest lines only', () => {
    let l: ImageLog | undefined;
    for (let i = 1; i <= MAX_IMAGE_LOG_LINES + 5; i++) l = appendLine(l, 'j1', line(i));
    expect(l!.lines).toHaveLength(MAX_IMAGE_LOG_LINES);
    expect(l!.lines[0]!.seq).toBe(6);
  });

  it('merges what was read with what streamed meanwhile, in order, each line once', () => {
    expect(seqs(mergeLog(log('j1', 4, 5), log('j1', 1, 2, 3, 4)))).toEqual([1, 2, 3, 4, 5]);
    expect(mergeLog(undefined, log('j1', 1))).toEqual(log('j1', 1));
    // Another job: the newer one wins, read or followed.
    expect(mergeLog(log('j2', 9), log('j1', 1, 2))).toEqual(log('j2', 9));
    expect(mergeLog(log('j1', 1, 2), log('j2', 9))).toEqual(log('j2', 9));
  });
});
