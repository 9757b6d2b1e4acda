// The renderer's state: the controller's last AppState (never edited here,
// only replaced), the link to the controller, and the UI's own state
// (selection, focus, view, theme, confirmations, errors). A vanilla zustand
// store so tests can drive it without React.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type {
  AgentRequestKind,
  AppState,
  EgressChange,
  EgressPolicy,
  EgressRule,
  EgressStatus,
  EventData,
  ImageLog,
  PerfReport,
  RequestName,
  RequestParams,
  RequestResult,
  Workspace,
} from '../../../main/src/api/contract.js';
import { humanError, type Api } from '../api/client.js';
import { parseRule as parseRuleOrThrow } from '../../../privileged-helper/src/protocol/egress-rules.js';
import { layoutTree, type TreeLayout } from '../tree/layout.js';
import { grantFor, isPending } from './approvals.js';
import { appendLine, mergeLog } from './image-logs.js';

export type View =
  | 'desktop'
  | 'race'
  | 'compare'
  | 'terminal'
  | 'diff'
  | 'network'
  | 'activity'
  | 'approvals'
  | 'performance'
  | 'images'
  /** The action bar's "Take home" and "Merge into…" (no tab of their own). */
  | 'takehome'
  | 'merge';
/** approve: once, for a held connection. always: a held connection's destination joins the branch's allow list. */
export type Decision = 'approve' | 'always' | 'deny';
export type Theme = 'light' | 'dark';
export type Link = 'connecting' | 'open' | 'closed';

/** A question in a confirmation: one of its options is picked (the first, at first). */
export interface Choice {
  name: string;
  legend: string;
  options: { value: string; label: string }[];
}

export interface Confirmation {
  title: string;
  body: string;
  choices?: Choice[];
  confirmLabel: string;
  danger: boolean;
  /** With the option picked for each choice, by its name. */
  run: (picked: Record<string, string>) => void;
}

/** Each choice's first option: what a confirmation answers when nothing else is picked. */
export function firstOptions(choices: readonly Choice[] = []): Record<string, string> {
  return Object.fromEntries(choices.map((c) => [c.name, c.options[0]!.value]));
}

export interface GrantChange {
  tree: string;
  kind: AgentRequestKind;
  /** Being set (true) or revoked. */
  on: boolean;
}

export interface Notice {
  id: number;
  text: string;
}

/** How long an error stays when nobody dismisses it. */
export const NOTICE_MS = 12_000;

export interface UiState {
  server: AppState | null;
  link: Link;
  layout: TreeLayout;
  /** Branch ids in row order (the tree's order). */
  order: string[];
  /** Workspaces (tree ids) whose branches the tree hides under their header. */
  collapsed: string[];
  selection: string[];
  focus: string | null;
  anchor: string | null;
  view: View;
  theme: Theme;
  thumbnails: boolean;
  confirm: Confirmation | null;
  errors: Notice[];
  /** Branches to select as soon as they appear, focus first (one just created in the app, or those the address names). */
  pendingSelect: string[] | null;
  /** Each branch's egress status as last read (policy, drop counters), by branch id. */
  egress: Record<string, EgressStatus>;
  /** Requests whose decision was sent and that are still pending (their buttons are disabled). */
  deciding: string[];
  /** Standing approvals being changed: until the state shows the change, the switch shows where it goes. */
  granting: GrantChange[];
  /** Fork history and memory as last read (while the Performance panel is open). */
  perf: PerfReport | null;
  /** The output of each image's latest build or pull, by image name (read when the Images view opens, then followed). */
  imageLogs: Record<string, ImageLog>;

  applyState(state: AppState): void;
  setLink(link: Link): void;
  select(id: string, mode?: 'single' | 'toggle' | 'range'): void;
  /** Selects the branch now, or when the next state holds it. */
  selectWhenPresent(id: string): void;
  /** Selects these branches (focus first) when the first state holds them (a reload's address); nothing when it does not. */
  restoreSelection(ids: string[]): void;
  moveFocus(delta: number, extend?: boolean): void;
  /** Hides a workspace's branches under its header, or shows them again. */
  toggleTree(tree: string): void;
  setView(view: View): void;
  setTheme(theme: Theme): void;
  toggleTheme(): void;
  setThumbnails(on: boolean): void;
  ask(c: Confirmation): void;
  answer(yes: boolean, picked?: Record<string, string>): void;
  dismissError(id: number): void;
  /** Shows an error in words until it is dismissed or NOTICE_MS pass. */
  notify(text: string): void;
  /** Reads a branch's egress status (policy, drop counters). */
  loadEgress(branchId: string): Promise<EgressStatus | undefined>;
  /** Changes a branch's egress policy; the store keeps the policy the helper answers with. */
  setEgress(branchId: string, change: EgressChange): Promise<EgressPolicy | undefined>;
  /** Reads fork history and memory per branch. */
  loadPerf(): Promise<PerfReport | undefined>;
  /** Reads every image's log from the controller. */
  loadImageLogs(): Promise<void>;
  /** A line of an image's build or pull, as the controller sends it. */
  addImageOutput(e: EventData<'image.output'>): void;
  /** Approves or denies a request in the queue (always: a held connection's destination for good), with an optional note. */
  decide(requestId: string, decision: Decision, note?: string): Promise<boolean>;
  /** Lets agents do one kind of request in a workspace (tree) without asking (on), or makes them ask again (off). */
  setGrant(tree: string, kind: AgentRequestKind, on: boolean): Promise<boolean>;
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
    collapsed: [],
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
    granting: [],
    perf: null,
    imageLogs: {},

