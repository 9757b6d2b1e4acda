// Web mode: the controller served over HTTP + WebSocket. Serves the built
// renderer, the typed API (/api), each branch's desktop (/vnc/ID, bridged to
// its desktop socket, which the app opens as the person it runs as) and
// terminals (through the API), and over HTTPS each branch's Selkies stream
// (/stream/ID/, fronting its stream socket: docs/stream.md). Every request and
// upgrade needs the per-launch secret: `?token=` once (it becomes an HttpOnly,
// SameSite=Strict cookie), then the cookie; a `?token=` is taken only for
// tokenTtlMs after the launch, if that is set. Loopback only, unless a TLS
// certificate is given.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import net from 'node:net';
import path from 'node:path';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { groveFile } from '../../../privileged-helper/src/protocol/grove-files.js';
import { API_PATH, RequestFrame, VNC_PATH_PATTERN, isRequestName, requests, type EventData, type EventName } from '../api/contract.js';
import { GroveError } from '../helper-client/client.js';
import { bridgeToVnc } from '../streams/vnc-bridge.js';
import { proxyStreamRequest, proxyStreamUpgrade, STREAM_PATH_PATTERN } from '../streams/stream-proxy.js';
import type { Controller, TerminalOwner } from './controller.js';

export const COOKIE = 'grove_token';
export const DEFAULT_RENDERER_DIR = groveFile('renderer/dist');

export interface WebOptions {
  host?: string;
  port?: number;
  /** PEM files; required to listen beyond loopback. */
  tls?: { cert: string; key: string };
  /** The certificate and key themselves (Grove's own, from the helper's stream.tls), in place of tls's files. */
  tlsPem?: { cert: string; key: string };
  /** How long after the launch the URL's token is taken (its cookie stays good); default: as long as the server runs. */
  tokenTtlMs?: number;
  rendererDir?: string;
  /** Fixed secret (tests); default: 32 random bytes. */
  secret?: string;
}

export interface WebServer {
  url: string;
  /** The URL with the secret, for a person to open once. */
  launchUrl: string;
  secret: string;
  close(): Promise<void>;
}

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.woff2': 'font/woff2',
};

// The renderer loads only its own files; it connects back to this origin only.
const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'none'";

export function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || (net.isIPv4(host) && host.startsWith('127.'));
}

