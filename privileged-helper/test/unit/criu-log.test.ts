import { describe, expect, it } from 'vitest';
import { sourceFrozenMs } from '../../src/branches/criu-log.js';

describe('sourceFrozenMs', () => {
  it('spans the first seized task to the last unseized one', () => {
    const log = [
      '(00.151481) cg-prop: Parsing controller "freezer"',
      '(00.152421) Seized task 5177, state 1',
      '(00.155719) \tSeizing 5197\'s 5200 thread',
      '(00.152887) Seized task 5178, state 1',
      '(01.640000) \tUnseizing 5177 into 1',
      '(01.651453) \tUnseizing 5262 into 1',
      '(01.663270) Writing stats',
    ].join('\n');
    expect(sourceFrozenMs(log)).toBe(1499);
  });

  it('is null when the log never froze anything', () => {
    expect(sourceFrozenMs('(00.000100) Version: 4.2.1\n(00.000200) Error: nope')).toBeNull();
  });
});
