// @vitest-environment happy-dom
// "What it did" on a promote or export request: the agent's actions since the
// branch was made, and the helper's screenshots to scrub through.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { RequestResult } from '../../main/src/api/contract.js';
import { DISCARD, PROMOTE, approval, branch } from '../../main/test/unit/app-fixtures.js';
import { ApprovalsView } from '../src/components/Approvals.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { mount, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');
const ONE_1 = branch('aaaaaaa2', 'one-1', { parent: 'aaaaaaa1', tree: 'aaaaaaa1', main: false });
const by = { role: 'agent' as const, uid: 1001, user: 'alice' };
const at = '2026-12-08T00:00:00.000Z';
const step = (n: number, summary: string, ok = true) => ({ n, by, action: 'click', summary, ok, at });
const TIMELINE: RequestResult<'branch.timeline'> = {
  workspace: 'aaaaaaa2',
  entries: [step(3, 'click left at 10,20'), step(4, 'type 12 characters'), step(5, 'run a command failed: exit code 2', false), step(6, 'key ctrl+s')],
  shots: [
    { after: 4, at, image: 'data:image/png;base64,Rk9VUg==' },
    { after: 6, at, image: 'data:image/png;base64,U0lY' },
  ],
  droppedEntries: 2,
};

let view: Mounted;
afterEach(() => view.unmount());

async function open(kind = PROMOTE, timeline = TIMELINE) {
  const fake = apiWith({ 'branch.timeline': () => timeline });
  await act(async () => {
    view = mount(<ApprovalsView />, appState([ONE, ONE_1], 'connected', { approvals: [approval('q00000001', kind)] }), fake.api);
  });
  return fake.calls.filter(([method]) => method === 'branch.timeline');
}

const part = () => view.host.querySelector<HTMLElement>('[data-testid="what-it-did"]');
const steps = () => [...part()!.querySelectorAll('li')].map((li) => [li.textContent, li.className.trim()]);

describe('what it did', () => {
  it("shows a promote request's branch's actions since it was made, the newest screenshot first, each action marked up to it", async () => {
    const calls = await open();
    expect(calls).toEqual([['branch.timeline', { workspace: 'aaaaaaa2' }]]);
    expect(part()!.querySelector('summary')!.textContent).toBe('What it did · 6 actions since one-1 was made');
    const shot = part()!.querySelector<HTMLImageElement>('[data-testid="what-it-did-shot"]')!;
    expect([shot.getAttribute('src'), shot.getAttribute('alt')]).toEqual(['data:image/png;base64,U0lY', "one-1's screen after action 6"]);
    expect(steps()).toEqual([
      ['… 2 earlier actions not kept', 'muted'],
      ['click left at 10,20', 'seen'],
      ['type 12 characters', 'seen'],
      ['run a command failed: exit code 2', 'seen failed'],
      ['key ctrl+s', 'seen'],
    ]);
  });

  it('scrubs back to an earlier screenshot, marking only the actions before it', async () => {
    await open();
    const slider = part()!.querySelector<HTMLInputElement>('input[type="range"]')!;
    act(() => {
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(slider, '0');
      slider.dispatchEvent(new Event('input', { bubbles: true }));
    });
    expect(part()!.querySelector('[data-testid="what-it-did-shot"]')!.getAttribute('src')).toBe('data:image/png;base64,Rk9VUg==');
    expect(slider.getAttribute('aria-valuetext')).toBe('after action 4');
    expect(
      steps()
        .slice(1)
        .map(([, cls]) => cls),
    ).toEqual(['seen', 'seen', 'failed', '']);
  });

  it('says when no agent acted yet, and is not asked for on other requests', async () => {
    await open(PROMOTE, { workspace: 'aaaaaaa2', entries: [], shots: [], droppedEntries: 0 });
    expect(part()!.textContent).toContain('No agent has acted in one-1 yet.');
    view.unmount();
    const calls = await open(DISCARD);
    expect(calls).toEqual([]);
    expect(part()).toBeNull();
  });
});
