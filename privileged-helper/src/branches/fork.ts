// fork(branch, N): one running branch becomes N new sibling branches at one
// point in time while the source keeps running. A fork is a transaction: every
// host object is recorded in the ledger as it is made (children under their
// own ids, scratch objects under the fork's id), and any failure — or an
// injected one — removes everything made so far in reverse order, and checks
// that the source is running on unharmed.
//
//   prepare  reserve the children (ids, names, networks) — the source is untouched
//   dump     CRIU --leave-running --tcp-established; its post-dump action snapshots the
//            source's root while the tree is still frozen (one instant for memory and files)
//   thaw     the source runs on (verified)
//   restore  each child: a writable snapshot of the fork point (branch-storage.ts), its own identity,
//            the tree restored into its own netns (in parallel)
//   expose   each child's desktop socket and host ports open; wait for its first VNC frame
//   commit   children become 'running' and are announced
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { netnsPath } from '../host/netns.js';
import { BRANCH_HEADROOM_BYTES, mib, requireSpace } from '../host/space.js';
import { isSameProcess } from '../host/proc.js';
import { firstFrame } from '../host/rfb-probe.js';
import type { ForkReport, ForkStage, Workspace } from '../protocol/entities.js';
import type { Maker } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import type { BranchDeps } from './branch-deps.js';
import { refuseFaultsUnlessAllowed } from '../workspaces/faults.js';
import type { WorkspaceRecord } from '../registry/registry.js';
import { writeIdentity } from '../workspaces/workspace-service.js';

export const MAX_COPIES = 16;

export interface ForkOptions {
  copies: number;
  names?: string[];
  /** Who forks: the children are theirs (an agent may discard what it forked without asking). */
  madeBy: Maker;
  /** Test switch: fail right after this stage (refused unless the helper allows fault injection). */
  faultAt?: ForkStage;
}

export interface ForkDeps extends BranchDeps {
  scratchDir: string;
  /** The terminals open in a running branch: they stay with the source (said in the report). */
  terminalsIn: (ws: WorkspaceRecord) => { session: string; command: string }[];
  allowFaultInjection: boolean;
  progress: (job: string, stage: string, message: string, done: boolean) => void;
}

export class ForkService {
  constructor(private readonly d: ForkDeps) {}

  async fork(ref: string, opts: ForkOptions): Promise<ForkReport> {
    refuseFaultsUnlessAllowed(this.d.allowFaultInjection, opts.faultAt);
    if (opts.names && opts.names.length !== opts.copies) throw new GroveError('E_INVALID_PARAMS', `give ${opts.copies} names, or none`);
    const source = this.d.workspaces.running(ref);
    return this.d.workspaces.lock.run(source.id, () => new ForkTransaction(this.d, this.d.workspaces.running(source.id), opts).run());
  }
}

class ForkTransaction {
  private readonly id: string;
  private readonly children: WorkspaceRecord[] = [];
  private readonly started = performance.now();
  private readonly timings = { prepare: 0, dump: 0, sourceFrozen: 0, thaw: 0, restore: 0, expose: 0, firstFrame: 0, total: 0 };

  constructor(
    private readonly d: ForkDeps,
    private readonly source: WorkspaceRecord,
    private readonly opts: ForkOptions,
  ) {
    this.id = `fork-${d.registry.freshId()}`;
  }

  async run(): Promise<ForkReport> {
    try {
      const imagesDir = await this.stage('prepare', () => this.prepare());
      const forkPoint = await this.stage('dump', () => this.dump(imagesDir));
      await this.stage('thaw', () => this.verifySourceRunning());
      await this.stage('restore', () => allSettled(this.children.map((c) => this.restoreChild(c, imagesDir, forkPoint))));
      await this.stage('expose', () => allSettled(this.children.map((c) => this.expose(c))));
      const children = await this.stage('commit', async () => this.commit());
      this.timings.total = performance.now() - this.started;
      this.d.registry.recordFork({ fork: this.id, source: this.source, copies: children.length, timings: this.timings });
      this.d.progress(this.id, 'done', `forked ${this.source.name} into ${children.length} in ${Math.round(this.timings.total)} ms`, true);
      return { fork: this.id, source: this.source.id, children, timings: this.timings, leftBehind: this.leftBehind() };
    } catch (err) {
      await this.unwind();
      throw err;
    } finally {
      await this.d.ledger.removeOwned(this.id);
    }
  }

  private async stage<T>(name: ForkStage, work: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    const result = await work();
    const ms = performance.now() - t0;
    if (name in this.timings) this.timings[name as keyof typeof this.timings] = ms;
    this.d.progress(this.id, name, `${name}: ${Math.round(ms)} ms`, false);
    if (this.opts.faultAt === name) throw new GroveError('E_HOST', `fault injected after stage '${name}'`);
    return result;
  }

  private async prepare(): Promise<string> {
    await this.requireSpace();
    const names = this.opts.names ?? this.childNames();
    const ports = this.d.registry.ports(this.source.id).map((p) => p.containerPort);
    for (const name of names) {
      const child = this.d.workspaces.reserve({ name, image: this.source.image, parent: this.source, ports, madeBy: this.opts.madeBy });
      this.children.push(child);
      await this.d.runtime.prepareHost(child);
    }
    const imagesDir = path.join(this.d.scratchDir, this.id);
    await this.d.ledger.make({ kind: 'directory', name: imagesDir, owner: this.id }, () => mkdir(imagesDir, { recursive: true, mode: 0o700 }));
    return imagesDir;
  }

