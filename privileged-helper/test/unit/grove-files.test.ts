import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { compiledProgram, groveFile, groveRoot } from '../../src/protocol/grove-files.js';

const CHECKOUT = path.resolve(import.meta.dirname, '../../..');

describe("Grove's files", () => {
  it('finds the checkout from the sources', () => {
    expect(groveRoot()).toBe(CHECKOUT);
    expect(groveFile('main/bin/grove')).toBe(path.join(CHECKOUT, 'main/bin/grove'));
  });

  it("names a program's compiled bundle in dist/", () => {
    expect(compiledProgram('privileged-helper/src/daemon.ts')).toBe(path.join(CHECKOUT, 'dist/privileged-helper/src/daemon.js'));
  });
});
