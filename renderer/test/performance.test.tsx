// @vitest-environment happy-dom
// The Performance panel: fork history as stacked stage bars (newest right),
// memory per branch with its KSM-shared part, the host's memory, and polling
// only while the panel is open and live.
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { PerfReport, SpaceReport } from '../../main/src/api/contract.js';
import type { ApiClient } from '../src/api/client.js';
import { StoreContext } from '../src/components/context.js';
import { PERF_POLL_MS, PerformancePanel, niceTicks } from '../src/components/Performance.js';
import { createAppStore, type AppStore } from '../src/store/app.js';
import { appState } from './app-state.js';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const MiB = 2 ** 20;
const timings = (total: number) => ({ prepare: 100, dump: 900, sourceFrozen: 850, thaw: 10, restore: 1200, expose: 800, firstFrame: 700, total });

const PERF: PerfReport = {
  // Newest first, as the helper sends it.
  forks: [
    { fork: 'fork-00000002', source: { id: 'aaaaaaa1', name: 'app' }, copies: 2, at: '2026-11-30T10:05:00.000Z', timings: timings(3400) },
    { fork: 'fork-00000001', source: { id: 'aaaaaaa1', name: 'app' }, copies: 1, at: '2026-11-30T10:00:00.000Z', timings: timings(3100) },
  ],
  branches: [
    {
      workspace: 'aaaaaaa1',
      name: 'app',
      processes: 23,
      pssBytes: 400 * MiB,
      rssBytes: 700 * MiB,
      swapBytes: 0,
      ksm: { mergingPages: 25600, sharedBytes: 100 * MiB, profitBytes: 95 * MiB, mergeAny: true },
      cgroup: {
        limits: { memoryBytes: 2048 * MiB, pids: 2048, cpuWeight: 100, diskBytes: 10 * 2 ** 30 },
        memoryBytes: 690 * MiB,
        dumpableBytes: 400 * MiB,
        memoryLimitHits: 0,
        oomKills: 0,
        pids: 180,
        pidsRefused: 0,
      },
    },
    {
      workspace: 'aaaaaaa2',
      name: 'app-1',
      processes: 21,
      pssBytes: 200 * MiB,
      rssBytes: 650 * MiB,
      swapBytes: 0,
      ksm: { mergingPages: 51200, sharedBytes: 200 * MiB, profitBytes: 190 * MiB, mergeAny: false },
      cgroup: {
        limits: { memoryBytes: 1024 * MiB, pids: 512, cpuWeight: 100, diskBytes: 10 * 2 ** 30 },
        memoryBytes: 1020 * MiB,
        dumpableBytes: 900 * MiB,
        memoryLimitHits: 7,
        oomKills: 2,
        pids: 512,
        pidsRefused: 31,
      },
    },
  ],
  host: {
    totalBytes: 24 * 1024 * MiB,
    availableBytes: 20 * 1024 * MiB,
    pageBytes: 4096,
    ksm: { pagesShared: 10_000, pagesSharing: 30_000, pagesUnshared: 5000, fullScans: 12, run: 1 },
  },
  pool: { freeBytes: 9 * 2 ** 30, totalBytes: 40 * 2 ** 30, low: false },
  prepared: { ready: ['bbbbbbb1', 'bbbbbbb2'], kept: 2 },
  standbys: [],
  at: '2026-11-30T10:05:03.000Z',
};

let root: Root;
let host: HTMLDivElement;
let store: AppStore;
let request: ReturnType<typeof vi.fn>;

beforeEach(() => {
  vi.useFakeTimers();
  request = vi.fn(async () => PERF);
  host = document.createElement('div');
  document.body.append(host);
  store = createAppStore({ request } as unknown as ApiClient);
  root = createRoot(host);
});

afterEach(() => {
  act(() => root.unmount());
  host.remove();
  vi.useRealTimers();
});

async function open(status: 'connected' | 'disconnected' = 'connected'): Promise<void> {
  await act(async () => {
    store.getState().applyState(appState([], status));
    store.getState().setLink('open');
    root.render(
      <StoreContext.Provider value={{ store, api: {} as ApiClient }}>
        <PerformancePanel />
      </StoreContext.Provider>,
    );
  });
}

