// Who sees a branch's desktop. A person does: noVNC, the real client, running
// in Debian's Chromium, connects through main/'s WebSocket bridge to the
// branch's desktop socket and receives a frame in which Chromium's window
// shows the start page; a member of the grove group who is not root gets a
// frame through the socket too. Nobody else does: a local user in neither
// group, and an agent (it has the computer-use API instead), is refused at
// the socket (EACCES) and at the branch's own address (the host firewall),
// and nothing the helper listens on speaks RFB to them.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execa } from 'execa';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import { hostTableName } from '../../src/host/host-firewall.js';
import { firstFrame, type RfbEndpoint } from '../../src/desktop/rfb-probe.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { VNC_PORT } from '../../src/workspaces/runtime.js';
import { agentUserNames, CALL, runAs, testUser, VNC_REACH, withScope, type TestUser } from './agent-users.js';
import { REPO } from './helper-process.js';
import { banner, connect, createWorkspace, hostPort, instance, vncSocket } from './support.js';
import { launchBrowser, watchDesktop } from './vnc-viewer.js';

/** What `user` gets at each endpoint (see fixtures/vnc-reach.ts), optionally with `group` as its only group. */
async function reachAs(user: TestUser, endpoints: RfbEndpoint[], group?: string): Promise<string[]> {
  const res = await runAs(user.name, VNC_REACH, [JSON.stringify(endpoints)], { group });
  expect(res.stderr, res.stdout).toBe('');
  return JSON.parse(res.stdout) as string[];
}

/** Every TCP endpoint the test's helper listens on, as `ss` sees them (not as the helper reports them). */
async function helperListeners(): Promise<{ host: string; port: number }[]> {
  const pid = readFileSync(instance().pidFile, 'utf8').trim();
  const { stdout } = await execa('ss', ['-Hltnp']);
  return stdout
    .split('\n')
    .filter((line) => line.includes(`pid=${pid},`))
    .map((line) => {
      const local = line.trim().split(/\s+/)[3]!;
      const colon = local.lastIndexOf(':');
      return { host: local.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(local.slice(colon + 1)) };
    });
}

describe('the desktop through VNC', () => {
  let client: HelperClient;
  let ws: Workspace;
  let browser: Browser;
  let outsider: TestUser;
  let agent: TestUser;

  beforeAll(async () => {
    const [a1, , none] = agentUserNames(instance().instance);
    [agent, outsider] = await Promise.all([testUser(a1!), testUser(none!)]);
    client = await connect();
    ws = await createWorkspace(client, 'desk');
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    if (ws) await client.request('workspace.delete', { workspace: ws.id });
    client.close();
  });

  it('serves it on a socket root:grove 0660 in a root:grove 0750 directory, and on no host port', async () => {
    const socket = vncSocket(ws);
    const { stdout } = await execa('stat', ['-c', '%a %U %G', socket, path.dirname(socket)]);
    expect(stdout.split('\n')).toEqual(['660 root grove', '750 root grove']);
    expect(ws.ports.map((p) => p.containerPort)).toEqual([3000]);
    expect(await banner({ path: socket })).toMatch(/^RFB 003\.00\d\n/);
  });

  it("shows Chromium's window in a frame received by noVNC", async () => {
    const { page, server, pixels } = await watchDesktop(browser, vncSocket(ws));
    try {
      expect(pixels).toBeGreaterThan(50_000);
      await page.screenshot({ path: path.join(REPO, 'test-results/desktop-through-novnc.png') });
    } finally {
      server.close();
    }
  });

  it('gives a member of the grove group who is not root a frame through the socket', async () => {
    expect(await reachAs(outsider, [{ path: vncSocket(ws) }], 'grove')).toEqual(['frame']);
  });

  it('refuses a local user in neither group at the socket and at the branch address; root passes', async () => {
    const direct = { host: ws.address, port: VNC_PORT };
    expect(await reachAs(outsider, [{ path: vncSocket(ws) }, direct])).toEqual(['EACCES', 'ECONNREFUSED']);
    // The refusal is the host firewall's, for that user only: the helper (root) still reaches the server.
    await execa('nft', ['list', 'table', 'inet', hostTableName(instance().instance)]);
    await expect(firstFrame(direct, { timeoutMs: 30_000 })).resolves.toMatchObject({ frameMs: expect.any(Number) });
  });

  it('has nothing listening that speaks RFB to a local user in neither group', async () => {
    const listeners = await helperListeners();
    expect(listeners).toContainEqual({ host: '127.0.0.1', port: hostPort(ws, 3000) }); // it sees the dev port's forwarder
    const outcomes = await reachAs(outsider, listeners);
    expect(outcomes.filter((o) => o === 'frame' || o.startsWith('said: RFB'))).toEqual([]);
  });

  it('lets an agent see the desktop through the computer-use API only', async () => {
    expect(await reachAs(agent, [{ path: vncSocket(ws) }, { host: ws.address, port: VNC_PORT }])).toEqual(['EACCES', 'ECONNREFUSED']);
    const res = await withScope(client, agent.name, [ws.id], () =>
      runAs(agent.name, CALL, [instance().agentSocketPath, 'desktop.screenshot', JSON.stringify({ workspace: ws.id, scale: 0.25 })]),
    );
    const out = JSON.parse(res.stdout) as { identity?: { role: string }; result?: { width: number; screen: { width: number }; png: string }; error?: unknown };
    expect(out.error).toBeUndefined();
    expect(out.identity?.role).toBe('agent');
    const shot = out.result!;
    expect(Math.abs(shot.width - shot.screen.width / 4)).toBeLessThanOrEqual(1);
    expect(Buffer.from(shot.png, 'base64').subarray(1, 4).toString('latin1')).toBe('PNG');
  });
});
