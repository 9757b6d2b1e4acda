// Splits a byte stream into lines for both ends of the socket. A line longer
// than the limit is reported once and skipped up to its newline, so one bad
// message never desynchronises the stream.

export type LineEvent = { kind: 'line'; text: string } | { kind: 'oversized'; bytes: number };

export class LineReader {
  private chunks: Buffer[] = [];
  private buffered = 0;
  private skipping = false;
  private skipped = 0;

  constructor(private readonly maxBytes: number) {}

  *push(chunk: Buffer): Generator<LineEvent> {
    let start = 0;
    for (let nl = chunk.indexOf(10, start); nl !== -1; nl = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, nl);
      start = nl + 1;
      if (this.skipping) {
        yield { kind: 'oversized', bytes: this.skipped + piece.length };
        this.skipping = false;
        this.skipped = 0;
        continue;
      }
      if (this.buffered + piece.length > this.maxBytes) {
        yield { kind: 'oversized', bytes: this.buffered + piece.length };
        this.reset();
        continue;
      }
      this.chunks.push(piece);
      const text = Buffer.concat(this.chunks).toString('utf8');
      this.reset();
      if (text.trim() !== '') yield { kind: 'line', text };
    }
    this.keep(chunk.subarray(start));
  }

  private keep(rest: Buffer): void {
    if (rest.length === 0) return;
    if (this.skipping) {
      this.skipped += rest.length;
    } else if (this.buffered + rest.length > this.maxBytes) {
      this.skipping = true;
      this.skipped = this.buffered + rest.length;
      this.reset();
    } else {
      this.chunks.push(Buffer.from(rest));
      this.buffered += rest.length;
    }
  }

  private reset(): void {
    this.chunks = [];
    this.buffered = 0;
  }
}
