// Fork points and merges, for real: every fork keeps a read-only snapshot of
// its source's files (the merge base), removed with the last branch or
// version descending from it; grove merge brings what branches changed into a
// live branch, file by file, with git's three-way merge, conflicts listed
// before anything is written, and as a transaction.
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import type { MergeResult } from '../../src/protocol/merge.js';
import type { GroveError } from '../../src/protocol/wire.js';
import type { Approval } from '../../src/protocol/approvals.js';
import { agentUserNames, CALL, GROVE_CLI, runAs, testUser, withScope } from './agent-users.js';
import { REPO, startHelper } from './helper-process.js';
import { connect, createWorkspace, instance, sh, track, waitFor } from './support.js';

const GROVE = path.join(REPO, 'main/bin/grove');
const grove = (...args: string[]) => execa(GROVE, ['--socket', instance().socketPath, ...args], { reject: false, timeout: 120_000 });
const branchFiles = () => `${instance().stateDir}/pool/workspaces`;
const forkPointsOnDisk = async () => (await readdir(branchFiles())).filter((f) => f.startsWith('.fork-point-')).sort();

/** Forks `source` into `names`; the children, tracked. */
async function fork(client: HelperClient, source: Workspace, names: string[]): Promise<{ fork: string; children: Workspace[] }> {
  const report = await client.request('branch.fork', { workspace: source.id, copies: names.length, names });
  return { fork: report.fork, children: await Promise.all(report.children.map(track)) };
}

/** Deletes the other branches of `main`'s workspace, then `main`. */
async function deleteTree(client: HelperClient, main: Workspace): Promise<void> {
  for (const w of await client.request('workspace.list', {})) {
    if (w.tree === main.tree && w.id !== main.id) await client.request('workspace.delete', { workspace: w.id }).catch(() => undefined);
  }
  await client.request('workspace.delete', { workspace: main.id }).catch(() => undefined);
}

describe('fork points', () => {
  let client: HelperClient;
  let source: Workspace;

  beforeAll(async () => {
    client = await connect();
    source = await createWorkspace(client, 'fp-src');
    // Its state at the fork, and a file of 1 MiB: btrfs keeps small files inline in its metadata, which `btrfs filesystem du` does not count.
    await sh(client, source, 'echo at-the-fork > /root/state.txt; echo system > /srv/state.txt; head -c 1M /dev/urandom > /root/data.bin; sync');
  });

  afterAll(async () => {
    await deleteTree(client, source);
    client.close();
  });

  it('keeps a read-only snapshot of the source at the fork, counted by space.get, until the last branch or version of it goes', async () => {
    const before = await forkPointsOnDisk();
    const { fork: forkId, children } = await fork(client, source, ['fp-a', 'fp-b']);
    await sh(client, source, 'echo after-the-fork > /root/state.txt');
    const kept = (await forkPointsOnDisk()).filter((f) => !before.includes(f));
    expect(kept).toEqual([`.fork-point-${forkId.replace(/^fork-/, 'point-')}`]);
    const snapshot = `${branchFiles()}/${kept[0]}`;
    expect((await execa('btrfs', ['property', 'get', '-ts', snapshot, 'ro'])).stdout.trim()).toBe('ro=true');
    // The source's files as they were at the fork: its home, and its writes outside it in the upper.
    expect((await execa('cat', [`${snapshot}/home/state.txt`])).stdout).toBe('at-the-fork');
    expect((await execa('cat', [`${snapshot}/upper/srv/state.txt`])).stdout).toBe('system');

    const space = await client.request('space.get', {});
    const counted = space.forkPoints.find((f) => `.fork-point-${f.forkPoint}` === kept[0]);
    expect(counted).toMatchObject({ source: source.id });
    expect(counted!.totalBytes).toBeGreaterThan(0);

    // A version of a child descends from it: discarding both children keeps it.
    const version = await client.request('branch.checkpoint', { workspace: children[0]!.id, label: 'keeps the base' });
    for (const c of children) await client.request('workspace.delete', { workspace: c.id });
    await new Promise((r) => setTimeout(r, 1000));
    expect(await forkPointsOnDisk()).toContain(kept[0]);
    await client.request('version.delete', { version: version.id });
    await waitFor('the fork point to go', async () => !(await forkPointsOnDisk()).includes(kept[0]!), 30_000);
    expect((await client.request('space.get', {})).forkPoints.map((f) => f.forkPoint)).not.toContain(kept[0]!.replace('.fork-point-', ''));
  });

  it('a failed fork leaves no fork point behind', async () => {
    const before = await forkPointsOnDisk();
    const failure = await client.request('branch.fork', { workspace: source.id, copies: 1, faultAt: 'commit' }).then(
      () => null,
      (err: unknown) => err as GroveError,
    );
    expect(failure?.message).toContain("fault injected after stage 'commit'");
    expect(await forkPointsOnDisk()).toEqual(before);
    expect((await client.request('space.get', {})).forkPoints.filter((f) => f.source === source.id)).toEqual([]);
  });
});

