// @vitest-environment happy-dom
// The branch tree component: virtualised rows (200 branches put only a
// screenful in the DOM), lanes drawn as SVG, keyboard navigation, and the
// stale look when the state is not live.
import { act } from 'react';
import { createRoot, type Root } from 'react-dom/client';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Workspace } from '../../main/src/api/contract.js';
import type { ApiClient } from '../src/api/client.js';
import { BranchTree } from '../src/components/BranchTree.js';
import { StoreContext } from '../src/components/context.js';
import { createAppStore, type AppStore } from '../src/store/app.js';
import { appState as state } from './app-state.js';

(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true;

const hex = (n: number) => n.toString(16).padStart(8, '0');
function branches(n: number): Workspace[] {
  return Array.from({ length: n }, (_, i) => ({
    id: hex(i + 1),
    name: `b-${i}`,
    image: 'desktop' as const,
    state: 'running' as const,
    hostname: `b-${i}`,
    machineId: '0'.repeat(32),
    createdAt: new Date(Date.UTC(2026, 0, 1) + i * 1000).toISOString(),
    address: '10.0.0.2',
    ports: [],
    vncSocket: null,
    streamSocket: null,
    pid: 1,
    exitReason: null,
    // A bushy tree: each branch hangs off one of the first ten.
    parent: i === 0 ? null : hex((i % 10) + (i < 10 ? 0 : 1)),
    tree: hex(1),
    version: null,
    main: i === 0,
    limits: { memoryBytes: 2 * 2 ** 30, pids: 2048, cpuWeight: 100, diskBytes: 10 * 2 ** 30 },
    project: null,
    sensitive: false,
    disk: null,
    retiredAt: null,
    merges: [],
    madeBy: null,
    claimedBy: null,
  }));
}
const request = vi.fn();
const api = { request } as unknown as ApiClient;
let root: Root;
let host: HTMLDivElement;
let store: AppStore;

beforeEach(() => {
  host = document.createElement('div');
  document.body.append(host);
  store = createAppStore(api);
  store.getState().setThumbnails(false);
  root = createRoot(host);
  act(() => {
    root.render(
      <StoreContext.Provider value={{ store, api }}>
        <BranchTree />
      </StoreContext.Provider>,
    );
  });
});

afterEach(() => {
  act(() => root.unmount());
  host.remove();
});

describe('BranchTree', () => {
  it('renders only a screenful of 200 branches, with an edge per visible child', () => {
    act(() => {
      store.getState().applyState(state(branches(200)));
      store.getState().setLink('open');
    });
    const rows = host.querySelectorAll('[role="treeitem"]');
    expect(rows.length).toBeGreaterThan(0);
    expect(rows.length).toBeLessThan(40);
    // One workspace: its header, then its 200 rows.
    expect(host.querySelector('.tree-inner')!.getAttribute('style')).toContain(`height: ${30 + 200 * 64}px`);
    expect(host.querySelectorAll('.tree-graph path').length).toBeGreaterThan(0);
    expect(host.querySelectorAll('.tree-graph path').length).toBeLessThan(200);
    expect(rows[0]!.textContent).toContain('b-0');
    expect(rows[0]!.textContent).toContain('main');
    expect(rows[0]!.getAttribute('aria-selected')).toBe('true');
  });

  it('moves the selection with the arrow keys and extends it with Shift', () => {
    act(() => {
      store.getState().applyState(state(branches(5)));
      store.getState().setLink('open');
    });
    const tree = host.querySelector('[role="tree"]')!;
    const key = (k: string, shiftKey = false) => act(() => void tree.dispatchEvent(new KeyboardEvent('keydown', { key: k, shiftKey, bubbles: true })));
    key('ArrowDown');
    const order = store.getState().order;
    expect(store.getState().selection).toEqual([order[1]]);
    key('ArrowDown', true);
    expect(store.getState().selection).toEqual([order[1], order[2]]);
    key('End');
    expect(store.getState().focus).toBe(order[4]);
    key('Enter');
    expect(store.getState().view).toBe('desktop');
    // In a window tall enough for all five rows, one is selected.
    const height = vi.spyOn(HTMLElement.prototype, 'clientHeight', 'get').mockReturnValue(900);
    act(() => void tree.dispatchEvent(new Event('scroll')));
    height.mockRestore();
    expect(host.querySelectorAll('[role="treeitem"]')).toHaveLength(5);
    expect(host.querySelectorAll('[aria-selected="true"]')).toHaveLength(1);
  });

  it('marks a branch whose disk limit is full, and only it', () => {
    const [calm, full] = branches(2);
    const limitBytes = full!.limits.diskBytes;
    act(() => {
      store.getState().applyState(
        state([
          { ...calm!, disk: { usedBytes: 2 ** 20, full: false } },
          { ...full!, disk: { usedBytes: limitBytes, full: true } },
        ]),
      );
      store.getState().setLink('open');
    });
    const marked = [...host.querySelectorAll('[role="treeitem"]')].filter((row) => row.querySelector('[data-testid="disk-full"]'));
    expect(marked.map((row) => row.getAttribute('data-testid'))).toEqual(['branch-b-1']);
  });

  it('gives every visible running row a picture: still ones from the helper beyond the live streams', async () => {
    request.mockImplementation(async (method: string) => (method === 'branch.screenshot' ? { png: 'iVBORw0KGgo=' } : {}));
    const height = vi.spyOn(HTMLElement.prototype, 'clientHeight', 'get').mockReturnValue(900);
    try {
      await act(async () => {
        store.getState().applyState(state(branches(12)));
        store.getState().setLink('open');
        store.getState().setThumbnails(true);
      });
      // A tall window: the tree measures itself again when it scrolls.
      await act(async () => void host.querySelector('.tree')!.dispatchEvent(new Event('scroll')));
      expect(host.querySelectorAll('[role="treeitem"]')).toHaveLength(12);
      expect(host.querySelectorAll('.thumb .desktop.mini')).toHaveLength(8);
      expect(host.querySelectorAll('.thumb [data-testid="still-picture"]')).toHaveLength(4);
      expect(host.querySelectorAll('.thumb-off')).toHaveLength(0);
      expect(request).toHaveBeenCalledWith('branch.screenshot', { workspace: expect.any(String), scale: 0.1 });
    } finally {
      height.mockRestore();
    }
  });

  it("names a branch's own last checkpoint, never its parent's", () => {
    const [a, b] = branches(2);
    act(() => {
      store.getState().applyState(
        state([a!, { ...b!, version: 'c0000001' }], 'connected', {
          versions: [{ id: 'c0000001', branch: a!.id, tree: a!.tree, label: 'green build', createdAt: a!.createdAt, saved: true }],
        }),
      );
      store.getState().setLink('open');
    });
    expect(host.querySelector('[data-testid="branch-b-0"] .row-version')!.textContent).toBe('✓ green build');
    expect(host.querySelector('[data-testid="branch-b-1"] .row-version')!.textContent).toBe('no checkpoint');
  });

  it('heads each workspace and folds it away: its rows, lines and keyboard stops go, its header stays', () => {
    const other = { ...branches(1)[0]!, id: 'bbbbbbb1', name: 'other', tree: 'bbbbbbb1', createdAt: '2027-01-01T00:00:00.000Z' };
    act(() => {
      store.getState().applyState(state([...branches(3), other]));
      store.getState().setLink('open');
    });
    const header = host.querySelector<HTMLButtonElement>('[data-testid="workspace-b-0"]')!;
    expect(header.textContent).toBe('▾b-0desktop · 3 branches, 3 running');
    expect(host.querySelector('[data-testid="workspace-other"]')).not.toBeNull();
    expect(host.querySelectorAll('.tree-graph path')).toHaveLength(2);
    act(() => header.click());
    expect(header.getAttribute('aria-expanded')).toBe('false');
    expect([...host.querySelectorAll('[role="treeitem"]')].map((r) => r.getAttribute('data-testid'))).toEqual(['branch-other']);
    expect(host.querySelectorAll('.tree-graph path')).toHaveLength(0);
    // The keyboard moves among the rows shown only.
    act(() => store.getState().select('bbbbbbb1'));
    act(() => store.getState().moveFocus(-1));
    expect(store.getState().focus).toBe('bbbbbbb1');
    act(() => header.click());
    expect(host.querySelectorAll('[role="treeitem"]')).toHaveLength(4);
  });

  it("puts each checkpoint on its branch's line as a named dot: a click offers rolling that branch back, naming and deleting it", async () => {
    const [main, child] = branches(2);
    const at = (ms: number) => new Date(Date.UTC(2026, 0, 1) + ms).toISOString();
    const version = (id: string, branch: Workspace, label: string | null, ms: number) => ({
      id,
      branch: branch.id,
      tree: branch.tree,
      label,
      createdAt: at(ms),
      saved: true,
    });
    request.mockReset().mockResolvedValue({});
    act(() => {
      store
        .getState()
        .applyState(
          state([main!, child!], 'connected', { versions: [version('c0000001', main!, 'green build', 500), version('c0000002', child!, null, 5000)] }),
        );
      store.getState().setLink('open');
    });
    const rows = [...host.querySelectorAll('.tree-inner > [data-testid]')].map((r) => r.getAttribute('data-testid'));
    expect(rows).toEqual(['workspace-b-0', 'version-dot-c0000001', 'version-dot-c0000002', 'branch-b-0', 'branch-b-1']);
    // In the graph: two branch dots and two checkpoint dots, each checkpoint in its branch's lane.
    const dots = [...host.querySelectorAll('.tree-graph .version-dot')].map((d) => d.getAttribute('cx'));
    const branchDots = [...host.querySelectorAll('.tree-graph circle:not(.version-dot)')].map((d) => d.getAttribute('cx'));
    expect(dots).toEqual(branchDots);
    const dot = host.querySelector<HTMLElement>('[data-testid="version-dot-c0000001"]')!;
    expect(dot.textContent).toContain('green build');
    expect(host.querySelector('[data-testid="version-dot-c0000002"]')!.textContent).toContain('checkpoint');
    // Its branch's row comes before it; the dot sits below it.
    const top = (id: string) => parseFloat(host.querySelector<HTMLElement>(`[data-testid="${id}"]`)!.style.top);
    expect(top('version-dot-c0000001')).toBeGreaterThan(top('branch-b-0'));
    expect(top('branch-b-1')).toBeGreaterThan(top('version-dot-c0000001'));

    act(() => dot.click());
    const button = (text: string) => [...dot.querySelectorAll('button')].find((b) => b.textContent === text)!;
    act(() => button('Roll back here').click());
    expect(store.getState().confirm?.title).toBe('Roll b-0 back?');
    expect(store.getState().confirm?.body).toContain('green build');
    await act(async () => store.getState().answer(true));
    expect(request).toHaveBeenLastCalledWith('branch.rollback', { workspace: main!.id, version: 'c0000001' });
    // A choice made closes the dot's actions.
    expect(dot.querySelector('.dot-actions')).toBeNull();

    act(() => dot.click());
    act(() => button('Name…').click());
    const input = dot.querySelector('input')!;
    expect(input.value).toBe('green build');
    act(() => {
      Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value')!.set!.call(input, 'release candidate');
      input.dispatchEvent(new Event('input', { bubbles: true }));
    });
    await act(async () => dot.querySelector('form')!.requestSubmit());
    expect(request).toHaveBeenLastCalledWith('version.label', { version: 'c0000001', label: 'release candidate' });

    act(() => dot.click());
    act(() => button('Delete').click());
    await act(async () => store.getState().answer(true));
    expect(request).toHaveBeenLastCalledWith('version.delete', { version: 'c0000001' });
  });

  it('keeps a retired main line in its tree, stopped, with its version, and its other children under it', () => {
    const [old, promoted, sibling] = branches(3);
    const retired = { ...old!, main: false, state: 'stopped' as const, pid: null, retiredAt: '2026-01-01T01:00:00.000Z' };
    act(() => {
      store.getState().applyState(
        state([retired, { ...promoted!, main: true }, sibling!], 'connected', {
          versions: [
            { id: 'c0000009', branch: old!.id, tree: old!.tree, label: 'main before b-1 was promoted', createdAt: '2026-01-01T00:59:00.000Z', saved: true },
          ],
        }),
      );
      store.getState().setLink('open');
    });
    const row = host.querySelector('[data-testid="branch-b-0"]')!;
    expect(row.querySelector('[data-testid="retired"]')!.textContent).toBe('retired');
    expect(row.getAttribute('data-state')).toBe('stopped');
    expect(row.querySelector('.row-version')!.textContent).toBe('✓ main before b-1 was promoted');
    expect(host.querySelector('[data-testid="version-dot-c0000009"]')).not.toBeNull();
    expect(host.querySelectorAll('.tree-graph .retired-dot')).toHaveLength(1);
    // One workspace, one root: the promoted branch and its sibling hang off the retired line.
    expect(host.querySelectorAll('.tree-header')).toHaveLength(1);
    expect(
      store
        .getState()
        .layout.nodes.filter((n) => n.parent === null)
        .map((n) => n.id),
    ).toEqual([old!.id]);
    expect(host.querySelector('[data-testid="branch-b-1"] [data-testid="retired"]')).toBeNull();
  });

  it('draws a merge as a dot on its target with an edge from its source, right of every lane and left of all text', () => {
    const [main, child] = branches(2);
    const merged = { ...main!, merges: [{ sources: [{ id: child!.id, name: child!.name }], version: null, at: '2026-01-01T02:00:00.000Z' }] };
    act(() => {
      store.getState().applyState(state([merged, child!]));
      store.getState().setLink('open');
    });
    expect(host.querySelector('[data-testid="merge-b-0"]')!.textContent).toContain('merged b-1');
    const edge = host.querySelectorAll('[data-testid="merge-edge"]');
    expect(edge).toHaveLength(1);
    // Two lanes and one track: the text starts right of them all.
    const indent = parseFloat(host.querySelector<HTMLElement>('[data-testid="branch-b-1"]')!.style.paddingLeft);
    const xs = [...edge[0]!.getAttribute('d')!.matchAll(/[MHQ](\d+(?:\.\d+)?)/g)].map((m) => Number(m[1]));
    expect(Math.max(...xs)).toBeLessThan(indent);
    expect(Math.max(...xs)).toBeGreaterThan(2 * 18);
  });

  it('looks stale when the helper is not connected', () => {
    act(() => {
      store.getState().applyState(state(branches(3), 'disconnected'));
      store.getState().setLink('open');
    });
    expect(host.querySelector('.tree')!.classList.contains('stale')).toBe(true);
    act(() => store.getState().applyState(state(branches(3))));
    expect(host.querySelector('.tree')!.classList.contains('stale')).toBe(false);
  });
});
