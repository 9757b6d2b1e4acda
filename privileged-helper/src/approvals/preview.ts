// What a person sees before deciding an agent's request: the branch's screen,
// the files it changed, and what would be lost. Made once, when the request is
// opened; a part that cannot be made is left out with a note that says why.
import { readFile } from 'node:fs/promises';
import { diffTrees } from '../branches/diff.js';
import { Noise } from '../branches/noise.js';
import type { DesktopService } from '../desktop/desktop-service.js';
import { pidNamespace, pidsByNamespace } from '../host/proc.js';
import type { AgentRequestAction, ApprovalPreview } from '../protocol/approvals.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { BranchStorage } from '../workspaces/branch-storage.js';
import type { MergeService } from '../branches/merge.js';
import { PREVIEW_PATCH_BYTES, type Exporter } from '../files/export.js';

const THUMBNAIL_WIDTH = 320;
const DIFF_PATHS_SHOWN = 12;
const PROCESS_NAMES_SHOWN = 8;
/** A preview part that takes longer is left out: the request must reach the person promptly. */
const PART_TIMEOUT_MS = 15_000;

export interface PreviewDeps {
  registry: Registry;
  runtime: BranchRuntime;
  storage: BranchStorage;
  desktop: DesktopService;
  merges: MergeService;
  exporter: Exporter;
}

export class PreviewMaker {
  constructor(private readonly d: PreviewDeps) {}

  async make(ws: WorkspaceRecord, action: AgentRequestAction): Promise<ApprovalPreview> {
    const notes: string[] = [];
    const part = async <T>(what: string, make: () => Promise<T | null>): Promise<T | null> => {
      try {
        return await withTimeout(make(), PART_TIMEOUT_MS, what);
      } catch (err) {
        notes.push(`no ${what}: ${(err as Error).message}`);
        return null;
      }
    };
    const running = ws.state === 'running' && ws.pid !== null;
    const losing = action.kind === 'branch.discard' || action.kind === 'workspace.stop' || action.kind === 'branch.rollback';
    const compareWith = this.comparisonBase(ws, action, notes);
    const [thumbnail, diff, processes, exported] = await Promise.all([
      running && action.kind !== 'egress.policy' ? part('thumbnail', () => this.thumbnail(ws)) : null,
      action.kind === 'branch.merge'
        ? part('dry run of the merge', () => this.mergePreview(ws, action, notes))
        : compareWith
          ? part('diff', () => this.diff(compareWith, ws))
          : null,
      losing && running ? part('process list', () => processesOf(ws.pid!)) : null,
      action.kind === 'branch.export' ? part('patch of the export', () => this.exportPreview(ws, action, notes)) : null,
    ]);
    const versions = action.kind === 'egress.policy' ? null : this.d.registry.listVersions(ws.treeId).filter((v) => v.branchId === ws.id).length;
    return { thumbnail, diff, processes, versions, notes, ...(action.kind === 'branch.export' ? { export: exported } : {}) };
  }

  /** Promote: against the main line. Discard: against the parent (what the branch did since its fork). */
  private comparisonBase(ws: WorkspaceRecord, action: AgentRequestAction, notes: string[]): WorkspaceRecord | null {
    if (action.kind === 'branch.promote') {
      const main = this.d.registry.listWorkspaces().find((w) => w.treeId === ws.treeId && w.isMain);
      if (!main || main.id === ws.id) notes.push('no diff: it is the main line already');
      return main && main.id !== ws.id ? main : null;
    }
    if (action.kind !== 'branch.discard') return null;
    const parent = ws.parentId === null ? null : this.d.registry.findWorkspace(ws.parentId);
    if (!parent) notes.push(ws.parentId === null ? 'no diff: it was created, not forked' : 'no diff: its parent is gone');
    return parent;
  }

  /** A merge: its dry run, as the files it would write and delete in the branch; its conflicts in the notes. */
  private async mergePreview(
    ws: WorkspaceRecord,
    action: Extract<AgentRequestAction, { kind: 'branch.merge' }>,
    notes: string[],
  ): Promise<NonNullable<ApprovalPreview['diff']>> {
    const r = await this.d.merges.merge({ workspace: ws.id, sources: action.sources, take: action.take, all: action.all, dryRun: true });
    if (r.conflicts.length > 0)
      notes.push(`${r.conflicts.length} conflict(s), so nothing would be merged: ${r.conflicts.map((c) => `${c.path} (${c.kind}, ${c.source})`).join(', ')}`);
    const first = r.sources[0]!;
    return {
      against: { id: first.id, name: r.sources.map((s) => s.name).join(', ') },
      added: 0,
      changed: r.changes.filter((c) => c.action === 'write').length,
      removed: r.changes.filter((c) => c.action === 'delete').length,
      paths: r.changes.slice(0, DIFF_PATHS_SHOWN).map((c) => `${c.action === 'write' ? '~' : '-'} ${c.path}`),
    };
  }

  /** An export: where it goes, and the whole commit as a patch (noise left out), made without writing into the repository. */
  private async exportPreview(
    ws: WorkspaceRecord,
    action: Extract<AgentRequestAction, { kind: 'branch.export' }>,
    notes: string[],
  ): Promise<NonNullable<ApprovalPreview['export']>> {
    const { kind: _, ...params } = action;
    const { patch, cut } = await this.d.exporter.preview(ws.id, params);
    if (cut) notes.push(`the patch is cut at ${PREVIEW_PATCH_BYTES / 2 ** 20} MiB; the export takes all of it`);
    return { repo: action.repo, branch: action.branch, patch };
  }

  private thumbnail(ws: WorkspaceRecord): Promise<string> {
    return this.d.desktop.thumbnail(this.d.runtime.desktopTarget(ws), THUMBNAIL_WIDTH);
  }

  private async diff(from: WorkspaceRecord, to: WorkspaceRecord): Promise<NonNullable<ApprovalPreview['diff']>> {
    const root = await this.d.storage.ensureMounted(to);
    const d = await diffTrees(await this.d.storage.ensureMounted(from), root, { noise: new Noise(root, this.d.registry.project(to.treeId)?.path ?? null) });
    const paths = [...d.added.map((p) => `+ ${p}`), ...d.changed.map((p) => `~ ${p}`), ...d.removed.map((p) => `- ${p}`)];
    return {
      against: { id: from.id, name: from.name },
      added: d.added.length,
      changed: d.changed.length,
      removed: d.removed.length,
      paths: paths.slice(0, DIFF_PATHS_SHOWN),
    };
  }
}

/** The processes in a branch's pid namespace, and their names, the most frequent first. */
async function processesOf(initPid: number): Promise<{ count: number; names: string[] }> {
  const ns = await pidNamespace(initPid);
  if (ns === null) throw new Error('the branch stopped meanwhile');
  const pids = (await pidsByNamespace(new Set([ns]))).get(ns) ?? [];
  const counts = new Map<string, number>();
  for (const pid of pids) {
    const name = (await readFile(`/proc/${pid}/comm`, 'utf8').catch(() => '')).trim(); // exited since it was listed
    if (name) counts.set(name, (counts.get(name) ?? 0) + 1);
  }
  const names = [...counts].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0])).map(([n, c]) => (c > 1 ? `${n} ×${c}` : n));
  return { count: pids.length, names: names.slice(0, PROCESS_NAMES_SHOWN) };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the ${what} took longer than ${ms / 1000} s`)), ms)));
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
