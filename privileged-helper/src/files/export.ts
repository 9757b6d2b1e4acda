// A branch's work taken home: what it changed in its project, since the
// workspace was made, as one git commit whose parent is the commit the
// project was copied at, on a new branch of the person's repository, or as a
// patch `git am` takes. Git itself writes it, run as the caller: the files
// come out of the branch into a private folder of theirs (file-copy.ts), and
// a temporary index and that folder as the work tree make the tree; the
// repository's own checkout, index and current branch are never touched. A
// patch is made with a temporary object store beside the repository's, so
// nothing at all is written into it. Noise stays out: git's own reading of
// the branch's .gitignore files (as the caller, in that private folder,
// never in the branch's repository) for a whole export; branches/noise.ts's
// for one since a version.
//
// Since a version (--since): only the paths the branch changed since that
// version of its workspace (the diff of the version's files and the branch's
// now, branches/diff.ts, noise left out) are taken, each as the branch has
// it now (or its deletion), onto the origin commit's tree; the commit's
// parent is still the origin commit.
import { lstat, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ExecTarget } from '../exec/exec-service.js';
import { asCaller, callerHome, type Caller } from '../host/as-caller.js';
import { run, type RunOptions } from '../host/run.js';
import type { ExportResult, ProjectOrigin } from '../protocol/entities.js';
import type { Maker } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import type { FileCopy } from './file-copy.js';
import { diffTrees } from '../branches/diff.js';
import { Noise } from '../branches/noise.js';
import type { VersionService } from '../branches/versions.js';
import type { Registry, WorkspaceRecord } from '../registry/registry.js';
import type { BranchStorage } from '../workspaces/branch-storage.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';

export type ExportTarget = { kind: 'git'; repo: string; branch: string; force?: boolean } | { kind: 'patch'; file: string };

/** What an export is asked for (branch.export's params, but its branch). */
export interface ExportParams {
  to: ExportTarget;
  message?: string;
  /** A version of the branch's workspace: only what changed since it. */
  since?: string;
}

/** What an export makes its commit of: the branch's files now, onto its project's origin. */
interface Source {
  target: ExecTarget;
  branch: WorkspaceRecord;
  origin: ProjectOrigin | null;
}

/** What becomes of the commit: a branch or a patch file, or (a request's preview) only its patch. */
type Destination = ExportTarget | { kind: 'preview'; repo: string; branch: string };

/** How much of an export's patch a request's preview carries. */
export const PREVIEW_PATCH_BYTES = 1024 * 1024;

export interface ExportDeps {
  files: FileCopy;
  registry: Registry;
  storage: BranchStorage;
  versions: VersionService;
  workspaces: WorkspaceService;
  runtime: BranchRuntime;
}

export class Exporter {
  constructor(private readonly d: ExportDeps) {}

  /** Exports the live branch `ref`, written as `caller`, under its read turn (no rollback changes it meanwhile). */
  async export(ref: string, params: ExportParams, caller: Caller): Promise<ExportResult> {
    return this.fromBranch(ref, async (source) => (await this.make(source, params, caller)).result);
  }

  /**
   * An agent's export, for a person to look at first: the commit it would
   * make, as a patch (at most PREVIEW_PATCH_BYTES; `cut` then), made as the
   * owner of the repository, in a scratch object store: nothing is written
   * into the repository.
   */
  async preview(ref: string, params: { repo: string; branch: string; message?: string; since?: string }): Promise<{ patch: string; cut: boolean }> {
    const owner = await ownRepository(params.repo, null);
    return this.fromBranch(ref, async (source) => {
      const made = await this.make(source, { ...params, to: { kind: 'preview', repo: params.repo, branch: params.branch } }, { uid: owner }, true);
      return { patch: made.patch.slice(0, PREVIEW_PATCH_BYTES), cut: made.patch.length > PREVIEW_PATCH_BYTES };
    });
  }

