// A branch's work taken home: what it changed in its project, since the
// workspace was made, as one git commit whose parent is the commit the
// project was copied at, on a new branch of the person's repository, or as a
// patch `git am` takes. Git itself writes it, run as the caller: the files
// come out of the branch into a private folder of theirs (file-copy.ts), and
// a temporary index and that folder as the work tree make the tree; the
// repository's own checkout, index and current branch are never touched. A
// patch is made with a temporary object store beside the repository's, so
// nothing at all is written into it.
import os from 'node:os';
import path from 'node:path';
import type { ExecTarget } from '../exec/exec-service.js';
import { asCaller, callerHome, type Caller } from '../host/as-caller.js';
import { run, type RunOptions } from '../host/run.js';
import type { ExportResult, ProjectOrigin } from '../protocol/entities.js';
import type { Maker } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import type { FileCopy } from './file-copy.js';

export type ExportTarget = { kind: 'git'; repo: string; branch: string; force?: boolean } | { kind: 'patch'; file: string };

export interface ExportRequest {
  branch: { name: string; id: string; madeBy: Maker | null };
  origin: ProjectOrigin | null;
  to: ExportTarget;
  message?: string;
}

export class Exporter {
  constructor(private readonly files: FileCopy) {}

  async export(target: ExecTarget, req: ExportRequest, caller: Caller): Promise<ExportResult> {
    const origin = req.origin;
    if (!origin) throw new GroveError('E_PRECONDITION', `'${req.branch.name}' has no project to export: its workspace was made without --project`);
    if (!origin.commit)
      throw new GroveError(
        'E_PRECONDITION',
        `the project of '${req.branch.name}' (${origin.hostPath}) was not a git repository's top when it was copied: there is no commit to build on`,
      );
    const git = await Git.as(caller, req.to.kind === 'git' ? req.to.repo : origin.hostPath);
    await git.requireCommit(origin.commit);
    if (req.to.kind === 'git') await git.requireNewBranch(req.to.branch, req.to.force ?? false);
    const scratch = (await run(...(await asCaller(caller, ['mktemp', '-d', path.join(os.tmpdir(), 'grove-export-XXXXXX')])))).stdout.trim();
    try {
      const tree = path.join(scratch, 'tree');
      await this.files.copyOut(target, { branch: req.branch.name, from: origin.path, to: tree }, caller);
      // A patch's objects go to the scratch store; the repository only lends its own (alternates).
      const objects: Record<string, string> = {};
      if (req.to.kind === 'patch') {
        await run(...(await asCaller(caller, ['mkdir', '--', path.join(scratch, 'objects')])));
        Object.assign(objects, { GIT_OBJECT_DIRECTORY: path.join(scratch, 'objects'), GIT_ALTERNATE_OBJECT_DIRECTORIES: await git.objectsDir() });
      }
      const env = { ...objects, GIT_INDEX_FILE: path.join(scratch, 'index'), GIT_DIR: await git.gitDir(), GIT_WORK_TREE: tree };
      await git.run(['read-tree', origin.commit], env);
      await git.run(['add', '--all', '--', '.'], env, false, tree);
      const treeId = (await git.run(['write-tree'], env)).trim();
      if (treeId === (await git.run(['rev-parse', `${origin.commit}^{tree}`], env)).trim()) {
        throw new GroveError('E_PRECONDITION', `'${req.branch.name}' changed nothing in its project since ${origin.commit.slice(0, 12)}: nothing to export`);
      }
      const commit = (
        await git.run(['commit-tree', treeId, '-p', origin.commit, '-m', req.message ?? defaultMessage(req)], {
          ...env,
          ...(await git.identities(req.branch.madeBy)),
        })
      ).trim();
      const files = (await git.run(['diff-tree', '--no-commit-id', '--name-only', '-r', commit], env)).split('\n').filter(Boolean).length;
      if (req.to.kind === 'git') {
        await git.run(['update-ref', '-m', `grove export of '${req.branch.name}'`, `refs/heads/${req.to.branch}`, commit]);
        return { commit, parent: origin.commit, files, branch: req.to.branch, patch: null };
      }
      const patch = await git.run(['format-patch', '-1', '--stdout', '--binary', commit], env);
      await run(...(await asCaller(caller, ['sh', '-c', 'cat > "$1"', 'sh', req.to.file])), { input: patch });
      return { commit, parent: origin.commit, files, branch: null, patch: req.to.file };
    } finally {
      await run(...(await asCaller(caller, ['rm', '-rf', '--', scratch])), { allowFailure: true });
    }
  }
}

/** Git, run as the caller in their repository, with their home (their git identity and settings). */
class Git {
  private constructor(
    private readonly caller: Caller,
    private readonly repo: string,
    private readonly home: string,
  ) {}

  static async as(caller: Caller, repo: string): Promise<Git> {
    const git = new Git(caller, repo, await callerHome(caller));
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
  run(args: string[], env?: Record<string, string>, mayFail?: false, cwd?: string): Promise<string>;
  run(args: string[], env: Record<string, string>, mayFail: true): Promise<string | null>;
  async run(args: string[], env: Record<string, string> = {}, mayFail = false, cwd = this.repo): Promise<string | null> {
    // The repository and the export's own work tree are the only ones git is told to trust (git's check of who owns them).
    const [file, argv] = await asCaller(this.caller, ['git', '-c', `safe.directory=${this.repo}`, '-c', `safe.directory=${cwd}`, '-C', cwd, ...args]);
    const opts: RunOptions = { env: { HOME: this.home, GIT_TERMINAL_PROMPT: '0', ...env }, allowFailure: mayFail };
    const res = await run(file, argv, opts);
    return mayFail && res.exitCode !== 0 ? null : res.stdout;
  }
}

function defaultMessage(req: ExportRequest): string {
  const who = req.branch.madeBy ? `${req.branch.madeBy.role} ${req.branch.madeBy.user}` : 'someone';
  return `Work of Grove branch ${req.branch.name}\n\nExported from branch ${req.branch.name} (${req.branch.id}), made by ${who}.\n`;
}