  /** Room for the dump (the source's memory) in the scratch space and for each child's first writes in the pool. */
  private async requireSpace(): Promise<void> {
    const dump = (await this.d.runtime.usage(this.source)).dumpableBytes;
    await requireSpace(`a fork of '${this.source.name}' into ${this.opts.copies}`, [
      { where: 'the pool', dir: this.d.storage.workspacesDir, bytes: this.opts.copies * BRANCH_HEADROOM_BYTES, why: `${mib(BRANCH_HEADROOM_BYTES)} MiB for each child's first writes` },
      { where: 'the scratch space', dir: path.dirname(this.d.scratchDir), bytes: dump, why: "the dump of the source's memory" },
    ]);
  }

  /** Terminals open in the source: their shells belong to the helper's sessions, so CRIU (dumping the branch's own tree) leaves them out. */
  private leftBehind(): string[] {
    return this.d.terminalsIn(this.source).map(
      (t) => `terminal ${t.session} (${t.command}) stays with ${this.source.name}: the children start without it; open a new one in them`,
    );
  }

  /** Free names NAME-1, NAME-2… that do not exist yet. */
  private childNames(): string[] {
    const base = this.source.name.replace(/-\d+$/, '').slice(0, 26);
    const names: string[] = [];
    for (let k = 1; names.length < this.opts.copies; k++) {
      const name = `${base}-${k}`;
      if (!this.d.registry.findWorkspace(name)) names.push(name);
    }
    return names;
  }

  private async dump(imagesDir: string): Promise<string> {
    const forkPoint = path.join(path.dirname(this.d.storage.filesPath(this.source)), `.fork-point-${this.id}`);
    this.d.registry.recordObject({ kind: 'subvolume', name: forkPoint, owner: this.id });
    const { sourceFrozenMs } = await this.d.criu.dump({
      initPid: this.source.pid!,
      netnsPath: netnsPath(this.d.runtime.netPlan(this.source).netns),
      imagesDir,
      snapshot: { from: this.d.storage.filesPath(this.source), to: forkPoint },
      binds: this.d.storage.externalBinds(this.source).map((b) => b.containerPath),
      userns: this.d.runtime.idRange(this.source) !== null,
    });
    this.timings.sourceFrozen = sourceFrozenMs ?? this.timings.dump;
    return forkPoint;
  }

  private async verifySourceRunning(): Promise<void> {
    if (!(await sourceAlive(this.source))) throw new GroveError('E_HOST', `the source '${this.source.name}' is not running after the dump`);
  }

  private async restoreChild(child: WorkspaceRecord, imagesDir: string, forkPoint: string): Promise<void> {
    const rootfs = await this.d.storage.createFrom(child, forkPoint);
    await writeIdentity(rootfs, child, this.d.storage.owner(child));
    const pid = await this.d.criu.restore({
      imagesDir,
      rootfs,
      netnsPath: netnsPath(this.d.runtime.netPlan(child).netns),
      hostname: child.hostname,
      name: child.id,
      binds: this.d.storage.externalBinds(child),
      cgroups: this.d.runtime.cgroups(child),
      userns: this.d.runtime.idRange(child) !== null,
    });
    await this.d.storage.bindExternals(child);
    const proc = await this.d.runtime.adoptProcess(child, pid);
    this.d.registry.setWorkspaceState(child.id, 'creating', proc);
  }

  private async expose(child: WorkspaceRecord): Promise<void> {
    await this.d.runtime.openForwarders(child);
    // Through the desktop socket, as a person's viewer sees it.
    const t0 = performance.now();
    await firstFrame({ path: this.d.runtime.vncSocketPath(child) }, { timeoutMs: 30_000 });
    this.timings.firstFrame = Math.max(this.timings.firstFrame, performance.now() - t0);
  }

  private commit(): Workspace[] {
    return this.children.map((c) => {
      const restored = this.d.registry.findWorkspace(c.id)!;
      this.d.registry.setWorkspaceState(c.id, 'running', { pid: restored.pid!, pidStart: restored.pidStart! });
      return this.d.workspaces.publish(c.id);
    });
  }

  /** Removes every child made so far, newest first, and checks the source survived. */
  private async unwind(): Promise<void> {
    for (const child of [...this.children].reverse()) await this.d.workspaces.destroy(child);
    await this.d.ledger.removeOwned(this.id);
    if (!(await sourceAlive(this.source))) {
      this.d.progress(this.id, 'failed', `the source '${this.source.name}' is no longer running`, true);
    } else {
      this.d.progress(this.id, 'failed', 'fork undone; the source runs on unchanged', true);
    }
  }
}

/** Running and not left stopped (state T) by an interrupted dump. */
async function sourceAlive(ws: WorkspaceRecord): Promise<boolean> {
  if (ws.pid === null || ws.pidStart === null || !(await isSameProcess(ws.pid, ws.pidStart))) return false;
  const stat = await readFile(`/proc/${ws.pid}/stat`, 'utf8').catch(() => '');
  const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
  return state !== 'T' && state !== 't' && state !== 'Z';
}

/**
 * Like Promise.all, but waits for every task before failing: an unwind must not
 * start while a sibling's restore is still running (its tree would be left
 * behind, unrecorded).
 */
export async function allSettled(tasks: Promise<unknown>[]): Promise<void> {
  const failed = (await Promise.allSettled(tasks)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}
