import { describe, expect, it } from 'vitest';
import { LineReader, type LineEvent } from '../../src/protocol/line-reader.js';

/** Feeds each chunk in turn and collects every event the reader yields. */
function feed(reader: LineReader, ...chunks: (string | Buffer)[]): LineEvent[] {
  const events: LineEvent[] = [];
  for (const c of chunks) events.push(...reader.push(typeof c === 'string' ? Buffer.from(c, 'utf8') : c));
  return events;
}

const line = (text: string): LineEvent => ({ kind: 'line', text });

describe('LineReader', () => {
  it('joins a line split across several chunks', () => {
    const r = new LineReader(1024);
    expect(feed(r, '{"id":')).toEqual([]);
    expect(feed(r, '1,"method"')).toEqual([]);
    expect(feed(r, ':"hello"}\n')).toEqual([line('{"id":1,"method":"hello"}')]);
  });

  it('yields several lines from one chunk, keeping the partial tail for later', () => {
    const r = new LineReader(1024);
    expect(feed(r, 'one\ntwo\nthr')).toEqual([line('one'), line('two')]);
    expect(feed(r, 'ee\n')).toEqual([line('three')]);
  });

  it('does not emit a line without its newline', () => {
    const r = new LineReader(1024);
    expect(feed(r, 'no newline yet')).toEqual([]);
    expect(feed(r, '\n')).toEqual([line('no newline yet')]);
  });

  it('skips empty and whitespace-only lines', () => {
    const r = new LineReader(1024);
    expect(feed(r, '\n\na\n  \n\t\nb\n')).toEqual([line('a'), line('b')]);
    // A lone newline completing an empty buffer yields nothing either.
    expect(feed(r, '\n')).toEqual([]);
  });

  it('does not carry text from one line into the next', () => {
    const r = new LineReader(1024);
    expect(feed(r, 'first\n', 'second\n')).toEqual([line('first'), line('second')]);
  });

  it('accepts a line of exactly maxBytes and refuses maxBytes + 1', () => {
    const r = new LineReader(8);
    expect(feed(r, `${'x'.repeat(8)}\n`)).toEqual([line('xxxxxxxx')]);
    expect(feed(r, `${'y'.repeat(9)}\n`)).toEqual([{ kind: 'oversized', bytes: 9 }]);
  });

  it('counts the limit across chunks, not per chunk', () => {
    const r = new LineReader(8);
    // 5 + 4 = 9 bytes: each chunk is under the limit but the line is not.
    expect(feed(r, 'aaaaa', 'bbbb\nok\n')).toEqual([{ kind: 'oversized', bytes: 9 }, line('ok')]);
  });

  it('reports an oversized line complete within one chunk once, then parses the following lines', () => {
    const r = new LineReader(16);
    const big = 'z'.repeat(40);
    expect(feed(r, `before\n${big}\nafter\n`)).toEqual([line('before'), { kind: 'oversized', bytes: 40 }, line('after')]);
    expect(feed(r, 'later\n')).toEqual([line('later')]);
  });

  it('reports an oversized line spanning several chunks exactly once, then parses the following lines', () => {
    const r = new LineReader(16);
    const events = feed(
      r,
      'good\nhead-', // "head-" is buffered (5 bytes)
      'x'.repeat(20), // now over the limit: the reader starts skipping
      'y'.repeat(30), // still skipping, nothing reported yet
      'tail\nnext\n', // the newline ends the oversized line
    );
    expect(events).toEqual([line('good'), { kind: 'oversized', bytes: 5 + 20 + 30 + 4 }, line('next')]);
    expect(events.filter((e) => e.kind === 'oversized')).toHaveLength(1);
    // Nothing of the skipped line leaks into what follows.
    expect(feed(r, 'after\n')).toEqual([line('after')]);
  });

  it('does not report an oversized line until its newline arrives', () => {
    const r = new LineReader(4);
    expect(feed(r, 'x'.repeat(10))).toEqual([]);
    expect(feed(r, 'x'.repeat(10))).toEqual([]);
    expect(feed(r, '\n')).toEqual([{ kind: 'oversized', bytes: 20 }]);
  });

  it('handles two oversized lines in a row, each reported once', () => {
    const r = new LineReader(4);
    expect(feed(r, 'aaaaaa\nbbb', 'bbbbbbb\nc\n')).toEqual([{ kind: 'oversized', bytes: 6 }, { kind: 'oversized', bytes: 10 }, line('c')]);
  });

  it('reassembles a multi-byte UTF-8 character split across chunks', () => {
    const r = new LineReader(1024);
    const text = 'héllo → 🌳 grove';
    const bytes = Buffer.from(`${text}\n`, 'utf8');
    // Split inside the 4-byte tree emoji and inside the 3-byte arrow.
    const tree = bytes.indexOf(Buffer.from('🌳', 'utf8'));
    const arrow = bytes.indexOf(Buffer.from('→', 'utf8'));
    const cuts = [arrow + 1, tree + 2, tree + 3];
    const chunks: Buffer[] = [];
    let at = 0;
    for (const cut of cuts) {
      chunks.push(bytes.subarray(at, cut));
      at = cut;
    }
    chunks.push(bytes.subarray(at));
    expect(feed(r, ...chunks)).toEqual([line(text)]);
  });

  it('handles a byte-at-a-time stream', () => {
    const r = new LineReader(1024);
    const bytes = Buffer.from('ä\nß€\n', 'utf8');
    const chunks = [...bytes].map((b) => Buffer.from([b]));
    expect(feed(r, ...chunks)).toEqual([line('ä'), line('ß€')]);
  });

  it('measures the limit in bytes, not characters', () => {
    const r = new LineReader(5);
    // Two characters, six bytes.
    expect(feed(r, '€€\n')).toEqual([{ kind: 'oversized', bytes: 6 }]);
    expect(feed(r, '€\n')).toEqual([line('€')]);
  });

  it('is not affected by the caller reusing the chunk buffer', () => {
    const r = new LineReader(1024);
    const buf = Buffer.from('abc', 'utf8');
    expect(feed(r, buf)).toEqual([]);
    buf.write('XYZ');
    expect(feed(r, 'def\n')).toEqual([line('abcdef')]);
  });
});
