// One real helper for the whole system-test run, with the desktop image built
// (or received from the image cache). Teardown purges everything the instance
// made, also when tests failed, and then checks that nothing is left.
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { HelperClient } from '../../../main/src/helper-client/client.js';
import { criuErrors } from '../../src/host/criu/criu-errors.js';
import { leftovers } from './leftovers.js';
import { ensureAgentUsers, removeAgentUsers } from './agent-users.js';
import { purge, startHelper, tail, tailIfDead, testInstance, type TestInstance } from './helper-process.js';

let instance: TestInstance | null = null;

export async function setup(project: TestProject): Promise<void> {
  if (process.getuid?.() !== 0) throw new Error('system tests run as root (they use btrfs, netns and crun for real)');
  instance = testInstance(`t${randomBytes(2).toString('hex').slice(0, 3)}`);
  project.provide('groveInstance', instance.instance);
  await ensureAgentUsers(instance.instance);
  await startHelper(instance);
  const client = await HelperClient.connect({ socketPath: instance.socketPath, name: 'global-setup', kind: 'test' });
  try {
    await client.subscribe(['progress']);
    client.on('progress', (p) => process.stderr.write(`[image ${p.stage}] ${p.message}\n`));
    await client.request('image.build', { name: 'desktop' });
  } catch (err) {
    throw new Error(`could not prepare the desktop image: ${(err as Error).message}\n${tail(instance.logFile)}`, { cause: err });
  } finally {
    client.close();
  }
}

export async function teardown(): Promise<void> {
  if (!instance) return;
  await removeAgentUsers(instance.instance);
  const failures = criuFailures(instance);
  if (failures) process.stderr.write(`CRIU runs that failed during the tests (some on purpose), with their errors:\n${failures}\n`);
  const deadHelper = tailIfDead(instance);
  if (deadHelper) process.stderr.write(`The helper was no longer running at the end of the tests; the end of its log:\n${deadHelper}\n`);
  await purge(instance);
  const left = await leftovers(instance);
  rmSync(instance.pidFile, { force: true });
  rmSync(instance.pidNsFile, { force: true });
  if (left.length > 0) throw new Error(`system tests left host objects behind: ${left.join(', ')}`);
  rmSync(instance.logFile, { force: true });
}

/**
 * The errors of each CRIU run that failed during the tests. Their logs go
 * with the instance's state, and a CI run keeps only what it printed.
 */
function criuFailures(t: TestInstance): string {
  const dir = path.join(t.stateDir, 'logs');
  const logs = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.startsWith('criu-'))
        .sort()
    : [];
  const errorsOf = (log: string) => criuErrors(readFileSync(path.join(dir, log), 'utf8')).slice(0, 8);
  return logs.map((log) => [`${log}:`, ...errorsOf(log).map((l) => `  ${l.trim()}`)].join('\n')).join('\n');
}
