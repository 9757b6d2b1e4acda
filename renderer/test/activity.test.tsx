// @vitest-environment happy-dom
// The activity log's filter: by words, by who, failures only.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { ActivityEntry } from '../../main/src/api/contract.js';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { ActivityLog, filterActivity, type ActivityFilter } from '../src/components/Panels.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { mount, typeInto, type Mounted } from './mount.js';

const at = '2026-12-08T00:00:00.000Z';
const entry = (
  seq: number,
  actor: ActivityEntry['actor'],
  action: string,
  target: string | null,
  outcome: ActivityEntry['outcome'],
  detail = '',
): ActivityEntry => ({
  seq,
  at,
  actor,
  who: actor === 'agent' ? { role: 'agent', uid: 1001, user: 'alice' } : null,
  action,
  target,
  outcome,
  detail,
  count: 1,
});
const LOG = [
  entry(1, 'you', 'fork into 3', 'app', 'ok', 'made app-1, app-2, app-3'),
  entry(2, 'agent', 'run a command', 'app-1', 'ok'),
  entry(3, 'agent', 'discard', 'app-2', 'failed', 'a person must approve it'),
  entry(4, 'helper', 'egress', 'app-3', 'info', 'pypi.org:443 allowed by policy'),
  entry(5, 'you', 'checkpoint', 'app-1', 'failed', 'no space left'),
];

let view: Mounted | undefined;
afterEach(() => view?.unmount());

describe('the activity filter', () => {
  const none: ActivityFilter = { text: '', who: 'all', failedOnly: false };
  const seqs = (f: Partial<ActivityFilter>) => filterActivity(LOG, { ...none, ...f }).map((a) => a.seq);

  it('keeps entries holding every word, whatever their case, in who, what, branch or outcome', () => {
    expect(seqs({})).toEqual([1, 2, 3, 4, 5]);
    expect(seqs({ text: 'app-1' })).toEqual([1, 2, 5]);
    expect(seqs({ text: 'ALICE app-2' })).toEqual([3]);
    expect(seqs({ text: 'pypi' })).toEqual([4]);
  });

  it('keeps one kind of actor, or failures only', () => {
    expect(seqs({ who: 'agent' })).toEqual([2, 3]);
    expect(seqs({ who: 'you' })).toEqual([1, 5]);
    expect(seqs({ who: 'grove' })).toEqual([4]);
    expect(seqs({ failedOnly: true })).toEqual([3, 5]);
    expect(seqs({ who: 'agent', failedOnly: true, text: 'discard' })).toEqual([3]);
  });

  it('filters the table as the person types, and says how many it shows', () => {
    const shown = mount(<ActivityLog />, appState([branch('aaaaaaa1', 'app')], 'connected', { activity: LOG }), apiWith({}).api);
    view = shown;
    const rows = () => [...shown.host.querySelectorAll('[data-testid="activity"] tbody tr')].map((r) => r.querySelectorAll('td')[2]!.textContent);
    expect(rows()).toEqual(['checkpoint', 'egress', 'discard', 'run a command', 'fork into 3']);
    typeInto(shown.host.querySelector<HTMLInputElement>('input[type="search"]')!, 'app-1');
    act(() => shown.host.querySelector<HTMLInputElement>('input[type="checkbox"]')!.click());
    expect(rows()).toEqual(['checkpoint']);
    expect(shown.host.querySelector('[data-testid="activity-count"]')!.textContent).toBe('1 of 5 entries');
  });
});