    applyState(state) {
      const prev = get();
      const firstState = prev.server === null;
      const sameTree = prev.server !== null && sameShape(prev.server, state);
      const layout = sameTree ? prev.layout : layoutTree(state.branches, state.versions);
      const order = sameTree ? prev.order : [...layout.nodes].sort((a, b) => a.row - b.row).map((n) => n.id);
      const exists = new Set(order);
      // A branch that went away (discarded) hands the selection to its nearest
      // ancestor that is still there: never to another workspace.
      const survivors = prev.selection.filter((id) => exists.has(id));
      let focus = prev.focus === null || exists.has(prev.focus) ? prev.focus : (survivors.at(-1) ?? nearestAncestor(prev.server, prev.focus, exists));
      let selection = survivors.length > 0 || focus === null ? survivors : [focus];
      let pendingSelect = prev.pendingSelect;
      if (pendingSelect && exists.has(pendingSelect[0]!)) {
        selection = pendingSelect.filter((id) => exists.has(id));
        focus = pendingSelect[0]!;
        pendingSelect = null;
      } else if (pendingSelect && firstState) {
        pendingSelect = null; // the address names a branch that is gone: select nothing rather than another's
      }
      // The first state, with nothing asked for: the first workspace's main line.
      if (firstState && prev.pendingSelect === null && selection.length === 0 && order.length > 0) {
        const main = state.branches.find((b) => b.main) ?? state.branches[0]!;
        selection = [main.id];
        focus = main.id;
      }
      if (focus === null) focus = selection[0] ?? null;
      const pending = new Set(state.approvals.filter(isPending).map((r) => r.id));
      const deciding = prev.deciding.filter((id) => pending.has(id));
      // A change of a standing approval is done once the state shows it.
      const granting = prev.granting.filter((g) => (grantFor(state.grants, g.tree, g.kind) !== undefined) !== g.on);
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
        granting: granting.length === prev.granting.length ? prev.granting : granting,
        egress: Object.keys(egress).length === Object.keys(prev.egress).length ? prev.egress : egress,
      });
    },

    selectWhenPresent(id) {
      if (get().order.includes(id)) get().select(id);
      else set({ pendingSelect: [id] });
    },

    restoreSelection(ids) {
      if (ids.length > 0) set({ pendingSelect: ids });
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
        const shown = shownOrder(get());
        const [a, b] = [shown.indexOf(anchor), shown.indexOf(id)].sort((x, y) => x - y);
        set({ selection: a! < 0 ? [id] : shown.slice(a, b! + 1), focus: id });
      } else {
        set({ selection: [id], focus: id, anchor: id });
      }
    },

    moveFocus(delta, extend = false) {
      const { focus } = get();
      const order = shownOrder(get());
      if (order.length === 0) return;
      const at = focus ? order.indexOf(focus) : -1;
      const next = order[Math.max(0, Math.min(order.length - 1, at < 0 ? 0 : at + delta))]!;
      get().select(next, extend ? 'range' : 'single');
    },

    toggleTree(tree) {
      const { collapsed } = get();
      set({ collapsed: collapsed.includes(tree) ? collapsed.filter((t) => t !== tree) : [...collapsed, tree] });
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
    answer(yes, picked) {
      const c = get().confirm;
      set({ confirm: null });
      if (yes && c) c.run({ ...firstOptions(c.choices), ...picked });
    },

    dismissError(id) {
      set({ errors: get().errors.filter((e) => e.id !== id) });
    },

    notify(text) {
      // The same words again replace the notice already shown (and its timer).
      const id = ++noticeSeq;
      set({ errors: [...get().errors.filter((e) => e.text !== text), { id, text }].slice(-3) });
      setTimeout(() => get().dismissError(id), NOTICE_MS);
    },

    async loadEgress(branchId) {
      const status = await get().act('egress.status', { workspace: branchId });
      if (status) set({ egress: { ...get().egress, [branchId]: status } });
      return status;
    },

    async setEgress(branchId, change) {
      const policy = await get().act('egress.set', { workspace: branchId, ...change });
      const known = get().egress[branchId];
      if (policy)
        set({ egress: { ...get().egress, [branchId]: known ? { ...known, policy } : { workspace: branchId, policy, dropped: { tcp: 0, udp: 0, other: 0 } } } });
      return policy;
    },

    async loadPerf() {
      const perf = await get().act('perf.get', {});
      if (perf) set({ perf });
      return perf;
    },

    async loadImageLogs() {
      const read = await get().act('image.logs', {});
      if (!read) return;
      const logs = { ...get().imageLogs };
      for (const [name, log] of Object.entries(read)) logs[name] = mergeLog(logs[name], log);
      set({ imageLogs: logs });
    },

    addImageOutput(e) {
      const known = get().imageLogs[e.image];
      const next = appendLine(known, e.job, e.line);
      if (next !== known) set({ imageLogs: { ...get().imageLogs, [e.image]: next } });
    },

    async decide(requestId, decision, note) {
      if (get().deciding.includes(requestId)) return false;
      set({ deciding: [...get().deciding, requestId] });
      const withNote = note?.trim() ? { note: note.trim() } : {};
      const res =
        decision === 'deny'
          ? await get().act('approval.deny', { id: requestId, ...withNote })
          : await get().act('approval.approve', { id: requestId, ...(decision === 'always' ? { always: true } : {}), ...withNote });
      // On success the next state moves the request on; on failure it can be tried again.
      if (!res) set({ deciding: get().deciding.filter((id) => id !== requestId) });
      // 'Always allow' added to the branch's allow list: what the store holds of it is stale.
      if (res && decision === 'always' && get().egress[res.workspace]) void get().loadEgress(res.workspace);
      return res !== undefined;
    },

    async setGrant(tree, kind, on) {
      const same = (g: GrantChange) => g.tree === tree && g.kind === kind;
      if (get().granting.some(same)) return false;
      const existing = grantFor(get().server?.grants ?? NONE, tree, kind);
      if (Boolean(existing) === on) return true;
      // Any branch of the tree names it; the main line is the one a person thinks of.
      const ref =
        get()
          .server?.branches.filter((b) => b.tree === tree)
          .sort((a, b) => Number(b.main) - Number(a.main))[0]?.id ?? tree;
      set({ granting: [...get().granting, { tree, kind, on }] });
      const res = on ? await get().act('grant.set', { workspace: ref, kind }) : await get().act('grant.revoke', { grant: existing!.id });
      if (!res) set({ granting: get().granting.filter((g) => !same(g)) });
      return res !== undefined;
    },

    async act(method, params) {
      try {
        return await api.request(method, params);
      } catch (err) {
        get().notify(humanError(err, method, branchById(get(), (params as { workspace?: string }).workspace ?? null)?.name));
        return undefined;
      }
    },
  }));
}

