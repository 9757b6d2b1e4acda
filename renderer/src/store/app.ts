// The renderer's state: the controller's last AppState (never edited here,
// only replaced), the link to the controller, and the UI's own state
// (selection, focus, view, theme, confirmations, errors). A vanilla zustand
// store so tests can drive it without React.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { AppState, RequestName, RequestParams, RequestResult, Workspace } from '../../../main/src/api/contract.js';
import { humanError, type Api } from '../api/client.js';
import { layoutTree, type TreeLayout } from '../tree/layout.js';

export type View = 'desktop' | 'compare' | 'terminal' | 'diff' | 'activity';
export type Theme = 'light' | 'dark';
export type Link = 'connecting' | 'open' | 'closed';

export interface Confirmation {
  title: string;
  body: string;
  confirmLabel: string;
  danger: boolean;
  run: () => void;
}

export interface Notice {
  id: number;
  text: string;
}

export interface UiState {
  server: AppState | null;
  link: Link;
  layout: TreeLayout;
  /** Branch ids in row order (the tree's order). */
  order: string[];
  selection: string[];
  focus: string | null;
  anchor: string | null;
  view: View;
  theme: Theme;
  thumbnails: boolean;
  confirm: Confirmation | null;
  errors: Notice[];
  /** A branch to select as soon as it appears (one just created in the app). */
  pendingSelect: string | null;

  applyState(state: AppState): void;
  setLink(link: Link): void;
  select(id: string, mode?: 'single' | 'toggle' | 'range'): void;
  /** Selects the branch now, or when the next state holds it. */
  selectWhenPresent(id: string): void;
  moveFocus(delta: number, extend?: boolean): void;
  setView(view: View): void;
  setTheme(theme: Theme): void;
  toggleTheme(): void;
  setThumbnails(on: boolean): void;
  ask(c: Confirmation): void;
  answer(yes: boolean): void;
  dismissError(id: number): void;
  /** Sends a request; a failure becomes a notice in words (and resolves undefined). */
  act<R extends RequestName>(method: R, params: RequestParams<R>): Promise<RequestResult<R> | undefined>;
}

/** True when what is shown is live: the renderer is linked to the controller and the controller to the helper. */
export function isLive(s: Pick<UiState, 'server' | 'link'>): boolean {
  return s.link === 'open' && s.server?.connection.status === 'connected';
}

export function branchById(s: Pick<UiState, 'server'>, id: string | null): Workspace | undefined {
  return id ? s.server?.branches.find((b) => b.id === id) : undefined;
}

export type AppStore = StoreApi<UiState>;

export function createAppStore(api: Api, initialTheme: Theme = 'light'): AppStore {
  let noticeSeq = 0;
  return createStore<UiState>()((set, get) => ({
    server: null,
    link: 'connecting',
    layout: layoutTree([]),
    order: [],
    selection: [],
    focus: null,
    anchor: null,
    view: 'desktop',
    theme: initialTheme,
    thumbnails: true,
    confirm: null,
    errors: [],
    pendingSelect: null,

    applyState(state) {
      const prev = get();
      const sameTree =
        prev.server !== null &&
        prev.server.branches.length === state.branches.length &&
        prev.server.branches.every((b, i) => b.id === state.branches[i]!.id && b.parent === state.branches[i]!.parent);
      const layout = sameTree ? prev.layout : layoutTree(state.branches);
      const order = sameTree ? prev.order : [...layout.nodes].sort((a, b) => a.row - b.row).map((n) => n.id);
      const exists = new Set(order);
      let selection = prev.selection.filter((id) => exists.has(id));
      let focus = prev.focus && exists.has(prev.focus) ? prev.focus : null;
      // New children of a fork appear; if nothing is selected, select the main line.
      if (selection.length === 0 && order.length > 0) {
        const main = state.branches.find((b) => b.main) ?? state.branches[0]!;
        selection = [main.id];
        focus = main.id;
      }
      let pendingSelect = prev.pendingSelect;
      if (pendingSelect && exists.has(pendingSelect)) {
        selection = [pendingSelect];
        focus = pendingSelect;
        pendingSelect = null;
      }
      if (focus === null) focus = selection[0] ?? null;
      set({ server: state, layout, order, selection, focus, pendingSelect, anchor: prev.anchor && exists.has(prev.anchor) ? prev.anchor : focus });
    },

    selectWhenPresent(id) {
      if (get().order.includes(id)) get().select(id);
      else set({ pendingSelect: id });
    },

    setLink(link) {
      set({ link });
    },

    select(id, mode = 'single') {
      const { selection, order, anchor } = get();
      if (mode === 'toggle') {
        const next = selection.includes(id) ? selection.filter((x) => x !== id) : [...selection, id];
        set({ selection: next, focus: id, anchor: id });
      } else if (mode === 'range' && anchor && order.includes(anchor)) {
        const [a, b] = [order.indexOf(anchor), order.indexOf(id)].sort((x, y) => x - y);
        set({ selection: order.slice(a, b! + 1), focus: id });
      } else {
        set({ selection: [id], focus: id, anchor: id });
      }
    },

    moveFocus(delta, extend = false) {
      const { order, focus } = get();
      if (order.length === 0) return;
      const at = focus ? order.indexOf(focus) : -1;
      const next = order[Math.max(0, Math.min(order.length - 1, at < 0 ? 0 : at + delta))]!;
      get().select(next, extend ? 'range' : 'single');
    },

    setView(view) {
      set({ view });
    },
    setTheme(theme) {
      set({ theme });
    },
    toggleTheme() {
      set({ theme: get().theme === 'dark' ? 'light' : 'dark' });
    },
    setThumbnails(on) {
      set({ thumbnails: on });
    },

    ask(c) {
      set({ confirm: c });
    },
    answer(yes) {
      const c = get().confirm;
      set({ confirm: null });
      if (yes && c) c.run();
    },

    dismissError(id) {
      set({ errors: get().errors.filter((e) => e.id !== id) });
    },

    async act(method, params) {
      try {
        return await api.request(method, params);
      } catch (err) {
        set({ errors: [...get().errors, { id: ++noticeSeq, text: humanError(err) }].slice(-5) });
        return undefined;
      }
    },
  }));
}

/** A stable empty list for selectors (a fresh [] per call would re-render forever). */
export const NONE: readonly never[] = Object.freeze([]);
