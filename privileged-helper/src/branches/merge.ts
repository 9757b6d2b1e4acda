// merge(TARGET, SOURCE…): what each source changed since its fork point with
// the target's line, brought into the target, a live branch whose processes
// keep running (its files change under them as after a `git pull`).
//
// For each source: its base is the fork point the two lines share
// (fork-points.ts), mounted read-only as the branch saw it; what the source
// changed since is the diff of the two (diff.ts: rsync in a sandbox, over
// the project's folder when it is one in both, else the whole trees), kept
// to the project's path (or everything with --all) and never Grove's own
// per-branch files, nor without --all what the source's .gitignore files
// make noise (noise.ts); each of those paths is merged
// (merge-plan.ts). Conflicts are all listed, both sides of each, before
// anything is written; unless --take settles every one, nothing is.
//
// A transaction: the target is checkpointed first (a version "before merging
// …", which a rollback returns to later); the files are then written inside
// the branch (files/merge-writer.ts). A failure on the way writes back what
// the target had at each path (and removes the folders the merge made) and
// deletes the version: the target is as it was, and still running; a helper
// killed meanwhile leaves the next start to roll the target back to that
// version if the writing had begun, and delete it (reconcile.ts). The
// target's turn is held throughout and each source's read turn, so no
// rollback, fork or discard changes them meanwhile.
import path from 'node:path';
import { forEachLimited } from '../concurrency.js';
import type { ExecService } from '../exec/exec-service.js';
import { kindInRoot } from '../host/in-root.js';
import type { MergeRequest, MergeResult, MergeStage } from '../protocol/merge.js';
import { GroveError } from '../protocol/wire.js';
import type { ForkPointRecord, Registry, WorkspaceRecord } from '../registry/registry.js';
import { undoAfter } from '../undo.js';
import type { BranchStorage } from '../workspaces/branch-storage.js';
import { injectFault, type Fault } from '../workspaces/faults.js';
import type { HostLedger } from '../workspaces/ledger.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';
import { writeInBranch, type WriteStep } from '../files/merge-writer.js';
import { diffTrees } from './diff.js';
import type { ForkPoints } from './fork-points.js';
import { Noise } from './noise.js';
import { mergeable, MergePlan, type Entry, type Trees } from './merge-plan.js';
import type { VersionService } from './versions.js';

export interface MergeDeps {
  registry: Registry;
  ledger: HostLedger;
  workspaces: WorkspaceService;
  storage: BranchStorage;
  runtime: BranchRuntime;
  exec: ExecService;
  versions: VersionService;
  forkPoints: ForkPoints;
}

export class MergeService {
  constructor(private readonly d: MergeDeps) {}

  async merge(req: MergeRequest, fault?: Fault<MergeStage>): Promise<MergeResult> {
    const target = this.d.workspaces.running(req.workspace);
    const sources = this.sourcesOf(target, req.sources);
    const scope = this.scopeOf(target, req.all ?? false);
    const takes = this.takesOf(req.take ?? [], sources, scope);
    const turns = [{ id: target.id, exclusive: true }, ...sources.map((s) => ({ id: s.id, exclusive: false }))];
    return this.underTurns(turns, () =>
      new MergeRun(this.d, `merge-${this.d.registry.freshId()}`).run(target.id, sources, {
        scope,
        all: req.all ?? false,
        takes,
        dryRun: req.dryRun ?? false,
        fault,
      }),
    );
  }

  private sourcesOf(target: WorkspaceRecord, refs: readonly string[]): WorkspaceRecord[] {
    const sources = [...new Map(refs.map((ref) => this.d.workspaces.record(ref)).map((s) => [s.id, s])).values()];
    if (sources.some((s) => s.id === target.id)) throw new GroveError('E_INVALID_PARAMS', `'${target.name}' cannot be merged into itself`);
    return sources;
  }

  /** The project's path in the target's workspace, or the whole branch. */
  private scopeOf(target: WorkspaceRecord, all: boolean): string {
    if (all) return '/';
    const project = this.d.registry.project(target.treeId);
    if (!project)
      throw new GroveError('E_PRECONDITION', `'${target.name}' has no project (its workspace was made without --project): merge everything with --all`);
    return path.posix.normalize(project.path).replace(/\/+$/, '') || '/';
  }

