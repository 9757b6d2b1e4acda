// promote(branch): the branch becomes its workspace's main line and takes over
// the main line's stable host ports and desktop socket (a dev tool or a viewer
// pointed at them now sees the promoted branch, once it reconnects). The old
// main is kept as a version, discarded, or kept running as an ordinary branch
// on the promoted branch's old ports and a desktop socket of its own.
import type { Workspace } from '../protocol/entities.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import type { VersionService } from './versions.js';

export type OldMainFate = 'version' | 'discard' | 'keep';

export class PromoteService {
  constructor(
    private readonly registry: Registry,
    private readonly runtime: BranchRuntime,
    private readonly workspaces: WorkspaceService,
    private readonly versions: VersionService,
    private readonly removed: (id: string) => void,
  ) {}

  async promote(ref: string, oldMain: OldMainFate): Promise<Workspace> {
    const branch = this.workspaces.record(ref);
    const main = this.registry.listWorkspaces().find((w) => w.treeId === branch.treeId && w.isMain);
    if (!main || main.id === branch.id) return this.workspaces.lock.run(branch.id, () => this.becomeMain(branch.id));
    return this.workspaces.lock.run(main.id, () => this.workspaces.lock.run(branch.id, () => this.swap(branch.id, main.id, oldMain)));
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

  private async swap(branchId: string, mainId: string, oldMain: OldMainFate): Promise<Workspace> {
    const branch = this.workspaces.record(branchId);
    const main = this.workspaces.record(mainId);
    if (branch.state !== 'running') throw new GroveError('E_CONFLICT', `only a running branch can be promoted; '${branch.name}' is ${branch.state}`);
    if (oldMain === 'version' && main.state === 'running') await this.versions.checkpointLocked(main.id, `main before ${branch.name} was promoted`);
    await this.runtime.closeForwarders(branch.id);
    await this.runtime.closeForwarders(main.id);
    this.swapLeases(branch, main);
    // Before any forwarder re-opens: which desktop socket each serves on follows the main flag.
    this.registry.setMain(branch.treeId, branch.id);
    if (oldMain === 'keep') {
      if (main.state === 'running') await this.runtime.openForwarders(this.workspaces.record(main.id));
    } else {
      await this.workspaces.destroy(main);
      this.removed(main.id);
    }
    await this.runtime.openForwarders(this.workspaces.record(branch.id));
    // Announced after the switch, so no listener ever sees two main lines.
    if (oldMain === 'keep') this.workspaces.publish(main.id);
    return this.workspaces.publish(branch.id);
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