describe('PerformancePanel', () => {
  it('draws one stacked bar per fork, oldest left and newest right, with every stage', async () => {
    await open();
    expect(request).toHaveBeenCalledWith('perf.get', {});
    const bars = [...host.querySelectorAll('[data-testid="perf-forks"] .perf-fork')];
    expect(bars.map((b) => b.getAttribute('data-fork'))).toEqual(['fork-00000001', 'fork-00000002']);
    const left = (bar: Element) => Number(bar.querySelector('rect')!.getAttribute('x'));
    expect(left(bars[1]!)).toBeGreaterThan(left(bars[0]!));
    expect(left(bars[1]!)).toBeGreaterThan(600); // a short history keeps to the right of the 720-wide chart
    const stages = [...bars[1]!.querySelectorAll('rect')].map((r) => r.getAttribute('class'));
    expect(stages).toEqual(['perf-stage-prepare', 'perf-stage-dump', 'perf-stage-thaw', 'perf-stage-restore', 'perf-stage-expose', 'perf-stage-commit']);
    // The taller bar is the slower fork; its stacked stages reach its total.
    const top = (bar: Element) => Math.min(...[...bar.querySelectorAll('rect')].map((r) => Number(r.getAttribute('y'))));
    expect(top(bars[1]!)).toBeLessThan(top(bars[0]!));
    expect(bars[1]!.querySelector('title')!.textContent).toContain('total 3.40 s');
    expect(host.querySelector('.perf-total')!.textContent).toBe('3.40 s');
    expect(host.querySelectorAll('.perf-total-dot')).toHaveLength(2);
  });

  it('marks the time axis at round values past the slowest fork, and has the total line in its legend', async () => {
    await open();
    expect([...host.querySelectorAll('.perf-grid text')].map((t) => t.textContent)).toEqual(['0 ms', '1.00 s', '2.00 s', '3.00 s', '4.00 s']);
    expect([...host.querySelectorAll('.perf-legend li')].map((li) => li.textContent!.trim())).toEqual([
      'prepare',
      'dump',
      'thaw',
      'restore',
      'expose + first frame',
      'commit',
      'total',
    ]);
  });

  it.each([
    [978, [0, 500, 1000]],
    [3400, [0, 1000, 2000, 3000, 4000]],
    [1000, [0, 500, 1000]],
    [1001, [0, 500, 1000, 1500]],
    [12.5, [0, 5, 10, 15]],
    [0, [0, 1]],
  ])('puts round marks from 0 past %s', (max, expected) => {
    expect(niceTicks(max)).toEqual(expected);
  });

  it('shows each branch with its PSS bar, the KSM-shared part within it, and the host memory', async () => {
    await open();
    const rows = [...host.querySelectorAll('[data-testid="perf-branch"]')];
    expect(rows.map((r) => r.getAttribute('data-branch'))).toEqual(['app', 'app-1']);
    expect(rows[0]!.textContent).toContain('400 MiB PSS · 100 MiB shared (KSM) · 23 processes');
    const width = (row: Element, cls: string) => Number(row.querySelector(`.${cls}`)!.getAttribute('width'));
    expect(width(rows[0]!, 'perf-bar-pss')).toBe(2 * width(rows[1]!, 'perf-bar-pss'));
    expect(width(rows[0]!, 'perf-bar-ksm')).toBe(width(rows[0]!, 'perf-bar-pss') / 4);
    // KSM can count more than the PSS it is part of: the shared part never overflows the bar.
    expect(width(rows[1]!, 'perf-bar-ksm')).toBe(width(rows[1]!, 'perf-bar-pss'));
    expect(rows[1]!.textContent).toContain('not merged');
    expect(host.querySelector('[data-testid="perf-host"]')!.textContent).toContain('20.0 GiB available of 24.0 GiB');
    expect(host.querySelector('[data-testid="perf-host"]')!.textContent).toContain('saving 117 MiB');
  });

  it("shows each branch's limits next to its memory, and says when they killed or refused something", async () => {
    await open();
    const [calm, capped] = [...host.querySelectorAll('[data-testid="perf-limits"]')].map((e) => e.textContent ?? '');
    expect(calm).toBe('limit 2048 MiB (690 MiB used, cached files included) · 180 of 2048 tasks · CPU weight 100');
    expect(capped).toContain('limit 1024 MiB (1020 MiB used, cached files included) · 512 of 512 tasks');
    // 200 MiB PSS beside 1020 of 1024 MiB used: what the limit counts is said, and that it is near.
    expect(capped).toContain('near its memory limit');
    expect(calm).not.toContain('near its memory limit');
    expect(capped).toContain('2 killed: out of memory');
    expect(capped).toContain('31 forks refused');
  });

  it('shows the pool, and measures what each branch and version holds only when asked', async () => {
    const space: SpaceReport = {
      pool: PERF.pool,
      branches: [{ workspace: 'aaaaaaa1', name: 'app', state: 'running', exclusiveBytes: 30 * MiB, totalBytes: 900 * MiB }],
      versions: [{ version: 'bbbbbbb1', workspace: 'aaaaaaa1', orphanOf: null, label: 'v1', exclusiveBytes: 250 * MiB, totalBytes: 700 * MiB }],
      forkPoints: [],
      at: PERF.at,
    };
    request.mockImplementation(async (method: string) => (method === 'space.get' ? space : PERF));
    await open();
    expect(host.querySelector('[data-testid="perf-pool"]')!.textContent).toBe('Pool: 9.0 GiB free of 40.0 GiB');
    expect(request).not.toHaveBeenCalledWith('space.get', {});
    await act(async () => host.querySelector<HTMLButtonElement>('[data-testid="perf-disk"] button')!.click());
    expect(request).toHaveBeenCalledWith('space.get', {});
    expect([...host.querySelectorAll('[data-testid="perf-disk"] li')].map((li) => li.textContent)).toEqual([
      'version v1: frees 250 MiB',
      'branch app (running): frees 30 MiB',
    ]);
  });

  it('reads again every few seconds while open, and stops when closed', async () => {
    await open();
    expect(request).toHaveBeenCalledTimes(1);
    await act(async () => void vi.advanceTimersByTime(PERF_POLL_MS * 2));
    expect(request).toHaveBeenCalledTimes(3);
    act(() => root.unmount());
    root = createRoot(host);
    await act(async () => void vi.advanceTimersByTime(PERF_POLL_MS * 3));
    expect(request).toHaveBeenCalledTimes(3);
  });

  it('does not poll while the helper is unreachable, and says it has nothing yet', async () => {
    await open('disconnected');
    await act(async () => void vi.advanceTimersByTime(PERF_POLL_MS * 2));
    expect(request).not.toHaveBeenCalled();
    expect(host.textContent).toContain('Reading performance');
  });

  it('says so when there are no forks yet', async () => {
    request.mockResolvedValue({ ...PERF, forks: [] });
    await open();
    expect(host.textContent).toContain('No forks yet');
  });
});
