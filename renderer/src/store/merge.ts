// "Merge into…": the branches picked as sources, the dry run of bringing
// their changes into the target (files clean, merged and conflicting), the
// person's pick for each conflicting file, and the merge itself with those
// picks as the helper's settlements (--take). A vanilla zustand store, one per
// merge being prepared, so tests can drive it without React.
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { MergeConflict, MergeResult, Workspace } from '../../../main/src/api/contract.js';
import { humanError, type Api } from '../api/client.js';

/** A conflicting file's settlement: 'target' keeps the target's file (and no source's change to it), else the id of the source whose file is taken. */
export type Side = string;
export const KEEP_TARGET: Side = 'target';

export interface MergeFlow {
  /** The branch merged into (its id). */
  target: string;
  /** The sources picked, by id. */
  sources: string[];
  busy: 'checking' | 'merging' | null;
  /** The last dry run, or a merge that found conflicts and wrote nothing; null until checked (and after the sources change). */
  plan: MergeResult | null;
  /** The merge carried out. */
  merged: MergeResult | null;
  /** The pick for each conflicting path. */
  picks: Record<string, Side>;
  /** What went wrong, in words. */
  error: string | null;

  toggleSource(id: string): void;
  /** The dry run: what the merge would write, and its conflicts. Nothing is written. */
  check(): Promise<void>;
  pick(path: string, side: Side): void;
  /** The merge, with the picks as settlements; new conflicts (the branches changed since the dry run) come back as the plan. */
  apply(): Promise<void>;
}

export type MergeStore = StoreApi<MergeFlow>;

/** The conflicts of a plan by path: a path that conflicts with several sources is one file to settle. */
export function conflictsByPath(plan: Pick<MergeResult, 'conflicts'>): Map<string, MergeConflict[]> {
  const byPath = new Map<string, MergeConflict[]>();
  for (const c of plan.conflicts) byPath.set(c.path, [...(byPath.get(c.path) ?? []), c]);
  return byPath;
}

/** Files the merge writes: clean (only a source changed them) and merged (both sides did, git merged them line by line). */
export function changesOf(plan: Pick<MergeResult, 'changes'>): { clean: MergeResult['changes']; merged: MergeResult['changes'] } {
  return { clean: plan.changes.filter((c) => c.how !== 'merged'), merged: plan.changes.filter((c) => c.how === 'merged') };
}

/** The conflicting paths still without a pick. */
export function unsettled(s: Pick<MergeFlow, 'plan' | 'picks'>): string[] {
  return s.plan ? [...conflictsByPath(s.plan).keys()].filter((path) => s.picks[path] === undefined) : [];
}

/** What a source may be: another branch of the target's workspace. */
export function sourceCandidates(branches: readonly Workspace[], target: Workspace): Workspace[] {
  return branches.filter((b) => b.tree === target.tree && b.id !== target.id);
}

export function createMergeStore(api: Api, target: Workspace, sources: string[] = []): MergeStore {
  return createStore<MergeFlow>()((set, get) => {
    const fail = (err: unknown) => set({ busy: null, error: humanError(err, 'branch.merge', target.name) });
    return {
      target: target.id,
      sources,
      busy: null,
      plan: null,
      merged: null,
      picks: {},
      error: null,

      toggleSource(id) {
        const { sources: now } = get();
        // Another set of sources is another merge: its dry run and picks start again.
        set({ sources: now.includes(id) ? now.filter((x) => x !== id) : [...now, id], plan: null, picks: {}, merged: null, error: null });
      },

      async check() {
        const { sources: chosen } = get();
        if (chosen.length === 0) return set({ error: 'Pick at least one branch whose changes come in.' });
        set({ busy: 'checking', error: null, merged: null });
        try {
          const plan = await api.request('branch.merge', { workspace: target.id, sources: chosen, dryRun: true });
          // Picks for files that still conflict are kept: checking again does not undo what the person settled.
          const conflicting = conflictsByPath(plan);
          set({ busy: null, plan, picks: Object.fromEntries(Object.entries(get().picks).filter(([path]) => conflicting.has(path))) });
        } catch (err) {
          fail(err);
        }
      },

      pick(path, side) {
        set({ picks: { ...get().picks, [path]: side } });
      },

      async apply() {
        const { sources: chosen, picks, plan } = get();
        if (!plan) return set({ error: 'Check the merge first: its dry run lists what it writes and what conflicts.' });
        const open = unsettled(get());
        if (open.length > 0) return set({ error: `Pick a side for every conflicting file first: ${open.join(', ')}` });
        set({ busy: 'merging', error: null });
        try {
          const take = Object.entries(picks).map(([path, side]) => ({ path, side }));
          const result = await api.request('branch.merge', { workspace: target.id, sources: chosen, ...(take.length ? { take } : {}) });
          if (result.merged || result.conflicts.length === 0) return set({ busy: null, merged: result, plan: null, picks: {} });
          set({
            busy: null,
            plan: result,
            error: `Nothing was written: ${result.conflicts.length} file(s) conflict now that did not when it was checked (the branches changed since). Pick a side for each, then merge again.`,
          });
        } catch (err) {
          fail(err);
        }
      },
    };
  });
}