export async function startWebServer(controller: Controller, opts: WebOptions = {}): Promise<WebServer> {
  const host = opts.host ?? '127.0.0.1';
  if (!isLoopback(host) && !opts.tls) {
    throw new GroveError(
      'E_PRECONDITION',
      `refusing to listen on ${host} without TLS: give a certificate and key (--tls-cert, --tls-key), or listen on 127.0.0.1`,
    );
  }
  const secret = opts.secret ?? randomBytes(32).toString('base64url');
  const rendererDir = opts.rendererDir ?? DEFAULT_RENDERER_DIR;
  const credentials = opts.tls ? { cert: await readFile(opts.tls.cert), key: await readFile(opts.tls.key) } : opts.tlsPem;
  const secure = Boolean(credentials);
  const tokenDeadline = opts.tokenTtlMs === undefined ? Infinity : Date.now() + opts.tokenTtlMs;

  const authorized = (req: http.IncomingMessage): boolean => {
    const cookie = parseCookies(req.headers.cookie ?? '')[COOKIE];
    const token = new URL(req.url ?? '/', 'http://x').searchParams.get('token');
    return equal(cookie, secret) || (Date.now() < tokenDeadline && equal(token, secret));
  };
  /** A running branch's stream socket for /stream/ID/…, and the path at its root; or why not, as a status. */
  const streamRoute = (rawUrl: string | undefined): { socket: string; path: string } | { status: number; why: string } | null => {
    const url = new URL(rawUrl ?? '/', 'http://x');
    const match = STREAM_PATH_PATTERN.exec(url.pathname);
    if (!match) return null;
    if (!secure) return { status: 403, why: 'streams are served over HTTPS only' };
    const socket = controller.streamSocket(match[1]!);
    if (socket === null) return { status: 404, why: 'no such running branch' };
    return { socket, path: match[2]! + url.search };
  };

  const onRequest = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    res.setHeader('x-content-type-options', 'nosniff');
    res.setHeader('referrer-policy', 'no-referrer');
    if (!authorized(req)) {
      res
        .writeHead(401, { 'content-type': 'text/plain; charset=utf-8' })
        .end('Grove: open the URL printed by `grove app --web` (it carries the launch secret).\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.searchParams.has('token')) {
      // Trade the secret in the URL for a cookie, and drop it from the address bar.
      url.searchParams.delete('token');
      res.writeHead(303, {
        'set-cookie': `${COOKIE}=${secret}; HttpOnly; SameSite=Strict; Path=/${secure ? '; Secure' : ''}`,
        location: url.pathname + url.search,
        'cache-control': 'no-store',
      });
      res.end();
      return;
    }
    const stream = streamRoute(req.url);
    if (stream && 'why' in stream) return void res.writeHead(stream.status, { 'content-type': 'text/plain; charset=utf-8' }).end(`Grove: ${stream.why}.\n`);
    // Only the app's own pages may frame a stream.
    if (stream)
      return proxyStreamRequest(req, res, stream.socket, stream.path, { 'content-security-policy': "frame-ancestors 'self'", 'x-frame-options': 'SAMEORIGIN' });
    if (req.method !== 'GET' && req.method !== 'HEAD') return void res.writeHead(405).end();
    await serveStatic(rendererDir, url.pathname, res);
  };

  const server = credentials ? https.createServer(credentials, (q, s) => void onRequest(q, s)) : http.createServer((q, s) => void onRequest(q, s));

  const wss = new WebSocketServer({ noServer: true, maxPayload: 4 << 20 });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const url = new URL(req.url ?? '/', 'http://x');
    // Browsers always send Origin on a WebSocket upgrade: only this server's own page may connect.
    const sameOrigin = isSameOrigin(req.headers.origin, req.headers.host);
    if (!authorized(req) || !sameOrigin) {
      socket.end('HTTP/1.1 401 Unauthorized\r\nconnection: close\r\n\r\n');
      return;
    }
    if (url.pathname === API_PATH) {
      wss.handleUpgrade(req, socket, head, (ws) => serveApi(controller, ws));
      return;
    }
    const stream = streamRoute(req.url);
    if (stream && 'why' in stream) return void socket.end(`HTTP/1.1 ${stream.status} ${http.STATUS_CODES[stream.status]}\r\nconnection: close\r\n\r\n`);
    if (stream) return proxyStreamUpgrade(req, socket, head, stream.socket, stream.path);
    const vnc = VNC_PATH_PATTERN.exec(url.pathname);
    if (vnc) {
      const vncSocket = controller.vncSocket(vnc[1]!);
      if (vncSocket === null) {
        socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => bridgeToVnc(ws, vncSocket));
      return;
    }
    socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, host, resolve);
  });
  const port = (server.address() as net.AddressInfo).port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  const base = `${secure ? 'https' : 'http'}://${shownHost}:${port}/`;
  return {
    url: base,
    launchUrl: `${base}?token=${secret}`,
    secret,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate();
        wss.close();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One renderer connection: validated requests in, results, state, image output and terminal output out. */
function serveApi(controller: Controller, ws: WebSocket): void {
  const sessions = new Set<string>();
  const send = <E extends EventName>(event: E, data: EventData<E>) => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ event, data }));
  };
  const owner: TerminalOwner = {
    terminal: (session) => {
      sessions.add(session);
      return {
        output: (data) => send('terminal.output', { session, data }),
        exit: (exitCode, signal) => {
          sessions.delete(session);
          send('terminal.exit', { session, exitCode, signal });
        },
      };
    },
  };
  const off = controller.onChange(() => send('state', controller.snapshot()));
  const offImages = controller.onImageOutput((e) => send('image.output', e));
  send('state', controller.snapshot());
  ws.on('message', (raw: Buffer) => {
    let id = -1;
    void (async () => {
      const frame = RequestFrame.parse(JSON.parse(raw.toString('utf8')));
      id = frame.id;
      if (!isRequestName(frame.method)) throw new GroveError('E_UNKNOWN_METHOD', `no such request: ${frame.method}`);
      const parsed = (requests[frame.method].params as z.ZodType).safeParse(frame.params ?? {});
      if (!parsed.success) throw new GroveError('E_INVALID_PARAMS', z.prettifyError(parsed.error));
      if (frame.method.startsWith('terminal.') && frame.method !== 'terminal.open') {
        const session = (parsed.data as { session: string }).session;
        if (!sessions.has(session)) throw new GroveError('E_NOT_FOUND', 'that terminal is closed');
      }
      const result = await controller.handle(frame.method, parsed.data as never, owner);
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ id, result }));
    })().catch((err: unknown) => {
      const e = err instanceof GroveError ? err : new GroveError('E_INVALID_REQUEST', (err as Error).message);
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify({ id, error: { code: e.code, message: e.message } }));
    });
  });
  ws.on('close', () => {
    off();
    offImages();
    // The page is gone: no one is left to tell that a terminal had ended already, or could not be closed.
    for (const session of sessions) void controller.handle('terminal.close', { session }, owner).catch(() => undefined);
  });
}

async function serveStatic(root: string, pathname: string, res: http.ServerResponse): Promise<void> {
  let rel: string;
  try {
    rel = decodeURIComponent(pathname);
  } catch {
    return void res.writeHead(400).end();
  }
  let file = path.join(root, path.normalize(rel));
  if (!file.startsWith(root)) return void res.writeHead(403).end();
  const st = await stat(file).catch(() => null); // no such file: the page's own route, served by index.html
  if (!st || st.isDirectory()) file = path.join(root, 'index.html');
  try {
    const body = await readFile(file);
    const isIndex = file.endsWith('index.html');
    res.writeHead(200, {
      'content-type': MIME[path.extname(file)] ?? 'application/octet-stream',
      'cache-control': isIndex ? 'no-store' : 'max-age=3600',
      ...(isIndex ? { 'content-security-policy': CSP } : {}),
    });
    res.end(body);
  } catch {
    res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8' }).end(`Grove: the app is not built (no ${root}); run \`npm run build:renderer\`.\n`);
  }
}

function isSameOrigin(origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined) return true; // not a browser (the secret is still required)
  try {
    return new URL(origin).host === host;
  } catch {
    return false; // "null" and other opaque origins
  }
}

function parseCookies(header: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of header.split(';')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

function equal(a: string | null | undefined, b: string): boolean {
  if (!a) return false;
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
