// What agents are doing, derived from the controller's per-branch record of
// their actions: the tree's "alice · typing", the desktop's pointer and feed.
import type { AgentAction, Point, ScreenSize } from '../../../main/src/api/contract.js';

/** An agent counts as busy on a branch while its last action is at most this old. */
export const ACTIVE_MS = 30_000;

/** The newest thing an agent did on the branch, if it is recent enough to be what it is doing now. */
export function agentNow(actions: readonly AgentAction[] | undefined, now: number): AgentAction | null {
  const last = actions?.at(-1);
  return last && now - Date.parse(last.at) <= ACTIVE_MS ? last : null;
}

export type Pointed = AgentAction & { cursor: Point; screen: ScreenSize };

/** The agent's last known pointer on the branch's screen: the newest action that says where it is. */
export function lastPointer(actions: readonly AgentAction[] | undefined): Pointed | null {
  const found = actions?.findLast((a) => a.cursor !== null && a.screen !== null);
  return (found as Pointed | undefined) ?? null;
}

/** The feed's lines, newest first. */
export function recentActions(actions: readonly AgentAction[] | undefined, count: number): AgentAction[] {
  return (actions ?? []).slice(-count).reverse();
}