  /**
   * An agent's export a person approved: written as that person, into a
   * repository that must be theirs (its folder, .git folder and .git/config
   * owned by them): a repository an agent made could run commands as whoever
   * runs git in it.
   */
  async exportApproved(ref: string, params: { repo: string; branch: string; message?: string; since?: string }, person: Caller): Promise<ExportResult> {
    await ownRepository(params.repo, person.uid);
    const to = { kind: 'git', repo: params.repo, branch: params.branch } as const;
    return this.fromBranch(ref, async (source) => (await this.make(source, { ...params, to }, person, true)).result);
  }

  private async fromBranch<T>(ref: string, use: (source: Source) => Promise<T>): Promise<T> {
    const { id } = await this.d.workspaces.live(ref);
    return this.d.workspaces.lock.read(id, () => {
      const ws = this.d.workspaces.running(id);
      return use({ target: this.d.runtime.execTarget(ws), branch: ws, origin: this.d.registry.project(ws.treeId) });
    });
  }

  private async make(
    { target, branch, origin }: Source,
    req: Omit<ExportParams, 'to'> & { to: Destination },
    caller: Caller,
    ownersOnly = false,
  ): Promise<{ result: ExportResult; patch: string }> {
    if (!origin) throw new GroveError('E_PRECONDITION', `'${branch.name}' has no project to export: its workspace was made without --project`);
    if (!origin.commit)
      throw new GroveError(
        'E_PRECONDITION',
        `the project of '${branch.name}' (${origin.hostPath}) was not a git repository's top when it was copied: there is no commit to build on`,
      );
    const git = await Git.as(caller, req.to.kind === 'patch' ? origin.hostPath : req.to.repo, ownersOnly);
    await git.requireCommit(origin.commit);
    if (req.to.kind !== 'patch') await git.requireNewBranch(req.to.branch, req.to.kind === 'git' && (req.to.force ?? false));
    const since = req.since === undefined ? null : await this.changedSince(branch, req.since, origin.path);
    if (since?.paths.length === 0)
      throw new GroveError('E_PRECONDITION', `'${branch.name}' changed nothing in its project since version ${since.version}: nothing to export`);
    const scratch = (await run(...(await asCaller(caller, ['mktemp', '-d', path.join(os.tmpdir(), 'grove-export-XXXXXX')])))).stdout.trim();
    try {
      const tree = path.join(scratch, 'tree');
      await this.d.files.copyOut(target, { branch: branch.name, from: origin.path, to: tree }, caller);
      // A patch's objects go to the scratch store; the repository only lends its own (alternates).
      const objects: Record<string, string> = {};
      if (req.to.kind !== 'git') {
        await run(...(await asCaller(caller, ['mkdir', '--', path.join(scratch, 'objects')])));
        Object.assign(objects, { GIT_OBJECT_DIRECTORY: path.join(scratch, 'objects'), GIT_ALTERNATE_OBJECT_DIRECTORIES: await git.objectsDir() });
      }
      const env = { ...objects, GIT_INDEX_FILE: path.join(scratch, 'index'), GIT_DIR: await git.gitDir(), GIT_WORK_TREE: tree };
      await git.run(['read-tree', origin.commit], env);
      // update-index takes each path as named, whatever the .gitignore files say: noise.ts has had its say.
      if (since) await git.run(['update-index', '--add', '--remove', '-z', '--stdin'], env, false, tree, since.paths.map((p) => `${p}\0`).join(''));
      else await git.run(['add', '--all', '--', '.'], env, false, tree);
      const treeId = (await git.run(['write-tree'], env)).trim();
      if (treeId === (await git.run(['rev-parse', `${origin.commit}^{tree}`], env)).trim()) {
        const when = since ? `version ${since.version}, as against ${origin.commit.slice(0, 12)}` : origin.commit.slice(0, 12);
        throw new GroveError('E_PRECONDITION', `'${branch.name}' changed nothing in its project since ${when}: nothing to export`);
      }
      const commit = (
        await git.run(['commit-tree', treeId, '-p', origin.commit, '-m', req.message ?? defaultMessage(branch)], {
          ...env,
          ...(await git.identities(branch.madeBy)),
        })
      ).trim();
      const files = (await git.run(['diff-tree', '--no-commit-id', '--name-only', '-r', commit], env)).split('\n').filter(Boolean).length;
      if (req.to.kind === 'git') {
        await git.run(['update-ref', '-m', `grove export of '${branch.name}'`, `refs/heads/${req.to.branch}`, commit]);
        return { result: { commit, parent: origin.commit, files, branch: req.to.branch, patch: null }, patch: '' };
      }
      const patch = await git.run(['format-patch', '-1', '--stdout', '--binary', commit], env);
      if (req.to.kind === 'preview') return { result: { commit, parent: origin.commit, files, branch: null, patch: null }, patch };
      await run(...(await asCaller(caller, ['sh', '-c', 'cat > "$1"', 'sh', req.to.file])), { input: patch });
      return { result: { commit, parent: origin.commit, files, branch: null, patch: req.to.file }, patch };
    } finally {
      await run(...(await asCaller(caller, ['rm', '-rf', '--', scratch])), { allowFailure: true });
    }
  }

