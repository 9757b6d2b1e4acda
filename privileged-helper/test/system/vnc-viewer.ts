/// <reference lib="dom" />
// A real VNC client for the tests: noVNC in Debian's Chromium, connected
// through main/'s WebSocket bridge to a workspace's desktop socket.
import http from 'node:http';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { WebSocketServer } from 'ws';
import { bridgeToVnc } from '../../../main/src/streams/vnc-bridge.js';
import { REPO } from './helper-process.js';

const NOVNC = path.join(REPO, 'node_modules/@novnc/novnc');
export const START_PAGE_RGB = [13, 122, 95]; // privileged-helper/image/desktop/start.html

const viewerPage = (wsUrl: string) => `<!doctype html><html><body style="margin:0">
<div id="screen" style="width:1280px;height:800px"></div>
<script type="module">
  import RFB from '/novnc/core/rfb.js';
  window.rfb = new RFB(document.getElementById('screen'), ${JSON.stringify(wsUrl)}, { shared: true });
  window.rfb.addEventListener('connect', () => (window.vncConnected = true));
</script></body></html>`;

/** Serves the viewer page and noVNC's modules, and bridges /vnc to the desktop socket. */
export async function startViewerServer(vncSocket: string): Promise<http.Server> {
  const server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (url.startsWith('/novnc/')) {
      const file = path.join(NOVNC, path.normalize(url.slice('/novnc/'.length)));
      if (!file.startsWith(NOVNC)) return void res.writeHead(403).end();
      readFile(file).then(
        (body) => res.writeHead(200, { 'content-type': 'text/javascript' }).end(body),
        () => res.writeHead(404).end(),
      );
      return;
    }
    const port = (server.address() as { port: number }).port;
    res.writeHead(200, { 'content-type': 'text/html' }).end(viewerPage(`ws://127.0.0.1:${port}/vnc`));
  });
  const wss = new WebSocketServer({ server, path: '/vnc' });
  wss.on('connection', (ws) => bridgeToVnc(ws, vncSocket));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

/**
 * Opens the desktop behind a desktop socket in noVNC and waits until more than
 * `minPixels` pixels of the start page's colour (Chromium's window) are drawn.
 * Resolves with the page (for screenshots) and the pixel count.
 */
export async function watchDesktop(browser: Browser, vncSocket: string, minPixels = 50_000): Promise<{ page: Page; server: http.Server; pixels: number }> {
  const server = await startViewerServer(vncSocket);
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await openViewer(page, `http://127.0.0.1:${(server.address() as { port: number }).port}/`);
  const matching = await page.waitForFunction(
    ([r, g, b, min]) => {
      const canvas = document.querySelector('#screen canvas') as HTMLCanvasElement | null;
      if (!canvas || canvas.width < 100) return false;
      const data = canvas.getContext('2d')!.getImageData(0, 0, canvas.width, canvas.height).data;
      let n = 0;
      for (let i = 0; i < data.length; i += 4) if (data[i] === r && data[i + 1] === g && data[i + 2] === b) n++;
      return n > min! ? n : false;
    },
    [...START_PAGE_RGB, minPixels],
    { timeout: 90_000, polling: 500 },
  );
  return { page, server, pixels: (await matching.jsonValue()) as number };
}

/**
 * Loads the viewer until noVNC is connected. Chromium aborts every load in
 * flight with ERR_NETWORK_CHANGED when the host's interfaces change (each
 * workspace adds a veth pair, whose addresses settle a moment later), so a
 * page whose modules failed that way is loaded again.
 */
async function openViewer(page: Page, url: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    await page.goto(url);
    const connected = await page
      .waitForFunction(() => (window as unknown as { vncConnected?: boolean }).vncConnected === true, null, { timeout: 10_000 })
      .then(
        () => true,
        () => false,
      );
    if (connected) return;
    if (Date.now() > deadline) throw new Error(`noVNC did not connect to ${url} within 60 s`);
  }
}
