import { describe, expect, it } from 'vitest';
import { frame, FrameReader, sizeFrame } from '../../src/exec/terminal-holder.js';

describe("a terminal holder's frames", () => {
  it('are a kind, a big-endian length and the payload', () => {
    expect(frame('i', Buffer.from('ls\n'))).toEqual(Buffer.from([0x69, 0, 0, 0, 3, 0x6c, 0x73, 0x0a]));
    expect(sizeFrame(120, 50)).toEqual(Buffer.from([0x72, 0, 0, 0, 4, 0, 50, 0, 120]));
  });

  it('are read whole, in order, however they arrive in pieces', () => {
    const read: string[] = [];
    const reader = new FrameReader((kind, payload) => read.push(`${kind}:${payload.toString()}`));
    const bytes = Buffer.concat([frame('a'), frame('i', Buffer.from('hello')), frame('h')]);
    for (const byte of bytes) reader.push(Buffer.from([byte]));
    expect(read).toEqual(['a:', 'i:hello', 'h:']);
  });

  it('refuse a frame no holder sends', () => {
    const reader = new FrameReader(() => undefined);
    expect(() => reader.push(Buffer.from([0x6f, 0x7f, 0xff, 0xff, 0xff]))).toThrow(/a frame of \d+ bytes/);
  });
});
