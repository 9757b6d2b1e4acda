// Starts a helper instance of its own (own state, pool, run directory and
// subnet), prepares the desktop image (received from the cache in seconds
// once built) and the controller in web mode against it. The returned
// teardown stops the controller and purges the instance, pass or fail; a
// failing set-up purges before it rethrows.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { HelperClient } from '../main/src/helper-client/client.js';
import { purge, REPO, startHelper, tail, testInstance } from '../privileged-helper/test/system/helper-process.js';
import { removeOutsideWorld, type OutsidePlan } from '../privileged-helper/test/system/outside-world.js';
import { agentUserNames, ensureAgentUsers, removeAgentUsers } from '../privileged-helper/test/system/agent-users.js';

export default async function globalSetup(): Promise<() => Promise<void>> {
  if (process.getuid?.() !== 0) throw new Error('the e2e tests run as root (they start a real helper)');
  // GROVE_E2E_HELPER=SOCKET runs against a helper that is already up (e.g. a
  // developer's), and removes only the e2e* branches it made.
  const external = process.env.GROVE_E2E_HELPER;
  if (external) return startAgainst(external);
  const instance = testInstance(`e${randomBytes(2).toString('hex').slice(0, 3)}`);
  // Apart from the system tests' 10.215 and the dev helper's; GROVE_TEST_SUBNET when several runs share the host.
  instance.env.GROVE_SUBNET = process.env.GROVE_TEST_SUBNET ?? '10.219.0.0/16';
  // The approvals test's "outside world" (egress.spec.ts): a netns of its own on
  // 10.218.0.4/30, apart from the system egress test's 10.218.0.0/30, that the
  // gate knows as outside.test. Held requests wait long enough for a person.
  const outside: OutsidePlan = { ns: `grove-${instance.instance}-outside`, veth: `eo${instance.instance}`, hostSide: '10.218.0.5', address: '10.218.0.6' };
  instance.env.GROVE_GATE_HOSTS = `outside.test=${outside.address}`;
  instance.env.GROVE_GATE_TIMEOUT_MS = '90000';
  process.env.GROVE_E2E_OUTSIDE = JSON.stringify(outside);
  // agent.spec.ts: a real member of grove-agent, and the instance's agent socket.
  process.env.GROVE_E2E_AGENT = JSON.stringify({ user: agentUserNames(instance.instance)[0], socket: instance.agentSocketPath });
  let controller: ChildProcess | null = null;
  const teardown = async () => {
    if (controller?.pid && controller.exitCode === null) {
      controller.kill('SIGTERM');
      await new Promise((r) => controller!.once('exit', r));
    }
    await removeOutsideWorld(outside); // backstop for egress.spec.ts's own clean-up
    await removeAgentUsers(instance.instance);
    await purge(instance);
    rmSync(instance.pidFile, { force: true });
    rmSync(instance.pidNsFile, { force: true });
    rmSync(instance.logFile, { force: true });
  };
  try {
    await ensureAgentUsers(instance.instance);
    await startHelper(instance);
    const client = await HelperClient.connect({ socketPath: instance.socketPath, name: 'e2e-setup', kind: 'test' });
    try {
      await client.subscribe(['progress']);
      client.on('progress', (p) => process.stderr.write(`[image ${p.stage}] ${p.message}\n`));
      await client.request('image.build', { name: 'desktop' });
    } finally {
      client.close();
    }
    controller = await startController(instance.socketPath);
    return teardown;
  } catch (err) {
    const log = tail(instance.logFile);
    await teardown().catch(() => undefined);
    throw new Error(`e2e set-up failed: ${(err as Error).message}\n${log}`, { cause: err });
  }
}

/**
 * `grove app --web --stream vnc` (the compiled CLI, as a person runs it)
 * against the socket; its first stdout line is the URL with the secret. The
 * specs check desktops in noVNC's canvas; stream.spec.ts runs the app as it
 * runs by default, framing Selkies streams over HTTPS.
 */
async function startController(socketPath: string): Promise<ChildProcess> {
  const child = spawn(path.join(REPO, 'main/bin/grove'), ['--socket', socketPath, 'app', '--web', '--stream', 'vnc'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      const lines = createInterface({ input: child.stdout! });
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the controller exited (${code}) before printing its URL`)));
      setTimeout(() => reject(new Error('the controller printed no URL within 60 s')), 60_000);
    });
    process.env.GROVE_E2E_URL = url;
    process.env.GROVE_E2E_SOCKET = socketPath;
    return child;
  } catch (err) {
    child.kill('SIGTERM');
    throw err;
  }
}

const E2E_NAME = /^e2e(-[0-9]+|-gate|-own|-stream)*$/;

async function startAgainst(socketPath: string): Promise<() => Promise<void>> {
  const client = await HelperClient.connect({ socketPath, name: 'e2e-setup', kind: 'test' });
  const mine = (await client.request('workspace.list', {})).filter((w) => E2E_NAME.test(w.name));
  client.close();
  if (mine.length > 0) throw new Error(`the helper at ${socketPath} already has e2e branches (${mine.map((w) => w.name).join(', ')}); remove them first`);
  const controller = await startController(socketPath);
  return async () => {
    controller.kill('SIGTERM');
    const c = await HelperClient.connect({ socketPath, name: 'e2e-teardown', kind: 'test' });
    try {
      const made = (await c.request('workspace.list', {})).filter((w) => E2E_NAME.test(w.name));
      const trees = new Set(made.map((w) => w.tree));
      for (const w of made.filter((x) => !x.main)) await c.request('workspace.delete', { workspace: w.id });
      for (const w of made.filter((x) => x.main)) await c.request('workspace.delete', { workspace: w.id });
      for (const v of await c.request('version.list', {})) if (trees.has(v.tree)) await c.request('version.delete', { version: v.id });
    } finally {
      c.close();
    }
  };
}
