// promote(branch): the branch becomes its workspace's main line and takes over
// the main line's stable host ports and desktop socket (a dev tool or a viewer
// pointed at them now sees the promoted branch, once it reconnects). The old
// main is retired (a version is taken of it and it is stopped: it stays in its
// tree as a former main line, with its children under it), discarded, or kept
// running as an ordinary branch on the promoted branch's old ports and a
// desktop socket of its own.
//
// A transaction: the old main's version is taken, then ports and the main flag
// switch and the forwarders re-open; only when all of that is done is the old
// main retired or discarded (discarding is the one step that cannot be undone). A
// failure before (or a fault a test injects after a stage) switches back: both
// branches running on their own ports and sockets, the version made for it gone.
// A helper killed on the way leaves the next start to finish or undo it.
//
// pick(winner, rivals): a race's end as one transaction: everything is
// checked first, the winner is promoted as above, and only once the switch
// is made are the rivals discarded (or kept) with the old main. A helper
// killed after the switch finishes the promotion on its next start; rivals
// not discarded yet stay as branches, for a person to discard.
import type { LosersFate, OldMainFate, PickResult, PromoteStage, Workspace } from '../protocol/entities.js';
import { GroveError } from '../protocol/wire.js';
import type { PendingOp, PortLease, Registry, WorkspaceRecord } from '../registry/registry.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import { injectFault, type Fault } from '../workspaces/faults.js';
import type { VersionService } from './versions.js';
import { undoAfter } from '../undo.js';

export class PromoteService {
  constructor(
    private readonly registry: Registry,
    private readonly runtime: BranchRuntime,
    private readonly workspaces: WorkspaceService,
    private readonly versions: VersionService,
  ) {}

  async promote(ref: string, oldMain: OldMainFate, fault?: Fault<PromoteStage>): Promise<Workspace> {
    const branch = this.workspaces.record(ref);
    const main = this.registry.listWorkspaces().find((w) => w.treeId === branch.treeId && w.isMain);
    if (!main || main.id === branch.id) return this.workspaces.lock.run(branch.id, () => this.becomeMain(branch.id));
    return this.underBothLocks(branch.id, main.id, () => this.swap(branch.id, main.id, oldMain, fault));
  }

  /** Promotes `winnerRef` and discards (or keeps) its rivals, under the turns of all of them. */
  async pick(winnerRef: string, rivalRefs: string[], losers: LosersFate, oldMain: OldMainFate, fault?: Fault<PromoteStage>): Promise<PickResult> {
    const winner = this.workspaces.record(winnerRef);
    const main = this.registry.listWorkspaces().find((w) => w.treeId === winner.treeId && w.isMain);
    const rivals = rivalRefs.map((ref) => this.workspaces.record(ref));
    const seen = new Set<string>();
    for (const r of rivals) {
      if (r.id === winner.id) throw new GroveError('E_INVALID_PARAMS', `'${r.name}' cannot be both the winner and a rival`);
      if (seen.has(r.id)) throw new GroveError('E_INVALID_PARAMS', `'${r.name}' is named twice among the rivals`);
      if (r.treeId !== winner.treeId) throw new GroveError('E_INVALID_PARAMS', `'${r.name}' is not a branch of ${winner.name}'s workspace`);
      if (r.id === main?.id) throw new GroveError('E_INVALID_PARAMS', `'${r.name}' is the main line: what becomes of it is oldMain's to say, not a rival's`);
      seen.add(r.id);
    }
    const discard = losers === 'discard' ? rivals.map((r) => r.id) : [];
    const turns = [winner.id, ...(main && main.id !== winner.id ? [main.id] : []), ...discard];
    return this.underLocks(turns, async () => {
      let oldMainVersion: string | null = null;
      const promoted =
        !main || main.id === winner.id
          ? await this.becomeMain(winner.id)
          : await this.swap(winner.id, main.id, oldMain, fault, (version) => {
              oldMainVersion = version;
              return this.discardRivals(discard);
            });
      if (!main || main.id === winner.id) await this.discardRivals(discard);
      return { main: promoted, discarded: discard, kept: losers === 'keep' ? rivals.map((r) => r.id) : [], oldMainVersion };
    });
  }

