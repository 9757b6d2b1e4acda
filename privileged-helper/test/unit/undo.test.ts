import { describe, expect, it } from 'vitest';
import { GroveError } from '../../src/protocol/wire.js';
import { undoAfter } from '../../src/undo.js';

describe("undoAfter (a failed operation's undo: every step tried, the operation's own failure told)", () => {
  it('runs every step in order and returns the failure itself when the undo is whole', async () => {
    const ran: string[] = [];
    const failure = new GroveError('E_NO_SPACE', 'the pool is full');
    const told = await undoAfter(failure, [async () => void ran.push('child'), () => undefined, async () => void ran.push('scratch')]);
    expect(ran).toEqual(['child', 'scratch']);
    expect(told).toBe(failure);
  });

  it('goes on past a step that fails, and tells the failure with each step that failed, its code and details kept', async () => {
    const ran: string[] = [];
    const failure = new GroveError('E_HOST', "fault injected after stage 'commit'", { stage: 'commit' });
    const told = await undoAfter(failure, [
      async () => {
        ran.push('b-2');
        throw new GroveError('E_HOST', "discarding 'b-2' failed (target is busy)");
      },
      async () => void ran.push('b-1'),
      () => Promise.reject(new Error('scratch left')),
    ]);
    expect(ran).toEqual(['b-2', 'b-1']);
    expect(told).toBeInstanceOf(GroveError);
    expect((told as GroveError).toBody()).toEqual({
      code: 'E_HOST',
      message: "fault injected after stage 'commit'; undoing it failed too: discarding 'b-2' failed (target is busy); scratch left",
      details: { stage: 'commit' },
    });
  });

  it('keeps a failure that is not a GroveError as the cause of the one it tells', async () => {
    const failure = new TypeError('no such record');
    const told = (await undoAfter(failure, [() => Promise.reject(new Error('teardown failed'))])) as Error;
    expect(told).not.toBeInstanceOf(GroveError);
    expect(told.message).toBe('no such record; undoing it failed too: teardown failed');
    expect(told.cause).toBe(failure);
  });
});
