// A merge and an export (issue 44), against git on the same changes:
//   merge   two branches forked from a live desktop whose project is a
//           20,000-file git repository each change 200 files (different
//           ones); a dry run, then the merge of both into a third branch of
//           the same fork, the live target. Against `git merge --no-ff` of
//           two branches with the same changes into their trunk, in a plain
//           clone on the same disk.
//   export  the merged target's changes (both sources') as one commit on a
//           new branch of the project's repository.
// Each round forks afresh, so every merge starts from the same state.
import { mkdtemp, mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import type { HelperClient } from '../../main/src/helper-client/client.js';
import type { Workspace } from '../src/protocol/entities.js';
import type { MergeBench } from './result-schema.js';
import { round, summarize } from './stats.js';

const PROJECT_FILES = 20_000;
const FOLDERS = 100;
const LINES_PER_FILE = 40;
/** Files each source changes: every CHANGE_STRIDE-th file, the second source's starting half-way through the project. */
const CHANGED_PER_SOURCE = 200;
const CHANGE_STRIDE = 50;
const PROJECT_PATH = '/root/work';

export interface MergeSetting {
  client: HelperClient;
  /** Scratch room on the host for the project and the plain repository (the pool's disk). */
  workDir: string;
  rounds: number;
  proceed: () => void;
  log: (msg: string) => void;
  /** Waits until a new branch's desktop is up. */
  desktopUp: (ws: Workspace) => Promise<void>;
}

export async function measureMerge(s: MergeSetting): Promise<MergeBench> {
  const work = await mkdtemp(path.join(s.workDir, 'grove-bench-merge-'));
  const errors: string[] = [];
  const samples = { dryRunMs: [] as number[], mergeMs: [] as number[], totalMs: [] as number[], checkpointMs: [] as number[], exportMs: [] as number[] };
  const gitMergeMs: number[] = [];
  let main: Workspace | null = null;
  try {
    const project = path.join(work, 'project');
    s.log(`merge: a git repository of ${PROJECT_FILES} files`);
    await makeRepository(project);
    const plain = path.join(work, 'plain');
    await git(work, 'clone', '--quiet', '--no-hardlinks', project, plain);
    await commitSourcesIn(plain);
    main = await s.client.request('workspace.create', { name: 'bench-merge', project: { hostPath: project, path: PROJECT_PATH } });
    await s.desktopUp(main);
    for (let i = 0; i < s.rounds; i++) {
      s.proceed();
      await grovesRound(s, main, project, i, samples).catch((err: unknown) => errors.push(`round ${i + 1}: ${(err as Error).message}`));
      s.proceed();
      gitMergeMs.push(await gitMerge(plain));
      s.log(
        `merge ${i + 1}/${s.rounds}: dry run ${ms(samples.dryRunMs.at(-1))} + merge ${ms(samples.mergeMs.at(-1))} (a checkpoint alone ${ms(samples.checkpointMs.at(-1))}), git merge ${ms(gitMergeMs.at(-1))}; export ${ms(samples.exportMs.at(-1))}`,
      );
    }
  } finally {
    if (main) await s.client.request('workspace.delete', { workspace: main.id }).catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
  const p50 = (xs: number[]) => (xs.length > 0 ? summarize(xs).p50 : null);
  const total = p50(samples.totalMs);
  const gitP50 = p50(gitMergeMs);
  return {
    files: PROJECT_FILES,
    changedPerSource: CHANGED_PER_SOURCE,
    ...samples,
    gitMergeMs,
    totalP50: total,
    gitMergeP50: gitP50,
    ratio: total !== null && gitP50 !== null && gitP50 > 0 ? round(total / gitP50, 3) : null,
    exportP50: p50(samples.exportMs),
    errors,
  };
}

/** Forks the main line into a target and two sources, has each source change its files, then dry-runs, merges and exports. */
async function grovesRound(s: MergeSetting, main: Workspace, repo: string, i: number, into: Record<string, number[]>): Promise<void> {
  const c = s.client;
  const names = [`bench-mt-${i}`, `bench-ms1-${i}`, `bench-ms2-${i}`];
  const report = await c.request('branch.fork', { workspace: main.id, copies: 3, names });
  const [target, ...sources] = report.children as [Workspace, Workspace, Workspace];
  try {
    for (const [n, source] of sources.entries()) {
      const res = await c.request('exec.run', {
        workspace: source.id,
        argv: ['sed', '-i', `s/^line 7$/line 7, changed by source ${n + 1}/`, ...changedFiles(n, PROJECT_PATH)],
      });
      if (res.exitCode !== 0) throw new Error(`changing the files in ${source.name} exited ${res.exitCode}`);
    }
    // A checkpoint alone, as the merge takes one of the target first: what of the merge is not the merge's own work.
    const t0 = performance.now();
    const version = await c.request('branch.checkpoint', { workspace: target.id, label: 'bench: a checkpoint alone' });
    await savedVersion(c, version.id);
    const checkpoint = performance.now() - t0;
    await c.request('version.delete', { version: version.id });
    const merge = { workspace: target.id, sources: sources.map((x) => x.id) };
    const t1 = performance.now();
    const dry = await c.request('branch.merge', { ...merge, dryRun: true });
    const t2 = performance.now();
    const done = await c.request('branch.merge', merge);
    const t3 = performance.now();
    const expected = 2 * CHANGED_PER_SOURCE;
    if (dry.changes.length !== expected || dry.conflicts.length > 0 || !done.merged || done.changes.length !== expected) {
      throw new Error(
        `the merge planned ${dry.changes.length} changes and ${dry.conflicts.length} conflicts, wrote ${done.merged ? done.changes.length : 0}, not ${expected}`,
      );
    }
    const t4 = performance.now();
    const exported = await c.request('branch.export', { workspace: target.id, to: { kind: 'git', repo, branch: `bench-export-${i}` } });
    const t5 = performance.now();
    if (exported.files !== expected) throw new Error(`the export's commit changes ${exported.files} files, not ${expected}`);
    for (const [key, took] of [
      ['dryRunMs', t2 - t1],
      ['mergeMs', t3 - t2],
      ['totalMs', t3 - t1],
      ['checkpointMs', checkpoint],
      ['exportMs', t5 - t4],
    ] as const)
      into[key]!.push(round(took, 1));
  } finally {
    for (const ws of report.children) await c.request('workspace.delete', { workspace: ws.id, versions: 'delete' }).catch(() => undefined);
    await git(repo, 'branch', '-D', '--quiet', `bench-export-${i}`).catch(() => undefined);
  }
}

/** Resolves once the version's memory and files are saved in the pool, as a merge's checkpoint waits for. */
async function savedVersion(c: HelperClient, id: string): Promise<void> {
  for (;;) {
    const v = (await c.request('version.list', {})).find((x) => x.id === id);
    if (!v) throw new Error(`version ${id} could not be saved`);
    if (v.saved) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** The same changes as two branches of the plain clone, each one commit. */
async function commitSourcesIn(plain: string): Promise<void> {
  for (const n of [0, 1]) {
    await git(plain, 'checkout', '--quiet', '-b', `source-${n + 1}`, 'trunk');
    await execa('sed', ['-i', `s/^line 7$/line 7, changed by source ${n + 1}/`, ...changedFiles(n, plain)]);
    await git(plain, 'commit', '--quiet', '-am', `source ${n + 1}`);
  }
  await git(plain, 'checkout', '--quiet', 'trunk');
}

/** `git merge --no-ff` of both sources into the trunk (one octopus merge, as Grove merges both in one call), then the trunk back as it was, untimed. */
async function gitMerge(plain: string): Promise<number> {
  const t0 = performance.now();
  await git(plain, 'merge', '--quiet', '--no-ff', '--no-edit', 'source-1', 'source-2');
  const took = performance.now() - t0;
  await git(plain, 'reset', '--quiet', '--hard', 'HEAD~1');
  return round(took, 1);
}

/** The files source n changes, under `root`. */
function changedFiles(n: number, root: string): string[] {
  const first = n * (PROJECT_FILES / 2);
  return Array.from({ length: CHANGED_PER_SOURCE }, (_, k) => path.join(root, fileName(first + k * CHANGE_STRIDE)));
}

function fileName(i: number): string {
  return path.join(`pkg${String(i % FOLDERS).padStart(2, '0')}`, `f${String(i).padStart(5, '0')}.txt`);
}

/** PROJECT_FILES text files of LINES_PER_FILE lines in FOLDERS folders, one commit on the branch trunk, packed. */
async function makeRepository(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  const script = `
import os, sys
root, files, folders, lines = sys.argv[1], *map(int, sys.argv[2:])
body = ''.join(f'line {n}\\n' for n in range(lines))
for i in range(files):
    d = os.path.join(root, f'pkg{i % folders:02d}')
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f'f{i:05d}.txt'), 'w') as f:
        f.write(f'file {i}\\n' + body)
`;
  await execa('python3', ['-c', script, dir, String(PROJECT_FILES), String(FOLDERS), String(LINES_PER_FILE)]);
  await git(dir, 'init', '--quiet', '--initial-branch', 'trunk');
  await git(dir, 'add', '-A');
  await git(dir, 'commit', '--quiet', '-m', 'the project');
  // Packed, as a repository that has lived is: the clone and the export then read a pack, not 20,000 loose objects.
  await git(dir, 'repack', '-a', '-d', '--quiet');
}

/** Git without its automatic gc, which would pack the repository in the background while a round is timed (or cloned). */
async function git(cwd: string, ...args: string[]): Promise<void> {
  await execa('git', ['-c', 'user.name=Grove bench', '-c', 'user.email=bench@grove.invalid', '-c', 'gc.auto=0', ...args], { cwd });
}

function ms(x: number | undefined): string {
  return x === undefined ? 'failed' : `${Math.round(x)} ms`;
}