/** What a call failed with. */
function failure(call: Promise<unknown>): Promise<GroveError> {
  return call.then(
    () => {
      throw new Error('expected the call to fail');
    },
    (err: unknown) => err as GroveError,
  );
}

describe('merge', () => {
  const work = '/root/work';
  const SHARED = ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight'].join('\n') + '\n';
  let client: HelperClient;
  let project: string;
  let main: Workspace;

  const cat = (ws: Workspace, file: string) => sh(client, ws, `cat ${file}`);
  const merge = (
    sources: Workspace[],
    more: { dryRun?: boolean; all?: boolean; take?: { path: string; side: string }[]; faultAt?: 'checkpoint' | 'write' } = {},
  ): Promise<MergeResult> => client.request('branch.merge', { workspace: main.id, sources: sources.map((s) => s.id), ...more });
  const versionsOfMain = async () => (await client.request('version.list', { workspace: main.id })).filter((v) => v.branch === main.id).map((v) => v.id);
  /** A process in main that keeps a value only in its memory, writing it out every 0.2 s: its pid and the value. */
  const startRemembering = async () => {
    await sh(
      client,
      main,
      `setsid sh -c 'v=$$-$(head -c 8 /dev/urandom | od -An -tx1 | tr -d " \\n"); while :; do echo "$v" > /tmp/remembered.new; mv /tmp/remembered.new /tmp/remembered; sleep 0.2; done' </dev/null >/dev/null 2>&1 &`,
    );
    await waitFor('the process to remember', async () => (await sh(client, main, 'cat /tmp/remembered 2>/dev/null || true')).trim() !== '', 10_000);
    return (await cat(main, '/tmp/remembered')).trim();
  };

  beforeAll(async () => {
    client = await connect();
    project = await mkdtemp(path.join(os.tmpdir(), 'grove-merge-project-'));
    await writeFile(path.join(project, 'a.txt'), 'a from main\n');
    await writeFile(path.join(project, 'b.txt'), 'b from main\n');
    await writeFile(path.join(project, 'shared.txt'), SHARED);
    await writeFile(path.join(project, 'gone.txt'), 'to be deleted on one side, edited on the other\n');
    await writeFile(path.join(project, 'bin.dat'), Buffer.from([0, 1, 2, 3, 0, 255]));
    main = await track(await client.request('workspace.create', { name: 'mg-main', project: { hostPath: project } }));
  });

  afterAll(async () => {
    await deleteTree(client, main);
    await rm(project, { recursive: true, force: true });
    client.close();
  });

  it('two children that edited different files: main has both edits, its processes the same pids with their memory', async () => {
    const remembered = await startRemembering();
    const {
      children: [left, right],
    } = await fork(client, main, ['mg-left', 'mg-right']);
    await sh(client, left!, `echo 'a from left' > ${work}/a.txt`);
    await sh(
      client,
      right!,
      `echo 'b from right' > ${work}/b.txt; mkdir -p ${work}/new/deep; echo 'new' > ${work}/new/deep/file.txt; printf '#!/bin/sh\\necho run\\n' > ${work}/tool.sh; chmod +x ${work}/tool.sh; ln -s a.txt ${work}/link`,
    );
    await sh(client, right!, 'echo from-right > /srv/outside.txt'); // outside the project: not merged without --all

    const dry = await merge([left!, right!], { dryRun: true });
    expect(dry).toMatchObject({ merged: false, dryRun: true, version: null, conflicts: [], scope: work });
    expect(await cat(main, `${work}/a.txt`)).toBe('a from main\n');

    const versionsBefore = await versionsOfMain();
    const result = await merge([left!, right!]);
    expect(result).toMatchObject({ merged: true, conflicts: [] });
    expect(result.sources.map((s) => s.name)).toEqual(['mg-left', 'mg-right']);
    expect(result.changes.map((c) => [c.path, c.source, c.action, c.how]).sort()).toEqual(
      [
        [`${work}/a.txt`, 'mg-left', 'write', 'source'],
        [`${work}/b.txt`, 'mg-right', 'write', 'source'],
        [`${work}/link`, 'mg-right', 'write', 'source'],
        [`${work}/new/deep/file.txt`, 'mg-right', 'write', 'source'],
        [`${work}/tool.sh`, 'mg-right', 'write', 'source'],
      ].sort(),
    );
    expect(await cat(main, `${work}/a.txt`)).toBe('a from left\n');
    expect(await cat(main, `${work}/b.txt`)).toBe('b from right\n');
    expect(await cat(main, `${work}/new/deep/file.txt`)).toBe('new\n');
    expect(await sh(client, main, `${work}/tool.sh`)).toBe('run\n');
    expect((await sh(client, main, `readlink ${work}/link`)).trim()).toBe('a.txt');
    expect(await sh(client, main, 'cat /srv/outside.txt 2>/dev/null || echo absent')).toBe('absent\n');
    // A version of main from before the merge, to roll it back to.
    const version = (await client.request('version.list', { workspace: main.id })).find((v) => v.id === result.version);
    expect(version?.label).toBe('before merging mg-left, mg-right into mg-main');
    expect(await versionsOfMain()).toEqual([...versionsBefore, result.version]);
    // The same processes, with what they kept in memory.
    const after = await client.request('workspace.get', { workspace: main.id });
    expect(after).toMatchObject({ state: 'running', pid: main.pid });
    const [firstSeen] = await Promise.all([cat(main, '/tmp/remembered'), new Promise((r) => setTimeout(r, 500))]);
    expect(firstSeen.trim()).toBe(remembered);
    expect((await cat(main, '/tmp/remembered')).trim()).toBe(remembered);
    // The sources are as they were.
    expect(await cat(left!, `${work}/b.txt`)).toBe('b from main\n');
  });

  it('with --all, merges outside the project too, never Grove’s own files', async () => {
    const {
      children: [child],
    } = await fork(client, main, ['mg-all']);
    await sh(client, child!, 'echo from-child > /srv/outside.txt; echo 10.9.9.9 elsewhere >> /etc/hosts');
    // Both desktops' Chromium goes on writing its own files (logs, caches): with --all those conflict, settled for the
    // target; it is held stopped in both meanwhile, or the merge would find new ones the dry run did not list.
    const chromium = async (signal: 'STOP' | 'CONT') => Promise.all([main, child!].map((b) => sh(client, b, `pkill -${signal} chromium; true`)));
    await chromium('STOP');
    let result: Awaited<ReturnType<typeof merge>>;
    try {
      const first = await merge([child!], { all: true, dryRun: true });
      expect(first.conflicts.map((c) => c.path)).not.toContain('/srv/outside.txt');
      result = await merge([child!], { all: true, take: first.conflicts.map((c) => ({ path: c.path, side: 'target' })) });
    } finally {
      await chromium('CONT');
    }
    expect(result).toMatchObject({ merged: true, scope: '/', conflicts: [] });
    expect(result.changes.map((c) => c.path)).toContain('/srv/outside.txt');
    expect(result.changes.map((c) => c.path)).not.toContain('/etc/hosts');
    expect(await cat(main, '/srv/outside.txt')).toBe('from-child\n');
    expect(await cat(main, '/etc/hosts')).not.toContain('elsewhere');
    expect((await cat(main, '/etc/hostname')).trim()).toBe(main.name);
  });

  it('two children that changed the same lines: the conflict with both sides, nothing written; --take settles it', async () => {
    const {
      children: [one, two],
    } = await fork(client, main, ['mg-one', 'mg-two']);
    await sh(client, one!, `sed -i 's/^two$/two by one/' ${work}/shared.txt; echo 'a by one' > ${work}/a.txt`);
    await sh(client, two!, `sed -i 's/^two$/two by two/' ${work}/shared.txt; sed -i 's/^eight$/eight by two/' ${work}/shared.txt`);
    const versionsBefore = await versionsOfMain();

    const result = await merge([one!, two!]);
    expect(result).toMatchObject({ merged: false, version: null });
    expect(result.conflicts).toHaveLength(1);
    const [conflict] = result.conflicts;
    expect(conflict).toMatchObject({ path: `${work}/shared.txt`, source: 'mg-two', kind: 'text', target: { kind: 'file' }, sourceSide: { kind: 'file' } });
    expect(conflict!.hunks).toContain('<<<<<<< mg-main\ntwo by one\n||||||| fork point\ntwo\n=======\ntwo by two\n>>>>>>> mg-two\n');
    expect(conflict!.hunks).toContain('eight by two');
    // Nothing written, no version taken.
    expect(await cat(main, `${work}/shared.txt`)).toBe(SHARED);
    expect(await cat(main, `${work}/a.txt`)).toBe('a from left\n');
    expect(await versionsOfMain()).toEqual(versionsBefore);

    // The command line: the conflict with both sides, exit 1, nothing written; then settled.
    const listed = await grove('merge', 'mg-main', 'mg-one', 'mg-two');
    expect(listed.exitCode).toBe(1);
    expect(listed.stdout).toContain(`CONFLICT (text) ${work}/shared.txt`);
    expect(listed.stdout).toContain('  | <<<<<<< mg-main\n  | two by one\n  | ||||||| fork point\n  | two\n  | =======\n  | two by two\n  | >>>>>>> mg-two');
    expect(listed.stdout).toContain('nothing was written');
    expect(await cat(main, `${work}/shared.txt`)).toBe(SHARED);
    const settled = await grove('merge', 'mg-main', 'mg-one', 'mg-two', '--take', `${work}/shared.txt=mg-two`);
    expect(settled.exitCode).toBe(0);
    expect(settled.stdout).toContain(`M ${work}/shared.txt\t(mg-two, taken)`);
    expect(settled.stdout).toMatch(/merged 2 file\(s\) under \/root\/work .*; mg-main before the merge is version [0-9a-f]{8}/);
    expect(await cat(main, `${work}/shared.txt`)).toBe(SHARED.replace('two\n', 'two by two\n').replace('eight\n', 'eight by two\n'));
    expect(await cat(main, `${work}/a.txt`)).toBe('a by one\n');
  });

  it('merges what both changed in different lines of one file', async () => {
    const {
      children: [child],
    } = await fork(client, main, ['mg-lines']);
    await sh(client, child!, `sed -i 's/^one$/one by child/' ${work}/shared.txt`);
    await sh(client, main, `sed -i 's/^five$/five by main/' ${work}/shared.txt`);
    const result = await merge([child!]);
    expect(result.changes).toEqual([{ path: `${work}/shared.txt`, source: 'mg-lines', action: 'write', how: 'merged' }]);
    const text = await cat(main, `${work}/shared.txt`);
    expect(text).toContain('one by child\n');
    expect(text).toContain('five by main\n');
  });

  it('an edit against a deletion, and a binary file changed on both sides, are conflicts; --take settles each', async () => {
    const {
      children: [child],
    } = await fork(client, main, ['mg-del']);
    await sh(client, child!, `rm ${work}/gone.txt; printf 'child\\0bin' > ${work}/bin.dat`);
    await sh(client, main, `echo edited >> ${work}/gone.txt; printf 'main\\0bin' > ${work}/bin.dat`);
    const result = await merge([child!]);
    expect(result.merged).toBe(false);
    const byPath = Object.fromEntries(result.conflicts.map((c) => [c.path, c]));
    expect(byPath[`${work}/gone.txt`]).toMatchObject({ kind: 'edit-delete', target: { kind: 'file' }, sourceSide: { kind: 'none' } });
    expect(byPath[`${work}/bin.dat`]).toMatchObject({
      kind: 'binary',
      target: { kind: 'file', bytes: 8 },
      sourceSide: { kind: 'file', bytes: 9 },
      hunks: null,
    });
    expect(byPath[`${work}/bin.dat`]!.target.sha256).not.toBe(byPath[`${work}/bin.dat`]!.sourceSide.sha256);
    expect(await sh(client, main, `test -e ${work}/gone.txt && echo kept`)).toBe('kept\n');

    const settled = await merge([child!], {
      take: [
        { path: `${work}/gone.txt`, side: 'mg-del' },
        { path: `${work}/bin.dat`, side: 'target' },
      ],
    });
    expect(settled).toMatchObject({ merged: true, conflicts: [] });
    expect(settled.changes).toEqual([{ path: `${work}/gone.txt`, source: 'mg-del', action: 'delete', how: 'taken' }]);
    expect(await sh(client, main, `test -e ${work}/gone.txt || echo gone`)).toBe('gone\n');
    expect(await sh(client, main, `od -c ${work}/bin.dat | head -1`)).toContain('m   a   i   n  \\0');
  });

  it('a source whose fork-point ancestor branch was discarded still merges on its base', async () => {
    const {
      children: [middle],
    } = await fork(client, main, ['mg-middle']);
    await sh(client, middle!, `echo 'from the middle' > ${work}/middle.txt`);
    const {
      children: [grandchild],
    } = await fork(client, middle!, ['mg-grandchild']);
    await sh(client, grandchild!, `echo 'from the grandchild' > ${work}/grandchild.txt`);
    await client.request('workspace.delete', { workspace: middle!.id });
    const result = await merge([grandchild!]);
    expect(result.merged).toBe(true);
    expect(result.changes.map((c) => c.path).sort()).toEqual([`${work}/grandchild.txt`, `${work}/middle.txt`]);
    expect(await cat(main, `${work}/grandchild.txt`)).toBe('from the grandchild\n');
  });

  it.each(['checkpoint', 'write'] as const)('a merge made to fail after its %s leaves the target as it was, running', async (stage) => {
    const {
      children: [child],
    } = await fork(client, main, [`mg-fault-${stage}`]);
    const before = await sh(client, main, `cd ${work} && find . -print0 | sort -z | xargs -0 sha256sum 2>/dev/null; find . | sort`);
    await sh(client, child!, `echo 'from the child' > ${work}/a.txt; mkdir -p ${work}/made/here; echo x > ${work}/made/here/x.txt; rm ${work}/b.txt`);
    const versionsBefore = await versionsOfMain();
    const err = await failure(merge([child!], { faultAt: stage }));
    expect(err.message).toContain(`fault injected after the merge's ${stage === 'write' ? 'files were written' : 'checkpoint'}`);
    expect(await sh(client, main, `cd ${work} && find . -print0 | sort -z | xargs -0 sha256sum 2>/dev/null; find . | sort`)).toBe(before);
    expect(await versionsOfMain()).toEqual(versionsBefore);
    expect(await client.request('workspace.get', { workspace: main.id })).toMatchObject({ state: 'running', pid: main.pid });
  });

  it("lets an agent merge into a branch it forked; into the main line it asks a person, with the merge's dry run", async () => {
    const alice = await testUser(agentUserNames(instance().instance)[0]!);
    const asAlice = (...args: string[]) => runAs(alice.name, GROVE_CLI, ['--socket', instance().agentSocketPath, ...args]);
    await withScope(client, alice.name, [main.id], async () => {
      const forked = await asAlice('--json', 'fork', main.id, '--name', 'mg-agent');
      expect(forked.exitCode, forked.stderr).toBe(0);
      const own = await track((JSON.parse(forked.stdout) as { children: Workspace[] }).children[0]!);
      const {
        children: [helper],
      } = await fork(client, own, ['mg-agent-helper']);
      await sh(client, helper!, `echo 'by the agent' > ${work}/agent.txt`);

      const intoOwn = await asAlice('merge', own.name, helper!.name);
      expect(intoOwn.exitCode, intoOwn.stderr).toBe(0);
      expect(await cat(own, `${work}/agent.txt`)).toBe('by the agent\n');

      const refused = await runAs(alice.name, path.join(REPO, 'privileged-helper/test/system/fixtures/call.ts'), [
        instance().agentSocketPath,
        'branch.merge',
        JSON.stringify({ workspace: main.id, sources: [own.id] }),
      ]);
      expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: 'E_FORBIDDEN', message: expect.stringContaining('kind branch.merge') } });

      const asked = await asAlice('--json', 'merge', main.name, own.name, '--reason', 'the agent file is done', '--no-wait');
      expect(asked.exitCode, asked.stderr).toBe(0);
      const req = JSON.parse(asked.stdout) as Approval;
      expect(req).toMatchObject({ state: 'pending', action: { kind: 'branch.merge', sources: [own.name] } });
      expect(req.preview.diff).toMatchObject({ against: { id: own.id, name: own.name }, changed: 1, removed: 0, paths: [`~ ${work}/agent.txt`] });
      expect(await sh(client, main, `test -e ${work}/agent.txt || echo absent`)).toBe('absent\n');
      const decided = await client.request('approval.approve', { id: req.id });
      expect(decided).toMatchObject({ state: 'done', outcome: expect.stringMatching(/^merged 1 file\(s\) into mg-main; before it is version [0-9a-f]{8}$/) });
      expect(await cat(main, `${work}/agent.txt`)).toBe('by the agent\n');
    });
  });

  it('a rename comes across as a deletion and an addition', async () => {
    const {
      children: [child],
    } = await fork(client, main, ['mg-rename']);
    await sh(client, child!, `mv ${work}/b.txt ${work}/renamed.txt`);
    const result = await merge([child!]);
    expect(result.changes.map((c) => [c.path, c.action]).sort()).toEqual([
      [`${work}/b.txt`, 'delete'],
      [`${work}/renamed.txt`, 'write'],
    ]);
    expect(await sh(client, main, `test -e ${work}/b.txt || cat ${work}/renamed.txt`)).toBe(await cat(child!, `${work}/renamed.txt`));
  });

  it("treats the branches' links as theirs: never followed on the host, written as links; a fifo is a conflict, nothing written", async () => {
    const {
      children: [child],
    } = await fork(client, main, ['mg-hostile']);
    // The target's a.txt becomes a link to its own /etc/passwd: read inside the branch, a conflict of kinds, not the host's file.
    await sh(client, main, `ln -sf /etc/passwd ${work}/a.txt`);
    await sh(client, child!, `echo 'child a' > ${work}/a.txt; ln -s /etc/shadow ${work}/to-shadow; ln -s / ${work}/to-root`);
    const result = await merge([child!]);
    expect(result.conflicts).toEqual([
      expect.objectContaining({
        path: `${work}/a.txt`,
        kind: 'kind',
        target: expect.objectContaining({ kind: 'link', detail: '/etc/passwd' }),
        sourceSide: expect.objectContaining({ kind: 'file' }),
      }),
    ]);
    const settled = await merge([child!], { take: [{ path: `${work}/a.txt`, side: 'target' }] });
    expect(settled.merged).toBe(true);
    expect((await sh(client, main, `readlink ${work}/to-shadow ${work}/to-root`)).split('\n')).toEqual(['/etc/shadow', '/', '']);

    const {
      children: [fifo],
    } = await fork(client, main, ['mg-fifo']);
    await sh(client, fifo!, `mkfifo ${work}/pipe; echo more > ${work}/more.txt`);
    const versionsBefore = await versionsOfMain();
    const refused = await merge([fifo!]);
    expect(refused).toMatchObject({
      merged: false,
      conflicts: [{ path: `${work}/pipe`, kind: 'special', sourceSide: { kind: 'other', detail: 'neither a file nor a link' } }],
    });
    expect(await sh(client, main, `test -e ${work}/more.txt || echo absent`)).toBe('absent\n');
    expect(await versionsOfMain()).toEqual(versionsBefore);
    const withoutPipe = await merge([fifo!], { take: [{ path: `${work}/pipe`, side: 'target' }] });
    expect(withoutPipe.changes.map((c) => c.path)).toEqual([`${work}/more.txt`]);
    expect(await sh(client, main, `test -e ${work}/pipe || cat ${work}/more.txt`)).toBe('more\n');
  });

  it('refuses a merge into itself, a take of a branch that is no source, and a take outside the project', async () => {
    const {
      children: [child],
    } = await fork(client, main, ['mg-bad']);
    expect(await failure(merge([main]))).toMatchObject({ code: 'E_INVALID_PARAMS', message: expect.stringContaining('into itself') });
    expect(await failure(merge([child!], { take: [{ path: `${work}/a.txt`, side: main.id }] }))).toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('not one of the sources'),
    });
    expect(await failure(merge([child!], { take: [{ path: '/etc/hostname', side: 'target' }] }))).toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('not a path this merge writes'),
    });
  });
});

