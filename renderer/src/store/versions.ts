// How versions (checkpoints) read in the app: by their name, or the branch
// they were taken of and when, never by a bare hex id; which a branch's
// picker offers, and which one its row names.
import type { Version, Workspace } from '../../../main/src/api/contract.js';

/** 'before refactor · ux-one 14:02:11', or 'ux-one 14:02:11' for one without a name. */
export function versionName(v: Version, branches: readonly Pick<Workspace, 'id' | 'name'>[]): string {
  const of = branches.find((b) => b.id === v.branch)?.name ?? v.orphanOf ?? 'a discarded branch';
  const at = `${of} ${new Date(v.createdAt).toLocaleTimeString()}`;
  return v.label ? `${v.label} · ${at}` : at;
}

/** What a branch can roll back to: the versions of its workspace, its own first, newest first in each. */
export function versionsOf(branch: Pick<Workspace, 'id' | 'tree'>, versions: readonly Version[]): Version[] {
  const own = (v: Version) => (v.branch === branch.id ? 0 : 1);
  return versions.filter((v) => v.tree === branch.tree).sort((a, b) => own(a) - own(b) || b.createdAt.localeCompare(a.createdAt));
}

/** The branch's newest checkpoint of its own (a fork's row does not show its parent's). */
export function lastCheckpoint(branch: Pick<Workspace, 'id'>, versions: readonly Version[]): Version | undefined {
  let newest: Version | undefined;
  for (const v of versions) if (v.branch === branch.id && (!newest || v.createdAt > newest.createdAt)) newest = v;
  return newest;
}
