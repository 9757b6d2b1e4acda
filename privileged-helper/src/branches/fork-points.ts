// Fork points: every fork keeps a read-only btrfs snapshot of its source's
// files at the fork (taken in the freeze; its blocks are shared with the
// source and the children), the base a merge of those lines needs. A branch
// and a version name the fork point their files descend from, a fork point
// the one its source's did, so a line of descent survives the branches on it
// being discarded. One is removed when no branch or version descends from it.
import path from 'node:path';
import { GroveError } from '../protocol/wire.js';
import type { ForkPointRecord, Registry } from '../registry/registry.js';
import type { HostLedger } from '../workspaces/ledger.js';

/** Where a fork point's snapshot goes: beside the branches' files, in the same pool (a snapshot never crosses file systems). */
export function forkPointPath(workspacesDir: string, id: string): string {
  return path.join(workspacesDir, `.fork-point-${id}`);
}

/** One step up a branch's line: `branch`'s files as they were at `point` (null: as they are now). */
interface LineStep {
  branch: string;
  point: ForkPointRecord | null;
}

export class ForkPoints {
  constructor(
    private readonly registry: Registry,
    private readonly ledger: HostLedger,
  ) {}

  /** The prune under way: one at a time, so two never remove the same snapshot. */
  private pruning: Promise<unknown> = Promise.resolve();

  /** Removes every fork point no branch or version descends from any more (after a discard, a version's deletion, at start). */
  prune(): Promise<string[]> {
    const next = this.pruning.then(() => this.pruneNow());
    this.pruning = next.catch(() => undefined); // this prune's caller is told; the next one runs regardless
    return next;
  }

  private async pruneNow(): Promise<string[]> {
    const removed: string[] = [];
    for (const fp of this.registry.unneededForkPoints()) {
      await this.ledger.removeOwned(fp.id);
      this.registry.deleteForkPoint(fp.id);
      removed.push(fp.id);
    }
    return removed;
  }

  /**
   * The merge base of `target` and `source`: the files of their nearest
   * common ancestor line as they were when the later of the two lines left
   * it. Walking up from each branch, the first branch both lines pass
   * through is that ancestor; of its two fork points (or the branch itself,
   * when one line is that branch) the older one is the state both started
   * from.
   */
  base(targetId: string, sourceId: string): ForkPointRecord {
    if (targetId === sourceId) throw new GroveError('E_INVALID_PARAMS', 'a branch cannot be merged into itself');
    const targetLine = this.line(targetId);
    for (const s of this.line(sourceId)) {
      const t = targetLine.find((step) => step.branch === s.branch);
      if (!t) continue;
      const older = [s.point, t.point].filter((p) => p !== null).sort((a, b) => a.seq - b.seq)[0];
      if (older) return older;
    }
    throw new GroveError(
      'E_PRECONDITION',
      'these branches have no fork point in common (one of them was forked before fork points were kept, or they are of different workspaces)',
    );
  }

  /** The branch, then each branch its files descend from, with the fork point they left it at. */
  private line(branchId: string): LineStep[] {
    const steps: LineStep[] = [{ branch: branchId, point: null }];
    const seen = new Set<string>();
    for (let id = this.registry.forkPointOf(branchId); id !== null && !seen.has(id);) {
      seen.add(id);
      const fp = this.registry.findForkPoint(id);
      if (!fp) break;
      steps.push({ branch: fp.sourceId, point: fp });
      id = fp.parentId;
    }
    return steps;
  }
}
