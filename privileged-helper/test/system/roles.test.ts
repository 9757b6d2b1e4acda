// Persons and agents, for real: agent-role calls come from unprivileged users
// in grove-agent (made for this run) on the agent socket, through the grove CLI
// and raw protocol calls. What an agent may do works; what only a person may
// do is refused or becomes a request that a person decides; the audit log
// names the kernel's identity of every caller.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Approval } from '../../src/protocol/approvals.js';
import type { Actor } from '../../src/protocol/identity.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { agentUserNames, CALL, GROVE_CLI, runAs, testUser, type TestUser } from './agent-users.js';
import { connect, createWorkspace, instance, track } from './support.js';
import { until } from '../until.js';

interface CallOutput {
  identity?: Actor;
  result?: unknown;
  error?: { code: string; message: string };
}

describe('roles: persons decide, agents ask', () => {
  let person: HelperClient;
  let alice: TestUser;
  let bob: TestUser;
  let outsider: TestUser;
  let main: Workspace;
  const opened: Approval[] = [];
  const made: string[] = [];

  /** One protocol call as `user` on the agent socket (or another socket). */
  async function call(user: TestUser, method: string, params: object, socket = instance().agentSocketPath, client = ['call', 'test']): Promise<CallOutput> {
    const res = await runAs(user.name, CALL, [socket, method, JSON.stringify(params), ...client]);
    expect(res.stderr, res.stdout).toBe('');
    return JSON.parse(res.stdout) as CallOutput;
  }

  /** The grove CLI as `user` on the agent socket. */
  function grove(user: TestUser, ...args: string[]) {
    return runAs(user.name, GROVE_CLI, ['--socket', instance().agentSocketPath, ...args]);
  }

  async function nextRequest(match: (a: Approval) => boolean, timeoutMs = 60_000): Promise<Approval> {
    return until(() => opened.find(match), { what: 'a matching request to open', timeoutMs, everyMs: 100 });
  }

  beforeAll(async () => {
    const [a1, a2, none] = agentUserNames(instance().instance);
    [alice, bob, outsider] = await Promise.all([testUser(a1!), testUser(a2!), testUser(none!)]);
    person = await connect('roles-person');
    await person.subscribe(['approval.opened']);
    person.on('approval.opened', (a) => opened.push(a));
    main = await createWorkspace(person, 'roles-main');
    made.push(main.id);
    for (const agent of [alice, bob]) await person.request('scope.allow', { who: { user: agent.name }, workspaces: [main.id] });
  });

  afterAll(async () => {
    for (const agent of [alice, bob]) await person?.request('scope.revoke', { who: { user: agent.name } }).catch(() => undefined);
    for (const id of made.reverse()) await person?.request('workspace.delete', { workspace: id }).catch(() => undefined);
    person?.close();
  });

  it('identifies an agent by its credentials, whatever the client calls itself', async () => {
    const out = await call(alice, 'workspace.list', {}, instance().agentSocketPath, ['grove-app', 'app']);
    expect(out.identity).toMatchObject({ role: 'agent', uid: alice.uid, user: alice.name, client: 'app:grove-app' });
    expect(out.identity!.pid).toBeGreaterThan(1);
    expect(Array.isArray(out.result)).toBe(true);
    const whoami = await grove(alice, '--json', 'whoami');
    expect(JSON.parse(whoami.stdout)).toMatchObject({ role: 'agent', uid: alice.uid, user: alice.name });
  });

  it('refuses a peer in neither group at connect, and an agent on the person socket', async () => {
    const outside = await call(outsider, 'workspace.list', {});
    expect(outside.error).toMatchObject({ code: 'E_PRECONDITION', message: expect.stringContaining("agents must be members of the 'grove-agent' group") });
    const onPersonSocket = await call(alice, 'workspace.list', {}, instance().socketPath);
    expect(onPersonSocket.error).toMatchObject({ code: 'E_PRECONDITION', message: expect.stringContaining("only root and members of the 'grove' group") });
  });

  it('never lets an agent decide, grant, give scopes or build images; nor create workspaces unless let', async () => {
    for (const [method, params] of [
      ['approval.approve', { id: 'q00000000' }],
      ['approval.deny', { id: 'q00000000' }],
      ['grant.set', { workspace: main.id, kind: 'branch.discard' }],
      ['scope.allow', { who: { user: alice.name }, workspaces: [main.id], create: true }],
      ['image.build', { name: 'desktop' }],
      ['version.delete', { version: '00000000' }],
    ] as const) {
      const out = await call(alice, method, params);
      expect(out.error, method).toMatchObject({ code: 'E_FORBIDDEN', message: expect.stringContaining('only a person may') });
    }
    expect((await call(alice, 'workspace.create', { name: 'roles-nope' })).error).toMatchObject({
      code: 'E_FORBIDDEN',
      message: `a person has not let ${alice.name} create workspaces (a person can: grove agents allow ${alice.name} --create)`,
    });
    const approve = await grove(alice, 'approve', 'q00000000');
    expect(approve.exitCode).toBe(2);
    expect(approve.stderr).toMatch(/only a person may call approval.approve.*never an agent's/);
  });

  it("refuses direct promote, egress changes and stop/delete of others' branches, saying how to ask", async () => {
    for (const [method, params, kind] of [
      ['branch.promote', { workspace: main.id }, 'branch.promote'],
      ['egress.set', { workspace: main.id, mode: 'allow' }, 'egress.policy'],
      ['workspace.delete', { workspace: main.id }, 'branch.discard'],
      ['workspace.stop', { workspace: main.id }, 'workspace.stop'],
    ] as const) {
      const out = await call(alice, method, params);
      expect(out.error, method).toMatchObject({ code: 'E_FORBIDDEN', message: expect.stringContaining(`approval.create, kind ${kind}`) });
    }
    expect((await person.request('workspace.get', { workspace: main.id })).state).toBe('running');
    expect((await person.request('egress.status', { workspace: main.id })).policy.mode).toBe('deny');
  });

  it('lets an agent fork, exec and discard what it forked itself, without asking', async () => {
    const fork = await grove(alice, '--json', 'fork', main.id, '--name', 'roles-alice');
    expect(fork.exitCode, fork.stderr).toBe(0);
    const child = await track((JSON.parse(fork.stdout) as { children: Workspace[] }).children[0]!);
    made.push(child.id);
    expect(child.madeBy).toEqual({ role: 'agent', uid: alice.uid, user: alice.name });
    const exec = await grove(alice, 'exec', child.id, '--', 'hostname');
    expect(exec.stdout.trim()).toBe('roles-alice');
    // bob did not fork it: he has to ask
    expect((await call(bob, 'workspace.delete', { workspace: child.id })).error?.code).toBe('E_FORBIDDEN');
    const discard = await grove(alice, 'discard', child.id);
    expect(discard.exitCode, discard.stderr).toBe(0);
    await expect(person.request('workspace.get', { workspace: child.id })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
  });

  it("turns an agent's egress change into a request; the person denies it and the agent is told", async () => {
    const asking = grove(alice, 'egress', main.id, '--allow', 'example.org:443', '--reason', 'docs for the build');
    const req = await nextRequest((a) => a.action.kind === 'egress.policy' && a.workspace === main.id);
    expect(req).toMatchObject({ state: 'pending', reason: 'docs for the build', requestedBy: { role: 'agent', uid: alice.uid, user: alice.name } });
    expect(req.effect).toContain('allow example.org:443');
    await person.request('approval.deny', { id: req.id, note: 'use the mirror' });
    const res = await asking;
    expect(res.exitCode).toBe(2);
    expect(res.stderr).toMatch(new RegExp(`request ${req.id} was denied by person root \\(uid 0\\): use the mirror \\(E_DENIED\\)`));
    expect((await person.request('egress.status', { workspace: main.id })).policy).toEqual({ mode: 'deny', allow: [], holdMutating: false });
  });

  it('asks a person to promote, with a preview; on approval it is carried out and the agent gets the result', async () => {
    const child = await track((await person.request('branch.fork', { workspace: main.id, copies: 1, names: ['roles-promote'] })).children[0]!);
    made.push(child.id);
    expect((await grove(alice, 'promote', child.id)).stderr).toMatch(/an agent must say why: add --reason/);
    const asking = grove(alice, 'promote', child.id, '--reason', 'the tests pass here', '--old-main', 'keep');
    const req = await nextRequest((a) => a.action.kind === 'branch.promote' && a.workspace === child.id);
    expect(req.action).toEqual({ kind: 'branch.promote', oldMain: 'keep' });
    expect(req.preview.diff).toMatchObject({ against: { id: main.id, name: 'roles-main' } });
    expect(req.preview.versions).toBe(0);
    expect(req.effect).toContain('roles-promote becomes the main line');
    const decided = await person.request('approval.approve', { id: req.id });
    expect(decided).toMatchObject({ state: 'done', outcome: 'roles-promote is now the main line', decision: { by: { role: 'person', uid: 0 } } });
    const res = await asking;
    expect(res.exitCode, res.stderr).toBe(0);
    expect(res.stdout).toContain('roles-promote is now the main line');
    expect((await person.request('workspace.get', { workspace: child.id })).main).toBe(true);
    // Back to the first main line for the tests that follow.
    await person.request('branch.promote', { workspace: main.id, oldMain: 'keep' });
  });

  it("asks to discard another's branch; a standing approval then decides it, and later requests, without a person", async () => {
    const child = await track((await person.request('branch.fork', { workspace: main.id, copies: 1, names: ['roles-discard'] })).children[0]!);
    made.push(child.id);
    const asked = await grove(alice, '--json', 'discard', child.id, '--reason', 'a dead end', '--no-wait');
    expect(asked.exitCode, asked.stderr).toBe(0);
    const req = JSON.parse(asked.stdout) as Approval;
    expect(req).toMatchObject({ state: 'pending', action: { kind: 'branch.discard' } });
    expect(req.preview.processes?.count).toBeGreaterThan(5);
    expect(req.preview.processes?.names.join(' ')).toMatch(/Xvnc|chromium/);
    expect(req.preview.diff?.against).toEqual({ id: main.id, name: 'roles-main' });
    // The same request again gives the waiting one back.
    expect((JSON.parse((await grove(alice, '--json', 'discard', child.id, '--reason', 'a dead end', '--no-wait')).stdout) as Approval).id).toBe(req.id);

    const grant = await person.request('grant.set', { workspace: main.id, kind: 'branch.discard' });
    expect(await person.request('approval.get', { id: req.id })).toMatchObject({ state: 'done', decision: { grant: grant.id } });
    await expect(person.request('workspace.get', { workspace: child.id })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });

    const second = await track((await person.request('branch.fork', { workspace: main.id, copies: 1, names: ['roles-discard-2'] })).children[0]!);
    made.push(second.id);
    const direct = await call(bob, 'workspace.delete', { workspace: second.id });
    expect(direct.result).toEqual({ deleted: second.id });
    await person.request('grant.revoke', { grant: grant.id });
    expect((await call(bob, 'workspace.delete', { workspace: main.id })).error?.code).toBe('E_FORBIDDEN');
  });

  it('tells the agent when nobody decides in time, and lets it withdraw', async () => {
    const created = await call(alice, 'approval.create', { workspace: main.id, action: { kind: 'workspace.stop' }, reason: 'save power', timeoutS: 10 });
    const req = created.result as Approval;
    expect(req.state).toBe('pending');
    const waited = await call(alice, 'approval.wait', { id: req.id, timeoutMs: 30_000 });
    expect(waited.result).toMatchObject({ state: 'expired', outcome: 'nobody decided within 10 s' });
    const other = (await call(alice, 'approval.create', { workspace: main.id, action: { kind: 'workspace.stop' }, reason: 'save power' })).result as Approval;
    expect((await call(bob, 'approval.withdraw', { id: other.id })).error?.code).toBe('E_FORBIDDEN');
    expect((await call(alice, 'approval.withdraw', { id: other.id })).result).toMatchObject({ state: 'withdrawn' });
    expect((await person.request('workspace.get', { workspace: main.id })).state).toBe('running');
  });

  it('records the kernel-derived identity of each call in the audit log and on events', async () => {
    const events: { by: Actor | undefined; state: string }[] = [];
    const off = person.on('workspace.changed', (e, _seq, by) => events.push({ by, state: e.workspace.state }));
    await person.subscribe(['approval.opened', 'workspace.changed']);
    const fork = await call(alice, 'branch.fork', { workspace: main.id, copies: 1, names: ['roles-audit'] });
    const child = await track((fork.result as { children: Workspace[] }).children[0]!);
    made.push(child.id);
    off();
    expect(events.some((e) => e.by?.uid === alice.uid && e.by.role === 'agent')).toBe(true);

    const log = await person.request('audit.list', { limit: 500 });
    const forked = log.filter((e) => e.action === 'branch.fork' && e.actor?.uid === alice.uid);
    expect(forked.at(-1)).toMatchObject({ outcome: 'ok', target: main.id, actor: { role: 'agent', user: alice.name, pid: fork.identity!.pid } });
    const refused = log.find((e) => e.action === 'branch.promote' && e.outcome === 'error' && e.actor?.uid === alice.uid);
    expect(refused?.detail).toMatch(/ask a person/);
    const approved = log.find((e) => e.action === 'approval.approve' && e.actor?.role === 'person');
    expect(approved?.actor).toMatchObject({ uid: 0, user: 'root' });
    // The promotion itself is recorded in the name of the agent that asked, with who approved it.
    expect(log.find((e) => e.action === 'branch.promote' && e.outcome === 'ok' && e.actor?.uid === alice.uid)?.detail).toMatch(
      /^approved by person root \(uid 0\)/,
    );
    const cli = await grove(alice, '--json', 'audit', main.id, '--limit', '5');
    expect((JSON.parse(cli.stdout) as unknown[]).length).toBe(5);
  });
});