describe('noise: Grove’s own files and what the project’s .gitignore files match', () => {
  const work = '/root/work';
  let client: HelperClient;
  let repo: string;
  let main: Workspace;
  let child: Workspace;
  const git = (...args: string[]) => execa('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args]).then((r) => r.stdout);
  const paths = (d: { added: string[]; changed: string[]; removed: string[] }) => [...d.added, ...d.changed, ...d.removed];

  beforeAll(async () => {
    client = await connect();
    repo = await mkdtemp(path.join(os.tmpdir(), 'grove-noise-repo-'));
    await writeFile(path.join(repo, '.gitignore'), 'node_modules/\n/build/\n');
    await writeFile(path.join(repo, 'src.txt'), 'source\n');
    await git('init', '-q', '-b', 'trunk');
    await git('add', '-A');
    await git('commit', '-qm', 'first');
    main = await track(await client.request('workspace.create', { name: 'nz-main', project: { hostPath: repo } }));
    child = (await fork(client, main, ['nz-child'])).children[0]!;
    await sh(
      client,
      child,
      `cd ${work} && echo changed > src.txt && mkdir -p build node_modules/pkg lib && echo obj > build/out.o && echo js > node_modules/pkg/index.js && printf 'gen/\\n' > lib/.gitignore && mkdir lib/gen && echo gen > lib/gen/made.c`,
    );
  });

  afterAll(async () => {
    await deleteTree(client, main);
    await rm(repo, { recursive: true, force: true });
    client.close();
  });

  it('leaves them out of a diff, a merge and an export; --all shows and merges them', async () => {
    const noisy = [`${work}/build/out.o`, `${work}/node_modules/pkg/index.js`, `${work}/lib/gen/made.c`, '/etc/hostname'];
    const diff = await client.request('branch.diff', { workspace: child.id });
    expect(paths(diff)).toContain(`${work}/src.txt`);
    expect(paths(diff)).toContain(`${work}/lib/.gitignore`);
    for (const p of noisy) expect(paths(diff)).not.toContain(p);
    const all = await client.request('branch.diff', { workspace: child.id, all: true });
    for (const p of noisy) expect(paths(all)).toContain(p);
    const cli = await grove('diff', child.name, '--stat', '--all');
    expect(cli.stdout).toContain(`${work}/node_modules/pkg/index.js`);
    expect((await grove('diff', child.name, '--stat')).stdout).not.toContain('node_modules');

    const dryAll = await client.request('branch.merge', { workspace: main.id, sources: [child.id], all: true, dryRun: true });
    expect(dryAll.changes.map((c) => c.path)).toEqual(expect.arrayContaining(noisy.slice(0, 3)));
    const merged = await client.request('branch.merge', { workspace: main.id, sources: [child.id] });
    expect(merged.changes.map((c) => c.path).sort()).toEqual([`${work}/lib/.gitignore`, `${work}/src.txt`]);
    expect(await sh(client, main, `cat ${work}/src.txt; test -e ${work}/build || echo no-build`)).toBe('changed\nno-build\n');

    const done = await client.request('branch.export', { workspace: child.id, to: { kind: 'git', repo, branch: 'nz-export' } });
    expect(done.files).toBe(2);
    expect((await git('show', '--name-only', '--format=', 'nz-export')).split('\n').sort()).toEqual(['lib/.gitignore', 'src.txt']);
  });

  it('exports only what changed since a version, on the origin commit still', async () => {
    const origin = main.project!.commit!;
    const version = await client.request('branch.checkpoint', { workspace: child.id, label: 'before later' });
    await sh(client, child, `cd ${work} && echo later > later.txt && rm lib/.gitignore && echo more > build/more.o`);
    const done = await grove('export', child.name, '--git', repo, '--branch', 'nz-since', '--since', version.id);
    expect(done.exitCode, done.stderr).toBe(0);
    expect(await git('log', '-1', '--format=%P', 'nz-since')).toBe(origin);
    expect((await git('show', '--name-status', '--format=', 'nz-since')).split('\n').sort()).toEqual(['A\tlater.txt']);
    // src.txt changed before the version: the commit has it as the origin does.
    expect(await git('show', 'nz-since:src.txt')).toBe('source');

    const now = await client.request('branch.checkpoint', { workspace: child.id, label: 'now' });
    expect(await failure(client.request('branch.export', { workspace: child.id, since: now.id, to: { kind: 'git', repo, branch: 'nz-none' } }))).toMatchObject({
      code: 'E_PRECONDITION',
      message: expect.stringContaining(`changed nothing in its project since version ${now.id}`),
    });
    const elsewhere = await createWorkspace(client, 'nz-other');
    const foreign = await client.request('branch.checkpoint', { workspace: elsewhere.id });
    expect(
      await failure(client.request('branch.export', { workspace: child.id, since: foreign.id, to: { kind: 'git', repo, branch: 'nz-none' } })),
    ).toMatchObject({
      code: 'E_NOT_FOUND',
      message: expect.stringContaining(`no version '${foreign.id}' of the workspace of 'nz-child'`),
    });
    await client.request('workspace.delete', { workspace: elsewhere.id, versions: 'delete' });
    expect(await git('branch', '--list', 'nz-none')).toBe('');
  });
  it("makes an agent's export a request: its preview the whole commit; approved, the person writes it into their own repository", async () => {
    const origin = main.project!.commit!;
    const alice = await testUser(agentUserNames(instance().instance)[0]!);
    const asAlice = (...args: string[]) => runAs(alice.name, GROVE_CLI, ['--socket', instance().agentSocketPath, ...args]);
    await withScope(client, alice.name, [main.id], async () => {
      const refused = await runAs(alice.name, CALL, [
        instance().agentSocketPath,
        'branch.export',
        JSON.stringify({ workspace: child.id, to: { kind: 'git', repo, branch: 'nz-agent' } }),
      ]);
      expect(JSON.parse(refused.stdout)).toMatchObject({ error: { code: 'E_FORBIDDEN', message: expect.stringContaining('kind branch.export') } });

      const asked = await asAlice('--json', 'export', child.name, '--git', repo, '--branch', 'nz-agent', '--reason', 'later.txt is done', '--no-wait');
      expect(asked.exitCode, asked.stderr).toBe(0);
      const req = JSON.parse(asked.stdout) as Approval;
      expect(req).toMatchObject({ state: 'pending', action: { kind: 'branch.export', repo, branch: 'nz-agent' } });
      expect(req.preview.export).toMatchObject({ repo, branch: 'nz-agent' });
      const patch = req.preview.export!.patch;
      expect(patch).toContain('+later');
      expect(patch).toContain('src.txt');
      expect(patch).not.toContain('node_modules');
      expect(patch).not.toContain('build/');
      expect(await git('branch', '--list', 'nz-agent')).toBe('');

      const decided = await client.request('approval.approve', { id: req.id });
      expect(decided).toMatchObject({ state: 'done', outcome: expect.stringMatching(/^commit [0-9a-f]{40} on [0-9a-f]{12} is branch nz-agent of /) });
      expect(await git('log', '-1', '--format=%P|%cn', 'nz-agent')).toMatch(new RegExp(`^${origin}\\|`));
      // lib/.gitignore went before the version: what it kept out is the branch's work now.
      expect((await git('show', '--name-only', '--format=', 'nz-agent')).split('\n').sort()).toEqual(['later.txt', 'lib/gen/made.c', 'src.txt']);

      // A repository that is not the approving person's own is refused when it is approved, nothing written.
      const theirs = await mkdtemp(path.join(os.tmpdir(), 'grove-agent-repo-'));
      try {
        await execa('git', ['init', '-q', theirs]);
        await execa('chown', ['-R', String(alice.uid), theirs]);
        const planted = await asAlice('--json', 'export', child.name, '--git', theirs, '--branch', 'x', '--reason', 'mine', '--no-wait');
        expect(planted.exitCode, planted.stderr).toBe(0);
        const denied = await client.request('approval.approve', { id: (JSON.parse(planted.stdout) as Approval).id });
        expect(denied).toMatchObject({ state: 'failed', outcome: expect.stringContaining(`belongs to uid ${alice.uid}, not to the person approving (uid 0)`) });
        expect((await execa('git', ['-c', `safe.directory=${theirs}`, '-C', theirs, 'for-each-ref'])).stdout).toBe('');
      } finally {
        await rm(theirs, { recursive: true, force: true });
      }
    });
  });
});

describe('a helper killed mid-merge', () => {
  let c: HelperClient;
  let project: string;
  let main: Workspace;
  const work = '/root/work';
  const state = () => sh(c, main, `cd ${work} && find . -print0 | sort -z | xargs -0 sha256sum 2>/dev/null; find . | sort`);
  const versionsOfMain = async () => (await c.request('version.list', { workspace: main.id })).filter((v) => v.branch === main.id).map((v) => v.id);

  /** The merge kills the helper at `stage`; a new helper is started, which finishes what the last one left. */
  async function crashDuring(sources: Workspace[], stage: 'checkpoint' | 'write'): Promise<void> {
    const t = instance();
    const pid = Number(await readFile(t.pidFile, 'utf8'));
    await c.request('branch.merge', { workspace: main.id, sources: sources.map((s) => s.id), faultAt: stage, crash: true }).catch(() => undefined);
    await waitFor(
      'the helper to die',
      async () => {
        const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
        return stat === '' || stat.slice(stat.lastIndexOf(')') + 2)[0] === 'Z';
      },
      60_000,
    );
    c.close();
    await startHelper(t);
    c = await connect('merge-crash');
  }

  beforeAll(async () => {
    c = await connect('merge-crash');
    project = await mkdtemp(path.join(os.tmpdir(), 'grove-merge-crash-'));
    await writeFile(path.join(project, 'a.txt'), 'a from main\n');
    await writeFile(path.join(project, 'b.txt'), 'b from main\n');
    main = await track(await c.request('workspace.create', { name: 'mc-main', project: { hostPath: project } }));
  });

  afterAll(async () => {
    await deleteTree(c, main);
    await rm(project, { recursive: true, force: true });
    c.close();
  });

  it.each(['checkpoint', 'write'] as const)(
    'after its %s: the next start undoes it, the target runs with its files as before, the version goes',
    async (stage) => {
      const {
        children: [child],
      } = await fork(c, main, [`mc-${stage}`]);
      await sh(c, child!, `echo 'from the child' > ${work}/a.txt; mkdir -p ${work}/made; echo x > ${work}/made/x.txt; rm ${work}/b.txt`);
      const before = await state();
      const versionsBefore = await versionsOfMain();
      await crashDuring([child!], stage);
      main = await track(await c.request('workspace.get', { workspace: main.id }));
      expect(main.state).toBe('running');
      expect(await state()).toBe(before);
      expect(await versionsOfMain()).toEqual(versionsBefore);
      // And it merges afterwards.
      expect(await c.request('branch.merge', { workspace: main.id, sources: [child!.id] })).toMatchObject({ merged: true });
      expect(await sh(c, main, `cat ${work}/a.txt`)).toBe('from the child\n');
      await c.request('branch.rollback', { workspace: main.id, version: (await versionsOfMain()).at(-1)! });
      main = await track(await c.request('workspace.get', { workspace: main.id }));
    },
  );
});
