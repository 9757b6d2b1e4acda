// Agents on a short leash, for real: two unprivileged members of grove-agent,
// each given its own workspace by a person with `grove agents allow`, and a
// person's workspace given to neither. Each sees and acts only in its own;
// the rest answers as if it did not exist. A revocation holds on a connection
// already open. A branch a person acted on is no longer the agent's to
// discard or roll back: that becomes a request.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import { connectGroveMcp, textOf } from '../../../main/src/mcp/client.js';
import type { Approval } from '../../src/protocol/approvals.js';
import type { Workspace } from '../../src/protocol/entities.js';
import type { Scope, ScopeChange } from '../../src/protocol/scopes.js';
import { agentUserNames, CALL, GROVE_CLI, runAs, testUser, type TestUser } from './agent-users.js';
import { connect, createWorkspace, instance, track } from './support.js';

interface CallOutput {
  result?: unknown;
  error?: { code: string; message: string };
}

describe('scopes: each agent in its own workspaces', () => {
  let person: HelperClient;
  let alice: TestUser;
  let bob: TestUser;
  let personal: Workspace;
  let alices: Workspace;
  let bobs: Workspace;
  const trees = new Set<string>();

  async function call(user: TestUser, method: string, params: object): Promise<CallOutput> {
    const res = await runAs(user.name, CALL, [instance().agentSocketPath, method, JSON.stringify(params)]);
    expect(res.stderr, res.stdout).toBe('');
    return JSON.parse(res.stdout) as CallOutput;
  }

  function grove(user: TestUser | 'root', ...args: string[]) {
    return user === 'root'
      ? runAs('root', GROVE_CLI, ['--socket', instance().socketPath, ...args])
      : runAs(user.name, GROVE_CLI, ['--socket', instance().agentSocketPath, ...args]);
  }

  const listed = async (user: TestUser) => ((await call(user, 'workspace.list', {})).result as Workspace[]).map((w) => w.name);

  beforeAll(async () => {
    const [a1, a2] = agentUserNames(instance().instance);
    [alice, bob] = await Promise.all([testUser(a1!), testUser(a2!)]);
    person = await connect('scopes-person');
    personal = await createWorkspace(person, 'sc-person');
    alices = await createWorkspace(person, 'sc-alice');
    bobs = await createWorkspace(person, 'sc-bob');
    for (const w of [personal, alices, bobs]) trees.add(w.tree);
  });

  afterAll(async () => {
    for (const agent of [alice, bob]) await person?.request('scope.revoke', { who: { user: agent.name } }).catch(() => undefined);
    const mine = (await person.request('workspace.list', {})).filter((w) => trees.has(w.tree));
    for (const w of [...mine.filter((x) => !x.main), ...mine.filter((x) => x.main)])
      await person.request('workspace.delete', { workspace: w.id }).catch(() => undefined);
    person?.close();
  });

  it('gives an agent no workspace until a person gives it some, and says so', async () => {
    expect(await listed(alice)).toEqual([]);
    const ls = await grove(alice, 'ls');
    expect(ls.stdout).toContain(
      `No workspace is in your scope (agent ${alice.name} (uid ${alice.uid})): a person gives you some with grove agents allow ${alice.name}`,
    );
    expect((await call(alice, 'workspace.get', { workspace: 'sc-alice' })).error).toEqual({ code: 'E_NOT_FOUND', message: "no workspace 'sc-alice'" });
  });

  it('refuses a scope naming a missing user, group, workspace or image, and changes nothing', async () => {
    const bad: [ScopeChange, string][] = [
      [{ who: { user: 'no-such-user-here' }, workspaces: ['sc-alice'] }, "no user 'no-such-user-here' on this host"],
      [{ who: { group: 'no-such-group-here' }, workspaces: ['sc-alice'] }, "no group 'no-such-group-here' on this host"],
      [{ who: { user: alice.name }, workspaces: ['sc-alice', 'sc-nowhere'] }, "no workspace 'sc-nowhere'"],
      [{ who: { user: alice.name }, images: ['no-such-image'] }, "no image 'no-such-image' (grove images)"],
    ];
    for (const [change, message] of bad) {
      await expect(person.request('scope.allow', change)).rejects.toMatchObject({ code: 'E_NOT_FOUND', message });
    }
    await expect(person.request('scope.allow', { who: { user: alice.name } })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining('name at least one workspace or image, or create'),
    });
    expect(await person.request('scope.list', {})).toEqual([]);
    // Only persons give scopes.
    expect((await call(alice, 'scope.allow', { who: { user: alice.name }, workspaces: ['sc-person'] })).error?.code).toBe('E_FORBIDDEN');
  });

  it('gives each agent its own workspace with grove agents allow, and audits it', async () => {
    const allowed = await grove('root', 'agents', 'allow', alice.name, 'sc-alice');
    expect(allowed.exitCode, allowed.stderr).toBe(0);
    expect((await grove('root', 'agents', 'allow', bob.name, bobs.id)).exitCode).toBe(0);
    const scopes = JSON.parse((await grove('root', '--json', 'agents', 'ls')).stdout) as Scope[];
    expect(scopes.map((s) => [s.subject, s.target, s.targetName])).toEqual([
      [{ kind: 'user', name: alice.name, uid: alice.uid }, { kind: 'workspace', tree: alices.tree }, 'sc-alice'],
      [{ kind: 'user', name: bob.name, uid: bob.uid }, { kind: 'workspace', tree: bobs.tree }, 'sc-bob'],
    ]);
    // An agent sees its own scope only.
    expect((JSON.parse((await grove(alice, '--json', 'agents', 'ls')).stdout) as Scope[]).map((s) => s.targetName)).toEqual(['sc-alice']);
    const audit = await person.request('audit.list', { limit: 10 });
    expect(audit.filter((e) => e.action === 'scope.allow' && e.outcome === 'ok').map((e) => e.actor?.role)).toEqual(['person', 'person']);
  });

  it("lets neither agent list, screenshot, exec in or fork the other's workspace or the person's: E_NOT_FOUND, as for a missing one", async () => {
    for (const [agent, own, theirs] of [
      [alice, 'sc-alice', bobs],
      [alice, 'sc-alice', personal],
      [bob, 'sc-bob', alices],
      [bob, 'sc-bob', personal],
    ] as const) {
      const ref = theirs.name;
      const attempts = [
        ['workspace.get', { workspace: theirs.id }, theirs.id],
        ['workspace.list', {}, null],
        ['desktop.screenshot', { workspace: ref, scale: 0.25 }, ref],
        ['exec.run', { workspace: ref, argv: ['true'] }, ref],
        ['branch.fork', { workspace: ref, copies: 1 }, ref],
        ['branch.checkpoint', { workspace: ref }, ref],
        ['branch.diff', { workspace: own, other: ref }, ref],
      ] as const;
      const outs = await Promise.all(attempts.map(([method, params]) => call(agent, method, params)));
      attempts.forEach(([method, , named], i) => {
        if (named === null)
          expect(
            (outs[i]!.result as Workspace[]).map((w) => w.name),
            `${agent.name} lists`,
          ).toEqual([own]);
        else expect(outs[i]!.error, `${agent.name} ${method} ${named}`).toEqual({ code: 'E_NOT_FOUND', message: `no workspace '${named}'` });
      });
    }
    // Its own works.
    expect(((await call(alice, 'exec.run', { workspace: 'sc-alice', argv: ['hostname'] })).result as { stdout: string }).stdout.trim()).toBe('sc-alice');
    // Lists leave the rest out: versions, the audit log.
    const version = await person.request('branch.checkpoint', { workspace: 'sc-person', label: 'the person' });
    expect(((await call(alice, 'version.list', {})).result as { id: string }[]).map((v) => v.id)).not.toContain(version.id);
    expect((await call(alice, 'branch.rollback', { workspace: 'sc-alice', version: version.id })).error).toEqual({
      code: 'E_NOT_FOUND',
      message: `no version '${version.id}'`,
    });
    // The audit log: its own calls (those it tried above too), and others' only about its workspaces.
    const log = (await call(alice, 'audit.list', { limit: 500 })).result as { target: string | null; actor: { uid: number } | null }[];
    const others = log.filter((e) => e.actor?.uid !== alice.uid);
    expect(others.some((e) => e.target === 'sc-alice')).toBe(true);
    expect(others.filter((e) => [personal.id, 'sc-person', bobs.id, 'sc-bob'].includes(e.target ?? ''))).toEqual([]);
  });

  it("lets an agent create workspaces only when a person lets it; what it creates is its own and nobody else's to see", async () => {
    expect((await call(alice, 'workspace.create', { name: 'sc-alice-made' })).error?.code).toBe('E_FORBIDDEN');
    expect((await grove('root', 'agents', 'allow', alice.name, '--create')).exitCode).toBe(0);
    const made = await grove(alice, '--json', 'ws', 'create', 'sc-alice-made');
    expect(made.exitCode, made.stderr).toBe(0);
    const ws = await track(JSON.parse(made.stdout) as Workspace);
    trees.add(ws.tree);
    expect(ws.madeBy).toEqual({ role: 'agent', uid: alice.uid, user: alice.name });
    expect((await listed(alice)).sort()).toEqual(['sc-alice', 'sc-alice-made']);
    expect((await call(bob, 'workspace.get', { workspace: 'sc-alice-made' })).error?.code).toBe('E_NOT_FOUND');
    // Its own: it discards it without asking.
    expect((await call(alice, 'workspace.delete', { workspace: ws.id })).result).toEqual({ deleted: ws.id });
  });

  it("answers an agent's taken name alike whether its holder is in the agent's scope or not, naming no workspace", async () => {
    expect((await grove('root', 'agents', 'allow', alice.name, '--create')).exitCode).toBe(0);
    const outside = (await call(alice, 'workspace.create', { name: 'sc-person' })).error;
    const inside = (await call(alice, 'workspace.create', { name: 'sc-alice' })).error;
    expect(outside).toEqual({ code: 'E_CONFLICT', message: "the name 'sc-person' is not free: choose another" });
    expect(inside).toEqual({ code: 'E_CONFLICT', message: "the name 'sc-alice' is not free: choose another" });
    const forkedOnto = (await call(alice, 'branch.fork', { workspace: 'sc-alice', copies: 1, names: ['sc-bob'] })).error;
    expect(forkedOnto).toEqual({ code: 'E_CONFLICT', message: "the name 'sc-bob' is not free: choose another" });
    expect((await listed(alice)).sort()).toEqual(['sc-alice']);
    // A person is told plainly.
    await expect(person.request('workspace.create', { name: 'sc-bob' })).rejects.toThrow("a workspace named 'sc-bob' already exists");
    expect((await grove('root', 'agents', 'revoke', alice.name, '--create')).exitCode).toBe(0);
  });

  it('takes a scope back on a connection already open', async () => {
    const mcp: Client = await connectGroveMcp({
      name: 'scopes-test',
      socketPath: instance().agentSocketPath,
      runAs: ['setpriv', '--reuid', bob.name, '--regid', bob.name, '--init-groups'],
      stderr: 'ignore',
    });
    try {
      const before = (await mcp.callTool({ name: 'list_branches', arguments: {} })) as CallToolResult;
      expect(JSON.parse(textOf(before)).workspaces.map((w: { mainLine: { name: string } }) => w.mainLine.name)).toEqual(['sc-bob']);
      const revoked = await grove('root', 'agents', 'revoke', bob.name, 'sc-bob');
      expect(revoked.exitCode, revoked.stderr).toBe(0);
      const after = (await mcp.callTool({ name: 'list_branches', arguments: {} })) as CallToolResult;
      expect(after.structuredContent).toMatchObject({ workspaces: [], note: expect.stringContaining(`grove agents allow ${bob.name}`) });
      const shot = (await mcp.callTool({ name: 'computer', arguments: { branch: 'sc-bob', action: 'screenshot' } })) as CallToolResult;
      expect(shot).toMatchObject({ isError: true, content: [{ type: 'text', text: "no workspace 'sc-bob' (E_NOT_FOUND)" }] });
    } finally {
      await mcp.close();
    }
    expect(await listed(bob)).toEqual([]);
    // Revoking what it no longer has is said so.
    expect((await grove('root', 'agents', 'revoke', bob.name, 'sc-bob')).stderr).toMatch(/has no such scope/);
  });

  it("makes a branch the person's once they promote it: the agent's discard becomes a request, and the main line keeps its socket and port", async () => {
    const forked = await grove(alice, '--json', 'fork', 'sc-alice', '--name', 'sc-alice-fork');
    expect(forked.exitCode, forked.stderr).toBe(0);
    const child = await track((JSON.parse(forked.stdout) as { children: Workspace[] }).children[0]!);
    expect(child.claimedBy).toBeNull();
    const main = await person.request('workspace.get', { workspace: 'sc-alice' });
    await person.request('branch.promote', { workspace: child.id, oldMain: 'keep' });
    const promoted = await person.request('workspace.get', { workspace: child.id });
    expect(promoted).toMatchObject({ main: true, vncSocket: main.vncSocket, ports: main.ports, claimedBy: { role: 'person', uid: 0, user: 'root' } });

    const direct = await call(alice, 'workspace.delete', { workspace: child.id });
    expect(direct.error).toMatchObject({ code: 'E_FORBIDDEN', message: expect.stringContaining('discard a branch it does not own') });
    const asked = await grove(alice, '--json', 'discard', child.id, '--reason', 'my experiment is over', '--no-wait');
    expect(asked.exitCode, asked.stderr).toBe(0);
    const req = JSON.parse(asked.stdout) as Approval;
    expect(req).toMatchObject({ state: 'pending', action: { kind: 'branch.discard' }, workspace: child.id });
    await person.request('approval.deny', { id: req.id, note: 'it is the main line now' });
    expect(await person.request('workspace.get', { workspace: child.id })).toMatchObject({
      state: 'running',
      main: true,
      vncSocket: main.vncSocket,
      ports: main.ports,
    });
  });

  it("turns an agent's rollback of a person's branch into a request, carried out when approved", async () => {
    const theirs = await person.request('workspace.get', { workspace: 'sc-alice' }); // the old main line, kept as a branch: a person's
    expect(theirs.main).toBe(false);
    const version = await person.request('branch.checkpoint', { workspace: theirs.id, label: 'before' });
    const direct = await call(alice, 'branch.rollback', { workspace: theirs.id, version: version.id });
    expect(direct.error).toMatchObject({ code: 'E_FORBIDDEN', message: expect.stringContaining('kind branch.rollback') });
    const asked = await grove(alice, '--json', 'rollback', theirs.id, '--to', version.id, '--reason', 'the last change broke the build', '--no-wait');
    expect(asked.exitCode, asked.stderr).toBe(0);
    const req = JSON.parse(asked.stdout) as Approval;
    expect(req).toMatchObject({ state: 'pending', action: { kind: 'branch.rollback', version: version.id } });
    expect(req.effect).toContain(`returns to version ${version.id}`);
    const decided = await person.request('approval.approve', { id: req.id });
    expect(decided).toMatchObject({ state: 'done', outcome: `sc-alice is back at version ${version.id}` });
    expect((await person.request('workspace.get', { workspace: theirs.id })).version).toBe(version.id);
  });

  it('grove request --wait exits 0 when approved and done, 3 when denied, 4 when expired', async () => {
    const ask = async (action: object, timeoutS?: number) =>
      ((await call(alice, 'approval.create', { workspace: 'sc-alice', action, reason: 'exit codes', timeoutS })).result as Approval).id;
    const [approved, denied, expiring] = [
      await ask({ kind: 'egress.policy', change: { allow: [{ host: 'example.org', port: 443 }] } }),
      await ask({ kind: 'workspace.stop' }),
      await ask({ kind: 'branch.discard' }, 10),
    ];
    const waits = [approved, denied, expiring].map((id) => grove(alice, 'request', id, '--wait', '60'));
    await person.request('approval.approve', { id: approved });
    await person.request('approval.deny', { id: denied, note: 'not now' });
    const ended = await Promise.all(waits);
    expect(
      ended.map((r) => r.exitCode),
      ended.map((r) => r.stderr).join(''),
    ).toEqual([0, 3, 4]);
    expect(ended[1]!.stdout).toContain('not now');
    // Not waiting long enough for an open request: 5.
    const open = await ask({ kind: 'workspace.stop' });
    expect((await grove(alice, 'request', open, '--wait', '0.5')).exitCode).toBe(5);
    await call(alice, 'approval.withdraw', { id: open });
  });
});
