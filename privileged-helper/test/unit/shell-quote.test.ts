import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { shellJoin, shellQuote } from '../../src/exec/exec-service.js';

const NASTY = [
  '',
  'plain',
  'two words',
  "it's",
  "''",
  '"double"',
  '$HOME ${x} $(id) `id`',
  'a\\b\\\\',
  '; rm -rf / #',
  '*?[a]~',
  'line\nbreak\ttab',
  '-n',
  'FOO=bar',
  'ünïcødé 🌳',
  '!event',
];

describe('shellQuote', () => {
  it('leaves safe words alone and single-quotes the rest', () => {
    expect(shellQuote('/usr/bin/env')).toBe('/usr/bin/env');
    expect(shellQuote('PATH=/a:/b')).toBe('PATH=/a:/b');
    expect(shellQuote('')).toBe("''");
    expect(shellQuote('a b')).toBe("'a b'");
    expect(shellQuote("it's")).toBe("'it'\\''s'");
  });

  it('rejects NUL, which no argument can hold', () => {
    expect(() => shellQuote('a\0b')).toThrow(/NUL/);
  });

  it('round-trips every word through a real POSIX shell', () => {
    const line = shellJoin(['printf', '%s\\0', ...NASTY]);
    const out = execFileSync('/bin/sh', ['-c', line], { encoding: 'utf8' });
    expect(out.split('\0').slice(0, -1)).toEqual(NASTY);
  });
});