/** The rows a person sees, in order: the branches of workspaces not collapsed. */
export function shownOrder(s: Pick<UiState, 'order' | 'collapsed' | 'server'>): string[] {
  if (s.collapsed.length === 0) return s.order;
  const hidden = new Set((s.server?.branches ?? []).filter((b) => s.collapsed.includes(b.tree)).map((b) => b.id));
  return s.order.filter((id) => !hidden.has(id));
}

/** Whether two states lay out alike: the same branches under the same parents, with as many merges, and the same versions. */
function sameShape(a: AppState, b: AppState): boolean {
  return (
    a.branches.length === b.branches.length &&
    a.branches.every((x, i) => x.id === b.branches[i]!.id && x.parent === b.branches[i]!.parent && x.merges.at(-1)?.at === b.branches[i]!.merges.at(-1)?.at) &&
    a.versions.length === b.versions.length &&
    a.versions.every((v, i) => v.id === b.versions[i]!.id)
  );
}

/** The nearest ancestor of a branch (as `known` had it) that is in `exists`; null when none is. */
function nearestAncestor(known: AppState | null, id: string, exists: ReadonlySet<string>): string | null {
  const parents = new Map((known?.branches ?? []).map((b) => [b.id, b.parent]));
  for (let at = parents.get(id) ?? null, hops = 0; at !== null && hops < parents.size; at = parents.get(at) ?? null, hops++) {
    if (exists.has(at)) return at;
  }
  return null;
}

/** The selection as the address's fragment keeps it: '#b=<focus>' and ',<others>'. */
export function selectionHash(s: Pick<UiState, 'focus' | 'selection'>): string {
  if (!s.focus) return '';
  return `#b=${[s.focus, ...s.selection.filter((id) => id !== s.focus)].join(',')}`;
}

/** The branch ids a fragment names, focus first (ids only: anything else in it is ignored). */
export function parseSelectionHash(hash: string): string[] {
  const m = /^#b=([0-9a-f]{8}(?:,[0-9a-f]{8})*)$/.exec(hash);
  return m ? m[1]!.split(',') : [];
}

/** A stable empty list for selectors (a fresh [] per call would re-render forever). */
export const NONE: readonly never[] = Object.freeze([]);

/** Parses 'host', 'host:port' or '[v6]:port' into an allow-list rule, as the helper does; null when it is not one. */
export function parseRule(text: string): EgressRule | null {
  try {
    return parseRuleOrThrow(text);
  } catch {
    return null;
  }
}
