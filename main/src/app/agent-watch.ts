// What agents do on each branch, for the person watching them: the tree's
// "alice · typing", and the desktop view's pointer and feed. From desktop.action
// events (every computer-use call, reads included) and audit events (every
// other call that changes something); only agents' actions, the last few per
// branch.
import { MAX_AGENT_ACTIONS, type Actor, type AgentAction, type Maker } from '../api/contract.js';
import type { AuditEntry } from '../../../privileged-helper/src/protocol/approvals.js';
import type { DesktopAction } from '../../../privileged-helper/src/protocol/desktop.js';
import { DESKTOP_DOING, callDoing, callDone } from './calls.js';

export class AgentWatch {
  private byBranch = new Map<string, AgentAction[]>();

  desktop(e: DesktopAction, agent: Actor): void {
    this.add(e.workspace, {
      by: maker(agent),
      action: e.action,
      doing: DESKTOP_DOING[e.action],
      summary: e.summary,
      cursor: e.cursor,
      screen: e.screen,
      ok: e.ok,
      at: e.at,
    });
  }

  call(branchId: string, e: AuditEntry, agent: Actor): void {
    const summary = e.outcome === 'ok' ? callDone(e.action) : `${callDone(e.action)} failed${e.detail ? `: ${e.detail}` : ''}`;
    this.add(branchId, {
      by: maker(agent),
      action: e.action,
      doing: callDoing(e.action),
      summary,
      cursor: null,
      screen: null,
      ok: e.outcome === 'ok',
      at: e.at,
    });
  }

  forget(branchId: string): void {
    this.byBranch.delete(branchId);
  }

  /** After reading everything again: branches that are gone take their history with them. */
  keepOnly(branchIds: ReadonlySet<string>): void {
    for (const id of this.byBranch.keys()) if (!branchIds.has(id)) this.byBranch.delete(id);
  }

  snapshot(): Record<string, AgentAction[]> {
    return Object.fromEntries(this.byBranch);
  }

  private add(branchId: string, action: AgentAction): void {
    this.byBranch.set(branchId, [...(this.byBranch.get(branchId) ?? []), action].slice(-MAX_AGENT_ACTIONS));
  }
}

function maker(a: Actor): Maker {
  return { role: a.role, uid: a.uid, user: a.user };
}
