// Versions on the command line: list them (a workspace's, or all with the
// orphans a deleted workspace left), remove them, wait for a checkpoint to be
// saved, and — when a person deletes a workspace's last branch on a terminal —
// ask what becomes of them.
import { createInterface } from 'node:readline/promises';
import type { Command } from 'commander';
import { GroveError, type HelperClient } from '../helper-client/client.js';
import type { Version, Workspace } from '../../../privileged-helper/src/protocol/entities.js';
import type { VersionsFate } from '../../../privileged-helper/src/protocol/methods.js';
import { isAgent } from './approval-commands.js';
import { output, withClient } from './context.js';

export interface VersionsChoice {
  keepVersions?: boolean;
  deleteVersions?: boolean;
}

/** The options of a command that deletes a branch: what becomes of its workspace's versions if it is the last. */
export function withVersionsChoice(cmd: Command): Command {
  return cmd
    .option('--keep-versions', "if it is its workspace's last branch, keep the workspace's versions (as orphans: grove versions)")
    .option('--delete-versions', "if it is its workspace's last branch, delete the workspace's versions too (the default; persons only)");
}

/**
 * What the caller chose for the versions: a flag, else on a terminal the
 * person's answer when the branch is its workspace's last and it has versions,
 * else nothing (the helper's default: a person's deletion deletes them, an agent's keeps them).
 */
export async function chooseVersionsFate(c: HelperClient, ref: string, opts: VersionsChoice): Promise<VersionsFate | undefined> {
  if (opts.keepVersions && opts.deleteVersions) throw new GroveError('E_INVALID_PARAMS', 'give --keep-versions or --delete-versions, not both');
  if (opts.deleteVersions && isAgent(c)) throw new GroveError('E_FORBIDDEN', "only a person may delete versions: an agent's deletions keep them");
  if (opts.keepVersions) return 'keep';
  if (opts.deleteVersions) return 'delete';
  if (isAgent(c) || !process.stdin.isTTY || !process.stderr.isTTY) return undefined;
  const ws = await c.request('workspace.get', { workspace: ref });
  const branches = await c.request('workspace.list', {});
  if (branches.some((b) => b.tree === ws.tree && b.id !== ws.id)) return undefined; // its versions stay with the workspace
  const versions = await c.request('version.list', { workspace: ws.id });
  if (versions.length === 0) return undefined;
  const question = `'${ws.name}' is the last branch of its workspace, which has ${versions.length} version(s): ${versions.map((v) => v.id).join(', ')}.\nDelete them too? [y/N] (no: keep them as orphans) `;
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    return /^y(es)?$/i.test((await rl.question(question)).trim()) ? 'delete' : 'keep';
  } finally {
    rl.close();
  }
}

/** 'deleted ID', and what became of its workspace's versions if it was the last branch. */
/**
 * Listens for versions being saved or dropped, from before a checkpoint is
 * asked for (so no event is missed); the function returned resolves with the
 * version once it is saved, and rejects if it could not be.
 */
export async function watchVersions(c: HelperClient): Promise<(id: string) => Promise<Version>> {
  type Outcome = Version | { removed: string };
  const settled = new Map<string, Outcome>();
  const waiting = new Map<string, (v: Outcome) => void>();
  const settle = (id: string, outcome: Outcome) => {
    settled.set(id, outcome);
    waiting.get(id)?.(outcome);
  };
  c.on('version.changed', (e) => e.version.saved && settle(e.version.id, e.version));
  c.on('version.removed', (e) => settle(e.id, { removed: e.reason ?? `version ${e.id} was removed` }));
  await c.subscribe(['version.changed', 'version.removed']);
  return async (id) => {
    const outcome = settled.get(id) ?? (await new Promise<Outcome>((resolve) => waiting.set(id, resolve)));
    if ('removed' in outcome) throw new GroveError('E_HOST', `${outcome.removed}; it is gone`);
    return outcome;
  };
}

export function describeDeletion(verb: string, res: { deleted: string; versions?: { deleted: string[]; kept: string[] } }): string {
  const v = res.versions;
  if (!v) return `${verb} ${res.deleted}`;
  if (v.deleted.length > 0) return `${verb} ${res.deleted} and its workspace's versions ${v.deleted.join(', ')}`;
  return `${verb} ${res.deleted}; its workspace's versions ${v.kept.join(', ')} are kept as orphans (grove versions; grove versions rm VERSION…)`;
}

export function registerVersionCommands(program: Command): void {
  const versions = program
    .command('versions')
    .argument('[workspace]', "only this workspace's versions (a deleted one's orphans by its former name)")
    .description('versions (checkpoints), with their size on disk; orphans are those a deleted workspace left, named after it')
    .action((ref: string | undefined) =>
      withClient(async (c) => {
        const [list, branches] = await Promise.all([c.request('version.list', { workspace: ref, sizes: true }), c.request('workspace.list', {})]);
        output(list, () => printVersions(list, branches));
      }),
    );
  versions
    .command('rm')
    .argument('<version...>', 'the versions to remove (see grove versions)')
    .description('(persons) remove versions: their CRIU images and files go for good')
    .action((ids: string[]) =>
      withClient(async (c) => {
        const wanted = [...new Set(ids)];
        const known = new Set((await c.request('version.list', {})).map((v) => v.id));
        const unknown = wanted.filter((id) => !known.has(id));
        // Refused before any is removed, so a typo never leaves half the list done.
        if (unknown.length > 0) throw new GroveError('E_NOT_FOUND', `no version ${unknown.map((id) => `'${id}'`).join(', ')}: nothing was removed`);
        for (const id of wanted) await c.request('version.delete', { version: id });
        output({ deleted: wanted }, () => console.log(`deleted ${wanted.join(', ')}`));
      }),
    );
  versions
    .command('name')
    .argument('<version>', 'the version to name (see grove versions)')
    .argument('<label>', "its name ('' takes it away)")
    .description('(persons) name a version, or rename it')
    .action((id: string, label: string) =>
      withClient(async (c) => {
        const v = await c.request('version.label', { version: id, label });
        output(v, () => console.log(v.label ? `${v.id} is '${v.label}'` : `${v.id} has no name`));
      }),
    );
}

function printVersions(list: Version[], branches: Workspace[]): void {
  if (list.length === 0) {
    console.log('No versions. Record one with: grove checkpoint ID');
    return;
  }
  const nameOf = new Map(branches.map((b) => [b.id, b.name]));
  const mainOf = new Map(branches.filter((b) => b.main).map((b) => [b.tree, b.name]));
  const workspaceOf = (v: Version) => (v.orphanOf !== undefined ? `${v.orphanOf} (deleted)` : (mainOf.get(v.tree) ?? v.tree));
  const size = (v: Version) => (v.sizeBytes === undefined ? '-' : `${(v.sizeBytes / 2 ** 20).toFixed(1)} MiB`);
  console.log(['VERSION', 'WORKSPACE', 'BRANCH', 'CREATED', 'SAVED', 'SIZE', 'LABEL'].join('\t'));
  for (const v of list)
    console.log([v.id, workspaceOf(v), nameOf.get(v.branch) ?? v.branch, v.createdAt, v.saved ? 'yes' : 'saving…', size(v), v.label ?? ''].join('\t'));
}
