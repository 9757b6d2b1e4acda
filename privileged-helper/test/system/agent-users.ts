// Real unprivileged users for the tests of roles: members of grove-agent (the
// agent socket's group) and one in neither group. They are made for a test
// run (named after its instance) and removed when it ends.
import path from 'node:path';
import { execa } from 'execa';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import { REPO } from './helper-process.js';

const TSX = path.join(REPO, 'node_modules/.bin/tsx');
export const AGENT_GROUP = 'grove-agent';

export interface TestUser {
  name: string;
  uid: number;
}

export function agentUserNames(instance: string): string[] {
  return [`grove-${instance}-agent1`, `grove-${instance}-agent2`, `grove-${instance}-nobody`];
}

/** Makes the run's users (idempotent): two agents, and one in no Grove group. */
export async function ensureAgentUsers(instance: string): Promise<void> {
  const [a1, a2, none] = agentUserNames(instance);
  await execa('getent', ['group', AGENT_GROUP]).catch(() => execa('groupadd', ['--system', AGENT_GROUP]));
  for (const [user, groups] of [
    [a1, AGENT_GROUP],
    [a2, AGENT_GROUP],
    [none, ''],
  ] as const) {
    const exists = await execa('id', ['-u', user!], { reject: false });
    if (exists.exitCode === 0) continue;
    await execa('useradd', [
      '--system',
      '--user-group',
      '--no-create-home',
      '--home-dir',
      '/nonexistent',
      '--shell',
      '/usr/sbin/nologin',
      ...(groups ? ['--groups', groups] : []),
      user!,
    ]);
  }
}

export async function removeAgentUsers(instance: string): Promise<void> {
  for (const user of agentUserNames(instance)) await execa('userdel', [user], { reject: false });
}

export async function testUser(name: string): Promise<TestUser> {
  return { name, uid: Number((await execa('id', ['-u', name])).stdout) };
}

/**
 * Runs a TypeScript entry point (tsx) as `user`, with the groups /etc/group
 * gives it (or with `group` as its only group), and nothing of root's environment.
 */
export function runAs(user: string, script: string, args: string[], opts: { input?: string; group?: string } = {}) {
  const groups = opts.group ? ['--regid', opts.group, '--clear-groups'] : ['--regid', user, '--init-groups'];
  return execa('setpriv', ['--reuid', user, ...groups, TSX, script, ...args], {
    reject: false,
    env: { HOME: '/tmp', PATH: '/usr/bin:/bin' },
    extendEnv: false,
    input: opts.input,
    timeout: 300_000,
  });
}

export const GROVE_CLI = path.join(REPO, 'main/src/cli/grove.ts');
export const CALL = path.join(REPO, 'privileged-helper/test/system/fixtures/call.ts');
export const VNC_REACH = path.join(REPO, 'privileged-helper/test/system/fixtures/vnc-reach.ts');

/**
 * Puts workspaces in an agent user's scope for the length of `fn`, and takes
 * back all it has afterwards: scopes outlive a test file otherwise.
 */
export async function withScope<T>(person: HelperClient, user: string, workspaces: string[], fn: () => Promise<T>): Promise<T> {
  await person.request('scope.allow', { who: { user }, workspaces });
  try {
    return await fn();
  } finally {
    await person.request('scope.revoke', { who: { user } });
  }
}
