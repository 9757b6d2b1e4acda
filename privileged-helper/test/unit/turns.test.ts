// How many of one connection's requests run at once (server/turns.ts).
import { describe, expect, it } from 'vitest';
import { MAX_IN_FLIGHT, Turns } from '../../src/server/turns.js';

const tick = () => new Promise<void>((r) => setTimeout(r, 0));

describe('Turns', () => {
  it('runs at most MAX_IN_FLIGHT at once, in order, and says when requests wait and when none does', async () => {
    const said: boolean[] = [];
    const turns = new Turns((w) => said.push(w));
    const started: number[] = [];
    const dones: (() => void)[] = [];
    for (let i = 0; i < MAX_IN_FLIGHT + 3; i++) {
      void turns.take('exec.run').then((done) => {
        started.push(i);
        dones.push(done);
      });
    }
    await tick();
    expect(started).toEqual([...Array(MAX_IN_FLIGHT).keys()]);
    expect(turns.waitingCount).toBe(3);
    expect(said.at(-1)).toBe(true);
    dones[0]!();
    dones[0]!(); // twice is once
    await tick();
    expect(started).toEqual([...Array(MAX_IN_FLIGHT + 1).keys()]);
    dones[1]!();
    dones[2]!();
    await tick();
    expect(started).toHaveLength(MAX_IN_FLIGHT + 3);
    expect(turns.waitingCount).toBe(0);
    expect(said.at(-1)).toBe(false);
  });

  it('runs one screenshot at a time, and keeps the order: what comes after a waiting screenshot waits too', async () => {
    const turns = new Turns(() => undefined);
    const started: string[] = [];
    const done = new Map<string, () => void>();
    const take = (method: string, label: string) => void turns.take(method).then((d) => (started.push(label), done.set(label, d)));
    take('desktop.screenshot', 's1');
    take('desktop.screenshot', 's2');
    take('workspace.list', 'list');
    await tick();
    expect(started).toEqual(['s1']);
    done.get('s1')!();
    await tick();
    expect(started).toEqual(['s1', 's2', 'list']);
  });
});
