// Selkies's own web client in Debian's Chromium, watching a branch's stream
// through main/'s stream proxy (main/src/streams/stream-proxy.ts) on a plain
// loopback server: what reaches the page, counted in the page's pixels.
import http from 'node:http';
import type { Browser, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { proxyStreamRequest, proxyStreamUpgrade, STREAM_PATH_PATTERN } from '../../../main/src/streams/stream-proxy.js';

export type Rgb = readonly [number, number, number];
/** JPEG frames shift colours a little. */
const TOLERANCE = 16;

/** Serves /stream/ID/… from `sockets[ID]`. */
export async function startStreamServer(sockets: Record<string, string>): Promise<http.Server> {
  const route = (url: string | undefined) => {
    const match = STREAM_PATH_PATTERN.exec(new URL(url ?? '/', 'http://x').pathname);
    const socket = match ? sockets[match[1]!] : undefined;
    return match && socket ? { socket, path: match[2]! + (new URL(url ?? '/', 'http://x').search ?? '') } : null;
  };
  const server = http.createServer((req, res) => {
    const to = route(req.url);
    if (!to) return void res.writeHead(404).end();
    proxyStreamRequest(req, res, to.socket, to.path, {});
  });
  server.on('upgrade', (req: http.IncomingMessage, socket, head: Buffer) => {
    const to = route(req.url);
    if (!to) return void socket.end('HTTP/1.1 404 Not Found\r\n\r\n');
    proxyStreamUpgrade(req, socket, head, to.socket, to.path);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return server;
}

/** How many pixels of the page's screenshot are within TOLERANCE of `rgb`. */
export async function pixelsOf(page: Page, rgb: Rgb): Promise<number> {
  const png = PNG.sync.read(await page.screenshot());
  let n = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    if (rgb.every((c, k) => Math.abs(png.data[i + k]! - c) <= TOLERANCE)) n++;
  }
  return n;
}

/** Waits until more than `min` pixels of `rgb` show on a page already open, without reloading it. */
export async function waitForPixels(page: Page, rgb: Rgb, min: number, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await pixelsOf(page, rgb)) <= min) {
    if (Date.now() > deadline) throw new Error(`${page.url()} showed no more than ${min} pixels of rgb(${rgb.join(',')}) within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 1000));
  }
}

/** Opens `url` and waits until more than `min` pixels of `rgb` show; returns the page. */
export async function watchStream(browser: Browser, url: string, rgb: Rgb, min: number, timeoutMs = 90_000): Promise<Page> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const deadline = Date.now() + timeoutMs;
  await page.goto(url).catch(() => undefined); // a load aborted by a veth appearing: reloaded below
  for (;;) {
    if ((await pixelsOf(page, rgb)) > min) return page;
    if (Date.now() > deadline) throw new Error(`${url} showed no more than ${min} pixels of rgb(${rgb.join(',')}) within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 1000));
    if (!(await page.evaluate(() => document.readyState === 'complete').catch(() => false))) await page.goto(url).catch(() => undefined);
  }
}
