// "Take home": a branch's work as a commit on a new branch of a repository on
// this machine. The repository and branch name are remembered per workspace
// (the last ones exported to); the export's patch is reviewed first, then
// exported. A vanilla zustand store, one per branch being taken home.
import { z } from 'zod';
import { createStore, type StoreApi } from 'zustand/vanilla';
import type { ExportResult, RequestResult, Workspace } from '../../../main/src/api/contract.js';
import { humanError, type Api } from '../api/client.js';

export interface ExportTarget {
  repo: string;
  branch: string;
}

const REMEMBERED_KEY = 'grove.takeHome';
const Remembered = z.record(z.string(), z.strictObject({ repo: z.string(), branch: z.string() }));

/** Where each workspace (tree id) was last taken home; what cannot be read is forgotten. */
function readRemembered(storage: Storage): Record<string, ExportTarget> {
  try {
    return Remembered.parse(JSON.parse(storage.getItem(REMEMBERED_KEY) ?? '{}'));
  } catch {
    return {};
  }
}

export function rememberTarget(storage: Storage, tree: string, target: ExportTarget): void {
  storage.setItem(REMEMBERED_KEY, JSON.stringify({ ...readRemembered(storage), [tree]: target }));
}

/** The workspace's last target; at first, the repository its project was copied from and a branch named after the branch. */
export function initialTarget(storage: Storage, branch: Pick<Workspace, 'tree' | 'name' | 'project'>): ExportTarget {
  return readRemembered(storage)[branch.tree] ?? { repo: branch.project?.hostPath ?? '', branch: `grove/${branch.name}` };
}

/** Why a target cannot be exported to, in words, before asking the helper (which checks the rest: a repository, a new branch); null when it may. */
export function targetProblem(t: ExportTarget): string | null {
  if (!t.repo.trim()) return 'Name the repository: its folder on this machine.';
  if (!t.repo.startsWith('/')) return `The repository is named by its full path on this machine, starting with / (not '${t.repo}').`;
  if (!t.branch.trim()) return 'Name the new branch the commit goes on.';
  if (/\s/.test(t.branch)) return `A git branch name has no spaces: '${t.branch}'.`;
  return null;
}

/** Why a branch has nothing to take home; null when it has a project copied from a git repository. */
export function nothingToTakeHome(branch: Pick<Workspace, 'project'>): string | null {
  if (!branch.project) return 'Its workspace was made without a project folder: there is no project to commit.';
  if (!branch.project.commit)
    return `Its project (${branch.project.hostPath}) was not at the top of a git repository when it was copied: there is no commit to build on.`;
  return null;
}

export type Review = RequestResult<'branch.exportReview'>;

export interface TakeHomeFlow {
  target: ExportTarget;
  /** A version of the workspace to export the changes since; null: since the workspace was made. */
  since: string | null;
  message: string;
  /** Replace a branch of that name in the repository. */
  replace: boolean;
  busy: 'reviewing' | 'exporting' | null;
  /** The commit to be made, as a patch; null until reviewed (and after `since` changes). */
  review: Review | null;
  exported: ExportResult | null;
  error: string | null;

  setTarget(t: Partial<ExportTarget>): void;
  setSince(version: string | null): void;
  setMessage(message: string): void;
  setReplace(on: boolean): void;
  reviewIt(): Promise<void>;
  /** Exports (after a review); the target is remembered for the workspace once it worked. */
  exportIt(): Promise<void>;
}

export type TakeHomeStore = StoreApi<TakeHomeFlow>;

export function createTakeHomeStore(api: Api, branch: Workspace, storage: Storage): TakeHomeStore {
  return createStore<TakeHomeFlow>()((set, get) => {
    const fail = (err: unknown, method: 'branch.export' | 'branch.exportReview') => set({ busy: null, error: humanError(err, method, branch.name) });
    const sinceParam = () => (get().since ? { since: get().since! } : {});
    return {
      target: initialTarget(storage, branch),
      since: null,
      message: '',
      replace: false,
      busy: null,
      review: null,
      exported: null,
      error: null,

      setTarget(t) {
        set({ target: { ...get().target, ...t }, exported: null, error: null });
      },
      setSince(version) {
        set({ since: version, review: null, exported: null, error: null });
      },
      setMessage(message) {
        set({ message });
      },
      setReplace(on) {
        set({ replace: on });
      },

      async reviewIt() {
        set({ busy: 'reviewing', error: null, exported: null });
        try {
          set({ busy: null, review: await api.request('branch.exportReview', { workspace: branch.id, ...sinceParam() }) });
        } catch (err) {
          set({ review: null });
          fail(err, 'branch.exportReview');
        }
      },

      async exportIt() {
        const { target, review, message, replace } = get();
        if (!review) return set({ error: 'Review the commit first.' });
        const problem = targetProblem(target);
        if (problem) return set({ error: problem });
        set({ busy: 'exporting', error: null });
        try {
          const exported = await api.request('branch.export', {
            workspace: branch.id,
            repo: target.repo.trim(),
            branch: target.branch.trim(),
            ...(replace ? { force: true } : {}),
            ...(message.trim() ? { message: message.trim() } : {}),
            ...sinceParam(),
          });
          rememberTarget(storage, branch.tree, { repo: target.repo.trim(), branch: target.branch.trim() });
          set({ busy: null, exported });
        } catch (err) {
          fail(err, 'branch.export');
        }
      },
    };
  });
}
