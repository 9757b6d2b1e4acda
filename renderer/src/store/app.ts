// The renderer's state: the controller's last AppState (never edited here,
// only replaced), the link to the controller, and the UI's own state
// (selection, focus, view, theme, confirmations, errors). A vanilla zustand
// store so tests can drive it without React.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { AppState, EgressPolicy, EgressRequest, EgressRule, EgressStatus, PerfReport, RequestName, RequestParams, RequestResult, Workspace } from '../../../main/src/api/contract.js';
import { humanError, type Api } from '../api/client.js';
import { layoutTree, type TreeLayout } from '../tree/layout.js';

export type View = 'desktop' | 'compare' | 'terminal' | 'diff' | 'network' | 'activity' | 'approvals' | 'performance';
export type Decision = 'once' | 'always' | 'deny';
/** A change of a branch's egress policy, as the panel asks for it. */
export type EgressChange = Omit<RequestParams<'egress.set'>, 'workspace'>;
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
  /** Each branch's egress status as last read (policy, drop counters), by branch id. */
  egress: Record<string, EgressStatus>;
  /** Held requests whose decision was sent and not yet answered (their buttons are disabled). */
  deciding: string[];
  /** Fork history and memory as last read (while the Performance panel is open). */
  perf: PerfReport | null;

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
  /** Reads a branch's egress status (policy, drop counters). */
  loadEgress(branchId: string): Promise<EgressStatus | undefined>;
  /** Changes a branch's egress policy; the store keeps the policy the helper answers with. */
  setEgress(branchId: string, change: EgressChange): Promise<EgressPolicy | undefined>;
  /** Reads fork history and memory per branch. */
  loadPerf(): Promise<PerfReport | undefined>;
  /** Approves once, always for the destination, or denies a held request. */
  decide(requestId: string, decision: Decision): Promise<boolean>;
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
    egress: {},
    deciding: [],
    perf: null,

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
      const held = new Set(state.approvals.map((r) => r.id));
      const deciding = prev.deciding.filter((id) => held.has(id));
      const egress = Object.fromEntries(Object.entries(prev.egress).filter(([id]) => exists.has(id)));
      set({
        server: state,
        layout,
        order,
        selection,
        focus,
        pendingSelect,
        anchor: prev.anchor && exists.has(prev.anchor) ? prev.anchor : focus,
        deciding: deciding.length === prev.deciding.length ? prev.deciding : deciding,
        egress: Object.keys(egress).length === Object.keys(prev.egress).length ? prev.egress : egress,
      });
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

    async loadEgress(branchId) {
      const status = await get().act('egress.status', { workspace: branchId });
      if (status) set({ egress: { ...get().egress, [branchId]: status } });
      return status;
    },

    async setEgress(branchId, change) {
      const policy = await get().act('egress.set', { workspace: branchId, ...change });
      const known = get().egress[branchId];
      if (policy) set({ egress: { ...get().egress, [branchId]: known ? { ...known, policy } : { workspace: branchId, policy, dropped: { tcp: 0, udp: 0, other: 0 }, pending: [] } } });
      return policy;
    },

    async loadPerf() {
      const perf = await get().act('perf.get', {});
      if (perf) set({ perf });
      return perf;
    },

    async decide(requestId, decision) {
      if (get().deciding.includes(requestId)) return false;
      set({ deciding: [...get().deciding, requestId] });
      const res =
        decision === 'deny'
          ? await get().act('egress.deny', { request: requestId })
          : await get().act('egress.approve', { request: requestId, always: decision === 'always' });
      // On success the next state drops the request; on failure it can be tried again.
      if (!res) set({ deciding: get().deciding.filter((id) => id !== requestId) });
      // 'Always allow' added to the branch's allow list: what the store holds of it is stale.
      if (res && decision === 'always' && get().egress[res.workspace]) void get().loadEgress(res.workspace);
      return res !== undefined;
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

/** Held requests still waiting (not past their deadline), the oldest first. */
export function pendingApprovals(s: Pick<UiState, 'server'>, now: number): EgressRequest[] {
  return (s.server?.approvals ?? NONE).filter((r) => Date.parse(r.expiresAt) > now);
}

/** Time before a held request times out, as m:ss ('0:00' once past). */
export function timeLeft(r: Pick<EgressRequest, 'expiresAt'>, now: number): string {
  const secs = Math.max(0, Math.ceil((Date.parse(r.expiresAt) - now) / 1000));
  return `${Math.floor(secs / 60)}:${String(secs % 60).padStart(2, '0')}`;
}

/** host:port of a held request, the way a person reads a destination. */
export function destination(r: Pick<EgressRequest, 'host' | 'port'>): string {
  return r.host.includes(':') ? `[${r.host}]:${r.port}` : `${r.host}:${r.port}`;
}

/** Parses 'host', 'host:port' or '[v6]:port' into an allow-list rule; null when it is not one. */
export function parseRule(text: string): EgressRule | null {
  const t = text.trim().toLowerCase();
  let host: string;
  let port: string | undefined;
  const v6 = /^\[([0-9a-f:.]+)\](?::(\d{1,5}))?$/.exec(t);
  if (v6) [, host, port] = v6 as unknown as [string, string, string | undefined];
  else if ((t.match(/:/g) ?? []).length > 1) host = t; // a bare IPv6 address
  else {
    const m = /^([^:\s]+)(?::(\d{1,5}))?$/.exec(t);
    if (!m) return null;
    [, host, port] = m as unknown as [string, string, string | undefined];
  }
  if (host.length > 253 || !/^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?$|^[0-9a-f:.]+$/.test(host)) return null;
  if (port === undefined) return { host };
  const n = Number(port);
  return n >= 1 && n <= 65535 ? { host, port: n } : null;
}

export function formatRule(r: EgressRule): string {
  const host = r.host.includes(':') ? `[${r.host}]` : r.host;
  return r.port === undefined ? host : `${host}:${r.port}`;
}
