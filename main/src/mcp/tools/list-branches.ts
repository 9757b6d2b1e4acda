// list_branches: every workspace as a tree of branches, with versions, and who
// the caller is (the helper's word, from the kernel's credentials).
import type { Version, Workspace } from '../../../../privileged-helper/src/protocol/entities.js';
import { noWorkspaceWords } from '../../helper-client/requests.js';
import { jsonResult, defineTool } from '../tool.js';

export const listBranchesTool = defineTool({
  name: 'list_branches',
  title: 'List branches',
  description:
    "Every workspace you may see (an agent: those a person put in its scope) with its branches: id, name, state, parent, whether it is the main line, who made it (an agent's uid, or a person), its versions (checkpoints: id, label, saved: false while one is still being written; a rollback to it waits); and who you are to Grove (role agent or person).",
  input: {},
  annotations: { readOnlyHint: true },
  async run(_args, h) {
    const [branches, versions] = await Promise.all([h.request('workspace.list', {}), h.request('version.list', {})]);
    const { role, user, uid } = h.identity;
    const found = workspaces(branches, versions);
    // An agent sees only its scope: an empty list says why in words.
    const note = found.length === 0 && role === 'agent' ? { note: noWorkspaceWords(h.identity) } : {};
    return jsonResult({ you: { role, user, uid }, workspaces: found, ...note });
  },
});

function workspaces(branches: Workspace[], versions: Version[]) {
  const nameOf = new Map(branches.map((b) => [b.id, b.name]));
  const trees = [...new Set(branches.map((b) => b.tree))];
  return trees.map((tree) => {
    const mine = branches.filter((b) => b.tree === tree);
    const main = mine.find((b) => b.main);
    return {
      mainLine: main ? { id: main.id, name: main.name } : null,
      branches: mine.map((b) => ({
        id: b.id,
        name: b.name,
        state: b.state,
        parent: b.parent ? { id: b.parent, name: nameOf.get(b.parent) ?? null } : null,
        main: b.main,
        madeBy: b.madeBy,
        versions: versions.filter((v) => v.branch === b.id).map((v) => ({ id: v.id, label: v.label, at: v.createdAt, saved: v.saved })),
      })),
      /** Checkpoints of branches since discarded: a rollback can still return to them. */
      versionsOfGoneBranches: versions
        .filter((v) => v.tree === tree && !nameOf.has(v.branch))
        .map((v) => ({ id: v.id, label: v.label, branch: v.branch, at: v.createdAt, saved: v.saved })),
    };
  });
}
