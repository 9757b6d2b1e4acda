// @vitest-environment happy-dom
// The pool running out of space: a banner while the helper says it is low,
// none otherwise, and on request what deleting each branch or version frees.
import { act } from 'react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PoolSpace, SpaceReport } from '../../main/src/api/contract.js';
import { branch } from '../../main/test/unit/app-fixtures.js';
import type { Api } from '../src/api/client.js';
import { PoolBanner } from '../src/components/PoolBanner.js';
import { appState } from './app-state.js';
import { mount, type Mounted } from './mount.js';

const MiB = 2 ** 20;
const SPACE: SpaceReport = {
  pool: { freeBytes: 300 * MiB, totalBytes: 16384 * MiB, low: true },
  branches: [
    { workspace: 'aaaaaaa1', name: 'app', state: 'running', exclusiveBytes: 40 * MiB, totalBytes: 900 * MiB },
    { workspace: 'aaaaaaa2', name: 'app-1', state: 'exited', exclusiveBytes: 700 * MiB, totalBytes: 1500 * MiB },
  ],
  versions: [{ version: 'bbbbbbb1', workspace: null, orphanOf: 'old', label: 'before upgrade', exclusiveBytes: 350 * MiB, totalBytes: 600 * MiB }],
  forkPoints: [],
  at: '2026-12-01T10:00:00.000Z',
};

let mounted: Mounted | null = null;
let request: ReturnType<typeof vi.fn>;

beforeEach(() => {
  request = vi.fn(async () => SPACE);
});

afterEach(() => mounted?.unmount());

function show(pool: PoolSpace | null): HTMLDivElement {
  mounted?.unmount();
  mounted = mount(<PoolBanner />, appState([branch('aaaaaaa1', 'app')], 'connected', { pool }), { request } as unknown as Api);
  return mounted.host;
}

describe('PoolBanner', () => {
  it('says nothing while the pool has room, or before it was heard of', async () => {
    expect(show({ freeBytes: 9000 * MiB, totalBytes: 16384 * MiB, low: false }).querySelector('[data-testid="pool-banner"]')).toBeNull();
    expect(show(null).querySelector('[data-testid="pool-banner"]')).toBeNull();
  });

  it('warns while it is low, and lists what deleting would free, most first', async () => {
    const host = show(SPACE.pool);
    const banner = host.querySelector('[data-testid="pool-banner"]')!;
    expect(banner.textContent).toContain('The pool is nearly full: 300 MiB of 16384 MiB free');
    expect(request).not.toHaveBeenCalled(); // measuring is on request only
    await act(async () => (banner.querySelector('button') as HTMLButtonElement).click());
    expect(request).toHaveBeenCalledWith('space.get', {});
    expect([...host.querySelectorAll('.pool-biggest li')].map((li) => li.textContent)).toEqual([
      'branch app-1 (exited): frees 700 MiB',
      'version before upgrade of deleted old: frees 350 MiB',
      'branch app (running): frees 40 MiB',
    ]);
  });
});
