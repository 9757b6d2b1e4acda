// A person can see the desktop: noVNC, the real client, running in Debian's
// Chromium, connects through a WebSocket bridge to the workspace's mapped host
// VNC port and receives a frame in which Chromium's window shows the start page.
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { REPO } from './helper-process.js';
import { banner, connect, createWorkspace, hostPort } from './support.js';
import { launchBrowser, watchDesktop } from './vnc-viewer.js';

describe('the desktop through VNC', () => {
  let client: HelperClient;
  let ws: Workspace;
  let browser: Browser;

  beforeAll(async () => {
    client = await connect();
    ws = await createWorkspace(client, 'desk');
    browser = await launchBrowser();
  });

  afterAll(async () => {
    await browser?.close();
    if (ws) await client.request('workspace.delete', { workspace: ws.id });
    client.close();
  });

  it('speaks RFB on the mapped host port', async () => {
    expect(await banner(hostPort(ws, 5900))).toMatch(/^RFB 003\.00\d\n/);
  });

  it("shows Chromium's window in a frame received by noVNC", async () => {
    const { page, server, pixels } = await watchDesktop(browser, hostPort(ws, 5900));
    try {
      expect(pixels).toBeGreaterThan(50_000);
      await page.screenshot({ path: path.join(REPO, 'test-results/desktop-through-novnc.png') });
    } finally {
      server.close();
    }
  });
});