  /** The project's paths (relative to its folder) the branch changed since the version, noise left out. */
  private async changedSince(ws: WorkspaceRecord, versionId: string, project: string): Promise<{ version: string; paths: string[] }> {
    const version = this.d.registry.findVersion(versionId);
    if (!version || version.treeId !== ws.treeId)
      throw new GroveError('E_NOT_FOUND', `no version '${versionId}' of the workspace of '${ws.name}' to export since`);
    const folder = path.posix.normalize(project).replace(/\/+$/, '');
    const now = await this.d.storage.ensureMounted(ws);
    const diff = await this.d.versions.readFiles(version.id, `export-${this.d.registry.freshId()}`, (then) =>
      diffTrees(then, now, { maxFiles: 0, under: folder, noise: new Noise(now, folder) }),
    );
    const paths = [...diff.added, ...diff.changed, ...diff.removed]
      // A removed folder's files are listed too; a name that is not valid UTF-8 cannot be named again.
      .filter((p) => p.startsWith(`${folder}/`) && !p.endsWith('/') && !p.includes('\uFFFD'))
      .map((p) => p.slice(folder.length + 1));
    return { version: version.id, paths };
  }
}

/**
 * The uid that owns the repository at `repo` (its folder, its .git folder
 * and its .git/config, if any, all that one uid's), which must be `uid` when
 * given. Checked as the helper, without following a link at .git or its
 * config; a repository whose .git is a file (a worktree's) is refused.
 */
async function ownRepository(repo: string, uid: number | null): Promise<number> {
  const folder = await stat(repo).catch(() => null);
  if (!folder?.isDirectory()) throw new GroveError('E_INVALID_PARAMS', `${repo} is not a folder on this machine`);
  const gitDir = await lstat(path.join(repo, '.git')).catch(() => null);
  if (!gitDir?.isDirectory()) throw new GroveError('E_INVALID_PARAMS', `${repo} is not a git repository's top (its .git must be a folder)`);
  const config = await lstat(path.join(repo, '.git', 'config')).catch(() => null);
  const owners = new Set([folder.uid, gitDir.uid, ...(config ? [config.uid] : [])]);
  const owner = folder.uid;
  if (owners.size > 1 || (config && !config.isFile()))
    throw new GroveError('E_FORBIDDEN', `${repo}, its .git folder and .git/config are not all one user's: an export goes only into a person's own repository`);
  if (uid !== null && owner !== uid)
    throw new GroveError('E_FORBIDDEN', `${repo} belongs to uid ${owner}, not to the person approving (uid ${uid}): its owner approves an export into it`);
  return owner;
}

/** Git, run as the caller in their repository, with their home (their git identity and settings). */
class Git {
  private constructor(
    private readonly caller: Caller,
    private readonly repo: string,
    private readonly home: string,
    /**
     * Git's own check that the repository is the caller's (it will not read
     * another's config) is kept: for an agent's request, whose repository a
     * link could swap after the helper's check. A person's own export may
     * name any repository they can write to.
     */
    private readonly ownersOnly: boolean,
  ) {}