  /** path → 'target' or the source's id; a take of a branch that is not a source, or of a path outside the scope, is refused. */
  private takesOf(takes: NonNullable<MergeRequest['take']>, sources: WorkspaceRecord[], scope: string): Map<string, string> {
    const settled = new Map<string, string>();
    for (const t of takes) {
      const rel = path.posix.normalize(t.path);
      if (!mergeable(rel, scope))
        throw new GroveError('E_INVALID_PARAMS', `--take ${t.path}: not a path this merge writes (it merges under ${scope}, never Grove's own files)`);
      const side = t.side === 'target' ? 'target' : sources.find((s) => s.id === t.side || s.name === t.side)?.id;
      if (!side) throw new GroveError('E_INVALID_PARAMS', `--take ${t.path}=${t.side}: '${t.side}' is not one of the sources (or 'target')`);
      settled.set(rel, side);
    }
    return settled;
  }

  /** Every turn, taken in the order of the branches' ids as every operation on several takes them, so none waits on another in a circle. */
  private underTurns<T>(turns: { id: string; exclusive: boolean }[], work: () => Promise<T>): Promise<T> {
    const [first, ...rest] = [...turns].sort((a, b) => (a.id < b.id ? -1 : 1));
    if (!first) return work();
    const next = () => this.underTurns(rest, work);
    return first.exclusive ? this.d.workspaces.lock.run(first.id, next) : this.d.workspaces.lock.read(first.id, next);
  }
}

/** Each diff is an rsync walking a whole project, waiting on the disk as much as on a core: two at once overlap those waits. */
const SOURCES_READ_AT_ONCE = 2;

/** What one source changed that the merge takes, and the trees it is merged from. */
interface SourceChanges {
  source: WorkspaceRecord;
  base: ForkPointRecord;
  trees: Trees;
  paths: string[];
}

interface RunOptions {
  scope: string;
  /** --all: the whole branch, noise too. */
  all: boolean;
  takes: Map<string, string>;
  dryRun: boolean;
  fault?: Fault<MergeStage>;
}

/** One merge, under the branches' turns; its base mounts are its own host objects, removed at its end. */
class MergeRun {
  private readonly started = performance.now();
  /** Each fork point's mount, once asked for: sources that share one share its mount. */
  private readonly bases = new Map<string, Promise<string>>();

  constructor(
    private readonly d: MergeDeps,
    private readonly id: string,
  ) {}

  async run(targetId: string, sourceRecords: WorkspaceRecord[], o: RunOptions): Promise<MergeResult> {
    try {
      const target = this.d.workspaces.running(targetId);
      const targetRoot = await this.d.storage.ensureMounted(target);
      const plan = new MergePlan(o.takes);
      const sources: MergeResult['sources'] = [];
      // What each source changed is read from its own trees alone, so several
      // are read at once; they are merged in turn, each into what the ones before made.
      const changes: SourceChanges[] = [];
      await forEachLimited([...sourceRecords.entries()], SOURCES_READ_AT_ONCE, async ([i, ref]) => {
        changes[i] = await this.changesOf(target.id, targetRoot, ref.id, o);
      });
      for (const { source, base, trees, paths } of changes) {
        for (const rel of paths) await plan.mergePath(rel, trees, { target, source });
        sources.push({ id: source.id, name: source.name, base: base.id });
      }
      const result = { target: target.id, sources, scope: o.scope, dryRun: o.dryRun, changes: plan.changes, conflicts: plan.conflicts };
      if (o.dryRun || plan.conflicts.length > 0 || plan.changes.length === 0) {
        return { ...result, merged: !o.dryRun && plan.conflicts.length === 0, version: null, ms: performance.now() - this.started };
      }
      const version = await this.write(
        target,
        targetRoot,
        plan,
        sources.map((s) => s.name),
        o.fault,
      );
      // Kept in the workspace's history: its tree draws an edge from each source into the target.
      this.d.registry.recordMerge({
        treeId: target.treeId,
        targetId: target.id,
        sources: sources.map((s) => ({ id: s.id, name: s.name })),
        versionId: version,
        at: new Date().toISOString(),
      });
      this.d.workspaces.publish(target.id);
      return { ...result, merged: true, version, ms: performance.now() - this.started };
    } finally {
      await this.d.ledger.removeOwned(this.id);
    }
  }

