// A project: a host folder (often a git repository) copied into a workspace
// when it is made, so an agent works on the person's own code. The person's
// folder is copied, never bound: branches must not share files, and nothing a
// branch does reaches the original. Where it came from is kept with the
// workspace (the repository's HEAD commit and branch then), for taking the
// result home later.
import type { Caller } from '../host/as-caller.js';
import { asCaller } from '../host/as-caller.js';
import { callerBytes, callerPath } from '../host/caller-files.js';
import { BRANCH_HEADROOM_BYTES, mib, requireSpace } from '../host/space.js';
import { run } from '../host/run.js';
import type { ProjectOrigin } from '../protocol/entities.js';
import { GroveError } from '../protocol/wire.js';

/** Where a project goes in the workspace unless the person says otherwise. */
export const DEFAULT_PROJECT_PATH = '/root/work';

/**
 * The folder the caller named, resolved as they see it, and its git origin if
 * it is a repository's top; refused (E_NO_SPACE) if it would not fit in the
 * pool at `poolDir`.
 */
export async function projectOrigin(caller: Caller, hostPath: string, path: string, poolDir: string): Promise<ProjectOrigin> {
  const found = await callerPath(caller, hostPath);
  if (found.kind !== 'directory') throw new GroveError('E_INVALID_PARAMS', `${hostPath} is a file: a project is a folder (copy a file in with grove cp)`);
  const bytes = await callerBytes(caller, found);
  await requireSpace(`copying the project ${found.real}`, [
    { where: 'the pool', dir: poolDir, bytes: bytes + BRANCH_HEADROOM_BYTES, why: `the project (${mib(bytes)} MiB) and the workspace's first writes` },
  ]);
  const git = async (...args: string[]) => {
    const [file, argv] = await asCaller(caller, ['git', '-c', `safe.directory=${found.real}`, '-C', found.real, ...args]);
    const res = await run(file, argv, { allowFailure: true });
    return res.exitCode === 0 ? res.stdout.trim() : null;
  };
  const top = await git('rev-parse', '--show-toplevel');
  const repository = top === found.real;
  return {
    hostPath: found.real,
    path,
    commit: repository ? await git('rev-parse', '--verify', 'HEAD') : null,
    gitBranch: repository ? await git('symbolic-ref', '--short', '--quiet', 'HEAD') : null,
    copiedAt: new Date().toISOString(),
  };
}