  static async as(caller: Caller, repo: string, ownersOnly: boolean): Promise<Git> {
    const git = new Git(caller, repo, await callerHome(caller), ownersOnly);
    const inside = await git.run(['rev-parse', '--is-inside-work-tree'], {}, true);
    if (inside?.trim() !== 'true') throw new GroveError('E_INVALID_PARAMS', `${repo} is not a git repository with a work tree`);
    return git;
  }

  async requireCommit(commit: string): Promise<void> {
    if ((await this.run(['cat-file', '-e', `${commit}^{commit}`], {}, true)) === null) {
      throw new GroveError(
        'E_PRECONDITION',
        `${this.repo} has no commit ${commit.slice(0, 12)}, which the project was copied at: export into a clone that has it`,
      );
    }
  }

  async requireNewBranch(branch: string, force: boolean): Promise<void> {
    if ((await this.run(['check-ref-format', '--branch', branch], {}, true)) === null)
      throw new GroveError('E_INVALID_PARAMS', `'${branch}' is not a branch name git takes`);
    const exists = (await this.run(['show-ref', '--verify', '--quiet', `refs/heads/${branch}`], {}, true)) !== null;
    if (exists && !force) throw new GroveError('E_CONFLICT', `${this.repo} has a branch '${branch}' already: choose another name, or --force to replace it`);
    const current = (await this.run(['symbolic-ref', '--quiet', '--short', 'HEAD'], {}, true))?.trim();
    if (exists && current === branch)
      throw new GroveError('E_CONFLICT', `'${branch}' is the branch checked out in ${this.repo}: export to another (its checkout is never touched)`);
  }

  async objectsDir(): Promise<string> {
    return path.resolve(this.repo, (await this.run(['rev-parse', '--git-path', 'objects'])).trim());
  }

  async gitDir(): Promise<string> {
    return (await this.run(['rev-parse', '--absolute-git-dir'])).trim();
  }

  /** The author is who made the branch (an agent's user, or the person); the committer is the caller, as their git config says, or by name. */
  async identities(maker: Maker | null): Promise<Record<string, string>> {
    const host = os.hostname();
    const env: Record<string, string> = {};
    if (maker) {
      env.GIT_AUTHOR_NAME = maker.role === 'agent' ? `${maker.user} (agent)` : maker.user;
      env.GIT_AUTHOR_EMAIL = `${maker.user}@${host}`;
    }
    const user = path.basename(this.home) || `uid${this.caller.uid}`;
    if (!(await this.run(['config', 'user.name'], {}, true))?.trim()) env.GIT_COMMITTER_NAME = user;
    if (!(await this.run(['config', 'user.email'], {}, true))?.trim()) env.GIT_COMMITTER_EMAIL = `${user}@${host}`;
    return env;
  }

  /** Git's output, run in the repository (or `cwd`); with `mayFail`, null when it exits non-zero instead of an error. */
  run(args: string[], env?: Record<string, string>, mayFail?: false, cwd?: string, input?: string): Promise<string>;
  run(args: string[], env: Record<string, string>, mayFail: true): Promise<string | null>;
  async run(args: string[], env: Record<string, string> = {}, mayFail = false, cwd = this.repo, input?: string): Promise<string | null> {
    // The repository and the export's own work tree are the only ones git is told to trust (git's check of who owns them).
    const trusted = [...(this.ownersOnly ? [] : [this.repo]), ...(cwd === this.repo ? [] : [cwd])].flatMap((dir) => ['-c', `safe.directory=${dir}`]);
    const [file, argv] = await asCaller(this.caller, ['git', ...trusted, '-C', cwd, ...args]);
    const opts: RunOptions = { env: { HOME: this.home, GIT_TERMINAL_PROMPT: '0', ...env }, allowFailure: mayFail, input };
    const res = await run(file, argv, opts);
    return mayFail && res.exitCode !== 0 ? null : res.stdout;
  }
}

function defaultMessage(branch: WorkspaceRecord): string {
  const who = branch.madeBy ? `${branch.madeBy.role} ${branch.madeBy.user}` : 'someone';
  return `Work of Grove branch ${branch.name}\n\nExported from branch ${branch.name} (${branch.id}), made by ${who}.\n`;
}