  /** Rivals that lost, each a discard of its own (a helper killed in one finishes it on its next start). */
  private async discardRivals(ids: string[]): Promise<void> {
    for (const id of ids) {
      this.registry.beginPendingOp({ kind: 'discard', workspaceId: id });
      await this.workspaces.destroy(this.workspaces.record(id));
    }
  }

  /**
   * A promotion the last helper was killed in (reconcile.ts): one whose
   * switch was made (the branch is its tree's main line) is finished, any
   * other is undone.
   */
  async resumePromotion(op: Extract<PendingOp, { kind: 'promote' }>): Promise<void> {
    await this.underBothLocks(op.workspaceId, op.mainId, async () => {
      try {
        const branch = this.registry.findWorkspace(op.workspaceId);
        const main = this.registry.findWorkspace(op.mainId);
        if (branch?.isMain) await this.settleOldMain(branch.id, main?.id ?? null, op.oldMain);
        else if (branch && main) await this.switchBack(main, op.leases, op.version);
      } finally {
        this.registry.endPendingOp(op.workspaceId);
      }
    });
  }

  /** Both turns in the one order every two-branch operation takes them (by id), so none waits on another in a circle. */
  private underBothLocks<T>(a: string, b: string, work: () => Promise<T>): Promise<T> {
    return this.underLocks([a, b], work);
  }

  /** The turns of all these branches, taken in id order (as every operation on several takes them). */
  private underLocks<T>(ids: string[], work: () => Promise<T>): Promise<T> {
    return [...ids].sort().reduceRight<() => Promise<T>>((inner, id) => () => this.workspaces.lock.run(id, inner), work)();
  }

  /** A tree without a main line (it was discarded): the branch becomes it, and serves its desktop on the main line's socket. */
  private async becomeMain(branchId: string): Promise<Workspace> {
    const branch = this.workspaces.record(branchId);
    if (!branch.isMain) {
      this.registry.setMain(branch.treeId, branch.id);
      if (branch.state === 'running') await this.runtime.openForwarders(this.workspaces.record(branch.id));
    }
    return this.workspaces.publish(branch.id);
  }

  /** The promotion proper, pending in the registry from the old main's version on until it is done or undone. */
  private async swap(
    branchId: string,
    mainId: string,
    oldMain: OldMainFate,
    fault?: Fault<PromoteStage>,
    /** Runs once the switch is made, before the old main is settled (a pick's discards of its rivals), with the old main's version. */
    afterSwitch?: (version: string | null) => Promise<void>,
  ): Promise<Workspace> {
    const branch = this.workspaces.record(branchId);
    const main = this.workspaces.record(mainId);
    if (branch.state !== 'running') throw new GroveError('E_CONFLICT', `only a running branch can be promoted; '${branch.name}' is ${branch.state}`);
    const version =
      oldMain === 'version' && main.state === 'running' ? await this.versions.checkpointLocked(main.id, `main before ${branch.name} was promoted`) : null;
    const leases = [branch, main].map((w) => ({ id: w.id, ports: this.registry.ports(w.id) }));
    this.registry.beginPendingOp({ kind: 'promote', workspaceId: branch.id, mainId: main.id, oldMain, version: version?.id ?? null, leases });
    try {
      try {
        injectFault(fault, 'checkpoint', "fault injected after the promotion's checkpoint");
        await this.switchMain(branch, main);
        injectFault(fault, 'switch', "fault injected after the promotion's switch");
        await this.openBoth(branch.id, main.id);
        injectFault(fault, 'open', "fault injected after the promotion's open");
      } catch (err) {
        throw await undoAfter(err, [() => this.switchBack(main, leases, version?.id ?? null)]);
      }
      await afterSwitch?.(version?.id ?? null);
      return await this.settleOldMain(branch.id, main.id, oldMain);
    } finally {
      this.registry.endPendingOp(branch.id);
    }
  }

