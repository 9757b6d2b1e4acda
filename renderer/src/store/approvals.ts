// What the approvals queue shows, derived from the controller's state: the
// requests that wait for a person (until their deadline), those approved and
// being carried out, the time left, and the standing approvals per workspace.
import type { AgentRequestKind, AppState, Approval, Grant, Workspace } from '../../../main/src/api/contract.js';

type WithServer = { server: AppState | null };

export function isPending(a: Pick<Approval, 'state'>): boolean {
  return a.state === 'pending';
}

/** Requests that wait for a person's decision (not past their deadline), the oldest first. */
export function pendingApprovals(s: WithServer, now: number): Approval[] {
  return (s.server?.approvals ?? []).filter((a) => isPending(a) && Date.parse(a.expiresAt) > now);
}

/** What the queue lists: the requests that wait, and those approved and being carried out. */
export function queuedApprovals(s: WithServer, now: number): Approval[] {
  return (s.server?.approvals ?? []).filter((a) => a.state === 'running' || (isPending(a) && Date.parse(a.expiresAt) > now));
}

/** Time before a request times out, as m:ss ('0:00' once past). */
export function timeLeft(a: Pick<Approval, 'expiresAt'>, now: number): string {
  const secs = Math.max(0, Math.ceil((Date.parse(a.expiresAt) - now) / 1000));
  return `${Math.floor(secs / 60)}:${String(secs % 60).padStart(2, '0')}`;
}

export function grantFor(grants: readonly Grant[], tree: string, kind: AgentRequestKind): Grant | undefined {
  return grants.find((g) => g.tree === tree && g.kind === kind);
}

export interface WorkspaceTree {
  tree: string;
  /** Its main line's name (what a person calls the workspace). */
  name: string;
}

/** The workspaces standing approvals are set for: one per tree of branches, named by its main line, in name order. */
export function workspacesOf(branches: readonly Workspace[]): WorkspaceTree[] {
  const byTree = new Map<string, Workspace>();
  for (const b of branches) {
    const known = byTree.get(b.tree);
    if (!known || (b.main && !known.main)) byTree.set(b.tree, b);
  }
  return [...byTree.values()].map((b) => ({ tree: b.tree, name: b.name })).sort((a, b) => a.name.localeCompare(b.name));
}
