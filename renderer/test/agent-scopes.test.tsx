// @vitest-environment happy-dom
// The panel of agents' scopes: what grove agents ls / allow / revoke do, in
// the app, through the same helper calls.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { Scope } from '../../main/src/api/contract.js';
import { branch } from '../../main/test/unit/app-fixtures.js';
import { AgentScopes } from '../src/components/AgentScopes.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { button, mount, typeInto, type Mounted } from './mount.js';

const ONE = branch('aaaaaaa1', 'one');
const TWO = branch('bbbbbbb1', 'two');
const root = { role: 'person' as const, uid: 0, user: 'root', pid: 1, process: 'grove', client: 'app' };
const at = '2026-12-08T00:00:00.000Z';
const ALICE_ONE: Scope = {
  id: 'a00000001',
  subject: { kind: 'user', name: 'alice', uid: 1001 },
  target: { kind: 'workspace', tree: 'aaaaaaa1' },
  targetName: 'one',
  grantedBy: root,
  at,
};
const TEAM_CREATE: Scope = {
  id: 'a00000002',
  subject: { kind: 'group', name: 'agents', gid: 3000 },
  target: { kind: 'create' },
  targetName: null,
  grantedBy: root,
  at,
};

let view: Mounted;
afterEach(() => view.unmount());

async function open(scopes: Scope[][]) {
  let read = 0;
  const fake = apiWith({
    'scope.list': () => scopes[Math.min(read++, scopes.length - 1)],
    'scope.allow': () => [ALICE_ONE],
    'scope.revoke': () => [ALICE_ONE],
  });
  await act(async () => {
    view = mount(<AgentScopes />, appState([ONE, TWO], 'connected'), fake.api);
  });
  return fake.calls;
}

const rows = () =>
  [...view.host.querySelectorAll('[data-testid="agent-scope"]')].map((r) => [...r.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent));
const takeBack = (label: string) => view.host.querySelector<HTMLButtonElement>(`button[aria-label="${label}"]`)!;
const form = () => view.host.querySelector('form')!;

describe("agents' scopes", () => {
  it('lists every scope: for whom, what it gives, who gave it; and says when there is none', async () => {
    await open([[ALICE_ONE, TEAM_CREATE]]);
    expect(rows()).toEqual([
      ['user alice', 'workspace one', 'person root'],
      ['group agents', 'creating workspaces', 'person root'],
    ]);
    view.unmount();
    await open([[]]);
    expect(view.host.textContent).toContain('No agent has a scope: agents see no workspace.');
  });

  it('gives a user a workspace and leave to create, after asking, then reads the scopes again', async () => {
    const calls = await open([[], [ALICE_ONE]]);
    const allow = button(form(), 'Allow');
    expect(allow.disabled).toBe(true);
    typeInto(form().querySelector('input:not([type])')!, ' alice ');
    const select = form().querySelector('select')!;
    act(() => {
      select.value = 'aaaaaaa1';
      select.dispatchEvent(new Event('change', { bubbles: true }));
    });
    act(() => form().querySelector<HTMLInputElement>('input[type="checkbox"]')!.click());
    await act(async () => allow.click());
    expect(view.store.getState().confirm!.title).toBe('Let alice see and act in one and create workspaces of its own?');
    expect(calls.filter(([m]) => m === 'scope.allow')).toEqual([]);
    await act(async () => view.store.getState().answer(true));
    expect(calls).toEqual([
      ['scope.list', {}],
      ['scope.allow', { who: { user: 'alice' }, workspaces: ['aaaaaaa1'], create: true }],
      ['scope.list', {}],
    ]);
    expect(rows()).toEqual([['user alice', 'workspace one', 'person root']]);
    expect(form().querySelector('input:not([type])')!.getAttribute('value') ?? '').toBe('');
  });

  it('takes back exactly one scope at once', async () => {
    const calls = await open([[ALICE_ONE, TEAM_CREATE], [ALICE_ONE]]);
    await act(async () => takeBack('Take back creating workspaces from group agents').click());
    expect(calls.filter(([m]) => m === 'scope.revoke')).toEqual([['scope.revoke', { who: { group: 'agents' }, create: true }]]);
    await act(async () => takeBack('Take back workspace one from user alice').click());
    expect(calls.filter(([m]) => m === 'scope.revoke')[1]).toEqual(['scope.revoke', { who: { user: 'alice' }, workspaces: ['aaaaaaa1'] }]);
  });
});
