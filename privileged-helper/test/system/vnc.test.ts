/// <reference lib="dom" />
// A person can see the desktop: noVNC, the real client, running in Debian's
// Chromium, connects through a WebSocket bridge to the workspace's mapped host
// VNC port and receives a frame in which Chromium's window shows the start page.
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { WebSocketServer } from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bridgeToVnc } from '../../../main/src/streams/vnc-bridge.js';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { REPO } from './helper-process.js';
import { banner, connect, createWorkspace, hostPort } from './support.js';

const NOVNC = path.join(REPO, 'node_modules/@novnc/novnc');
const START_PAGE_RGB = [13, 122, 95]; // privileged-helper/image/desktop/start.html

const viewerPage = (wsUrl: string) => `<!doctype html><html><body style="margin:0">
<div id="screen" style="width:1280px;height:800px"></div>
<script type="module">
  import RFB from '/novnc/core/rfb.js';
  window.rfb = new RFB(document.getElementById('screen'), ${JSON.stringify(wsUrl)}, { shared: true });
  window.rfb.addEventListener('connect', () => (window.vncConnected = true));
</script></body></html>`;

/** Serves the viewer page and noVNC's modules, and bridges /vnc to the VNC port. */
async function startViewerServer(vncPort: number): Promise<http.Server> {
  const server = http.createServer(async (req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/novnc/')) {
      const file = path.join(NOVNC, path.normalize(url.slice('/novnc/'.length)));
      if (!file.startsWith(NOVNC)) return void res.writeHead(403).end();
      try {
        res.writeHead(200, { 'content-type': 'text/javascript' }).end(await readFile(file));
      } catch {
        res.writeHead(404).end();
      }
      return;
    }
    const port = (server.address() as { port: number }).port;
    res.writeHead(200, { 'content-type': 'text/html' }).end(viewerPage(`ws://127.0.0.1:${port}/vnc`));
  });
  const wss = new WebSocketServer({ server, path: '/vnc' });
  wss.on('connection', (ws) => bridgeToVnc(ws, vncPort));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

describe('the desktop through VNC', () => {
  let client: HelperClient;
  let ws: Workspace;
  let browser: Browser;
  let server: http.Server;

  beforeAll(async () => {
    client = await connect();
    ws = await createWorkspace(client, 'desk');
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run', '--disable-quic'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    server?.close();
    if (ws) await client.request('workspace.delete', { workspace: ws.id });
    client.close();
  });

  it('speaks RFB on the mapped host port', async () => {
    expect(await banner(hostPort(ws, 5900))).toMatch(/^RFB 003\.00\d\n/);
  });

  it("shows Chromium's window in a frame received by noVNC", async () => {
    server = await startViewerServer(hostPort(ws, 5900));
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
    await page.waitForFunction(() => (window as unknown as { vncConnected?: boolean }).vncConnected === true, null, { timeout: 30_000 });
    // Count start-page pixels in the canvas until Chromium has drawn the page.
    const matching = await page.waitForFunction(
      ([r, g, b]) => {
        const canvas = document.querySelector('#screen canvas') as HTMLCanvasElement | null;
        if (!canvas || canvas.width < 100) return false;
        const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
        let n = 0;
        for (let i = 0; i < data.length; i += 4) if (data[i] === r && data[i + 1] === g && data[i + 2] === b) n++;
        return n > 50_000 ? n : false;
      },
      START_PAGE_RGB,
      { timeout: 90_000, polling: 500 },
    );
    expect(await matching.jsonValue()).toBeGreaterThan(50_000);
    await page.screenshot({ path: path.join(REPO, 'test-results/desktop-through-novnc.png') });
  });
});