  /** Once the switch is made: the old main is retired (stopped), discarded (the one step that cannot be undone), or left running. */
  private async settleOldMain(branchId: string, mainId: string | null, oldMain: OldMainFate): Promise<Workspace> {
    if (mainId !== null && oldMain === 'discard') await this.workspaces.destroy(this.workspaces.record(mainId));
    if (mainId !== null && oldMain === 'version') await this.retire(mainId);
    // Announced after the switch, so no listener ever sees two main lines.
    if (mainId !== null && oldMain !== 'discard') this.workspaces.publish(mainId);
    return this.workspaces.publish(branchId);
  }

  /** The old main line stops and is marked retired: its files stay, and the version taken before the switch returns it to where it was. */
  private async retire(mainId: string): Promise<void> {
    const old = this.workspaces.record(mainId);
    await this.runtime.tearDown(old);
    this.registry.transaction(() => {
      if (old.state === 'running') this.registry.setWorkspaceState(old.id, 'stopped', null);
      this.registry.setRetired(old.id, new Date().toISOString());
    });
  }

  /** Ports and the main flag change hands; which desktop socket each serves on follows the flag, so forwarders are closed first. */
  private async switchMain(to: WorkspaceRecord, from: WorkspaceRecord): Promise<void> {
    await this.runtime.closeForwarders(to.id);
    await this.runtime.closeForwarders(from.id);
    // One transaction: a helper killed here leaves both switched or neither (resumePromotion tells which by the flag).
    this.registry.transaction(() => {
      this.swapLeases(to, from);
      this.registry.setMain(to.treeId, to.id);
    });
  }

  /** Re-opens the forwarders of both branches that run (an old main that goes is still served until it goes). */
  private async openBoth(...ids: string[]): Promise<void> {
    for (const id of ids) {
      const ws = this.workspaces.record(id);
      if (ws.state === 'running') await this.runtime.openForwarders(ws);
    }
  }

  /** Undoes a promotion that failed before the old main went: it is the main line again, each on the ports it had. */
  private async switchBack(main: WorkspaceRecord, leases: { id: string; ports: PortLease[] }[], versionId: string | null): Promise<void> {
    for (const { id } of leases) await this.runtime.closeForwarders(id);
    this.registry.transaction(() => {
      // Freed first: a host port is leased to one branch at a time.
      for (const { id, ports } of leases) for (const p of ports) this.registry.setPort(id, p.containerPort, null);
      for (const { id, ports } of leases) for (const p of ports) this.registry.setPort(id, p.containerPort, p.hostPort);
      this.registry.setMain(main.treeId, main.id);
    });
    await this.openBoth(...leases.map((l) => l.id));
    if (versionId) await this.versions.delete(versionId);
  }

  /** The branch takes the main line's host ports; the main line gets the branch's. */
  private swapLeases(branch: WorkspaceRecord, main: WorkspaceRecord): void {
    const branchPorts = this.registry.ports(branch.id);
    const mainPorts = new Map(this.registry.ports(main.id).map((p) => [p.containerPort, p.hostPort]));
    this.registry.transaction(() => {
      for (const p of branchPorts) this.registry.setPort(branch.id, p.containerPort, null);
      for (const [port] of mainPorts) this.registry.setPort(main.id, port, null);
      for (const p of branchPorts) {
        const taken = mainPorts.get(p.containerPort);
        this.registry.setPort(branch.id, p.containerPort, taken ?? p.hostPort);
        if (mainPorts.has(p.containerPort)) this.registry.setPort(main.id, p.containerPort, p.hostPort);
      }
    });
  }
}
