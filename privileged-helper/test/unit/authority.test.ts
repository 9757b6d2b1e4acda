import { describe, expect, it } from 'vitest';
import { agentOwner, AUTHORITY, authorize, type AuthorityLookup, type BranchFacts } from '../../src/auth/authority.js';
import type { Actor } from '../../src/protocol/identity.js';
import { methods, type MethodName } from '../../src/protocol/methods.js';

const person: Actor = { role: 'person', uid: 1000, user: 'pat', pid: 10, process: 'node', client: 'app:grove-app' };
const alice: Actor = { role: 'agent', uid: 2001, user: 'alice', pid: 20, process: 'node', client: 'cli:grove-cli' };
const bob: Actor = { role: 'agent', uid: 2002, user: 'bob', pid: 30, process: 'node', client: 'cli:grove-cli' };

const branches: Record<string, BranchFacts> = {
  main: { name: 'main', treeId: 't1', ownedByAgentUid: null },
  'alices-fork': { name: 'alices-fork', treeId: 't1', ownedByAgentUid: 2001 },
  other: { name: 'other', treeId: 't2', ownedByAgentUid: null },
};

function lookup(grants: string[] = []): AuthorityLookup {
  return {
    branch: (ref) => branches[ref] ?? null,
    grant: (tree, kind) => (grants.includes(`${tree}:${kind}`) ? { id: 'g00000001' } : null),
  };
}

const attempt = (actor: Actor, method: MethodName, workspace?: string, grants?: string[]) => () => authorize(actor, method, { workspace }, lookup(grants));

describe('authority', () => {
  it('covers every method of the protocol', () => {
    expect(Object.keys(AUTHORITY).sort()).toEqual(Object.keys(methods).sort());
  });

  it('lets persons do everything', () => {
    for (const method of Object.keys(methods) as MethodName[]) expect(attempt(person, method, 'main')()).toEqual({ grant: null });
  });

  it('lets agents read, act on desktops, exec, fork, checkpoint and roll back', () => {
    for (const m of [
      'workspace.list',
      'branch.diff',
      'egress.log',
      'audit.list',
      'approval.list',
      'desktop.screenshot',
      'desktop.type',
      'desktop.click',
      'exec.run',
      'exec.open',
      'branch.fork',
      'branch.checkpoint',
      'approval.create',
      'approval.withdraw',
    ] as const) {
      expect(attempt(alice, m, 'main')(), m).toEqual({ grant: null });
    }
  });

  it('never lets agents decide, grant, give scopes, build images, delete versions or name them', () => {
    for (const m of [
      'approval.approve',
      'approval.deny',
      'grant.set',
      'grant.revoke',
      'scope.allow',
      'scope.revoke',
      'image.build',
      'workspace.start',
      'version.delete',
      'version.label',
    ] as const) {
      expect(attempt(alice, m, 'main'), m).toThrow(expect.objectContaining({ code: 'E_FORBIDDEN' }));
    }
    expect(attempt(alice, 'approval.approve')).toThrow(/never an agent's/);
    // not even with a grant
    expect(attempt(alice, 'approval.approve', 'main', ['t1:branch.promote'])).toThrow(expect.objectContaining({ code: 'E_FORBIDDEN' }));
    // Picking a race's winner is a person's decision, even on its own fork and with grants to promote and discard.
    expect(attempt(alice, 'branch.pick', 'alices-fork', ['t1:branch.promote', 't1:branch.discard'])).toThrow(/picking a race's winner .* a person's decision/);
  });

  it('makes agents ask for promote, egress changes, and discarding or stopping branches they did not fork', () => {
    expect(attempt(alice, 'branch.promote', 'alices-fork')).toThrow(
      /ask a person \(approval.create, kind branch.promote; on the command line: grove promote alices-fork --reason/,
    );
    expect(attempt(alice, 'egress.set', 'main')).toThrow(/change a branch's outside access/);
    expect(attempt(alice, 'workspace.delete', 'main')).toThrow(/discard a branch it does not own/);
    expect(attempt(alice, 'branch.rollback', 'main')).toThrow(/roll back a branch it does not own.*grove rollback main --to VERSION --reason/);
    expect(attempt(alice, 'workspace.stop', 'main')).toThrow(/kind workspace.stop/);
  });

  it('lets an agent discard and stop what it forked itself, but not what another agent forked', () => {
    expect(attempt(alice, 'workspace.delete', 'alices-fork')()).toEqual({ grant: null });
    expect(attempt(alice, 'workspace.stop', 'alices-fork')()).toEqual({ grant: null });
    expect(attempt(alice, 'branch.rollback', 'alices-fork')()).toEqual({ grant: null });
    expect(attempt(bob, 'workspace.delete', 'alices-fork')).toThrow(expect.objectContaining({ code: 'E_FORBIDDEN' }));
  });

  it('gives a branch to the person who acted on it: the agent that made it owns it only until then', () => {
    const agent = { role: 'agent' as const, uid: 2001, user: 'alice' };
    const pat = { role: 'person' as const, uid: 1000, user: 'pat' };
    expect(agentOwner({ madeBy: agent, claimedBy: null })).toBe(2001);
    expect(agentOwner({ madeBy: agent, claimedBy: pat })).toBeNull();
    expect(agentOwner({ madeBy: pat, claimedBy: null })).toBeNull();
    expect(agentOwner({ madeBy: null, claimedBy: null })).toBeNull();
  });

  it('lets a grant stand in for a person, for its workspace and kind only', () => {
    expect(attempt(alice, 'workspace.delete', 'main', ['t1:branch.discard'])()).toEqual({ grant: 'g00000001' });
    expect(attempt(alice, 'workspace.delete', 'other', ['t1:branch.discard'])).toThrow(expect.objectContaining({ code: 'E_FORBIDDEN' }));
    expect(attempt(alice, 'branch.promote', 'main', ['t1:branch.discard'])).toThrow(expect.objectContaining({ code: 'E_FORBIDDEN' }));
  });

  it('leaves a missing branch to the handler (which says it does not exist)', () => {
    expect(attempt(alice, 'branch.promote', 'nope')()).toEqual({ grant: null });
  });
});