  /** The paths a source changed since its fork point with the target's line that this merge takes, in order. */
  private async changesOf(targetId: string, targetRoot: string, sourceId: string, o: RunOptions): Promise<SourceChanges> {
    const source = this.d.workspaces.record(sourceId);
    const base = this.d.forkPoints.base(targetId, source.id);
    const trees = { base: await this.mountBase(base), target: targetRoot, source: await this.d.storage.ensureMounted(source) };
    const diff = await diffTrees(trees.base, trees.source, { maxFiles: 0, under: o.scope });
    const changed = [...diff.added, ...diff.changed, ...diff.removed].filter((p) => mergeable(p, o.scope)).sort();
    // The source's .gitignore files say what of its project is noise; with --all, everything is merged.
    const paths = o.all ? changed : await new Noise(trees.source, o.scope).keep(changed);
    return { source, base, trees, paths };
  }

  /** The fork point mounted as its branch saw it, once per merge. */
  private mountBase(fp: ForkPointRecord): Promise<string> {
    let mounted = this.bases.get(fp.id);
    if (!mounted) {
      mounted = this.d.storage.mountSnapshot(fp.path, path.join(this.d.storage.rootsDir, `${this.id}-${fp.id}`), this.id);
      this.bases.set(fp.id, mounted);
    }
    return mounted;
  }

  /** Checkpoints the target, then writes the plan into it; a failure writes back what was there and drops the version. */
  private async write(target: WorkspaceRecord, targetRoot: string, plan: MergePlan, sourceNames: string[], fault?: Fault<MergeStage>): Promise<string> {
    const version = await this.d.versions.checkpointLocked(target.id, `before merging ${sourceNames.join(', ')} into ${target.name}`);
    const exec = this.d.runtime.execTarget(target);
    const undo = undoSteps(plan, madeFolders(targetRoot, [...plan.planned.keys()]));
    const pending = { kind: 'merge', workspaceId: target.id, version: version.id } as const;
    this.d.registry.beginPendingOp({ ...pending, writing: false });
    try {
      injectFault(fault, 'checkpoint', "fault injected after the merge's checkpoint");
      this.d.registry.beginPendingOp({ ...pending, writing: true });
      await writeInBranch(
        this.d.exec,
        exec,
        target.name,
        [...plan.planned].map(([rel, entry]) => step(rel, entry)),
      );
      injectFault(fault, 'write', "fault injected after the merge's files were written");
    } catch (err) {
      throw await undoAfter(err, [() => writeInBranch(this.d.exec, exec, target.name, undo), () => this.d.versions.delete(version.id)]);
    } finally {
      this.d.registry.endPendingOp(target.id);
    }
    return version.id;
  }
}

function step(rel: string, entry: Entry): WriteStep {
  if (entry.kind === 'file' || entry.kind === 'link') return { op: 'put', path: rel, content: entry };
  return { op: 'delete', path: rel };
}

/** What writes the target's paths back as they were: each original the merge writes over, then the folders it made, deepest first. */
function undoSteps(plan: MergePlan, made: string[]): WriteStep[] {
  // What was neither file nor link there, the writer never replaced.
  const back = [...plan.planned.keys()]
    .filter((rel) => plan.original.get(rel)?.kind !== 'other')
    .map((rel) => step(rel, plan.original.get(rel) ?? { kind: 'none' }));
  return [...back, ...made.sort((a, b) => b.length - a.length).map((dir): WriteStep => ({ op: 'rmdir', path: dir }))];
}

/** The folders above `paths` that the target does not have: the merge makes them. */
function madeFolders(targetRoot: string, paths: string[]): string[] {
  const made = new Set<string>();
  for (const rel of paths) {
    for (let dir = path.posix.dirname(rel); dir !== '/' && !made.has(dir); dir = path.posix.dirname(dir)) {
      if (kindInRoot(targetRoot, dir) !== 'none') break;
      made.add(dir);
    }
  }
  return [...made];
}
