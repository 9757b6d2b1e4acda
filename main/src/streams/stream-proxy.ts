// Fronts a branch's Selkies stream (a Unix socket the helper serves to root
// and the grove group, docs/stream.md): each request and WebSocket upgrade
// under /stream/ID/ goes to that socket with the prefix taken off. The
// caller has checked who asks first; this only relays. The stream's own
// replies pass unchanged (its client is relative to the page's path), but
// for the headers that decide who may frame it, which are the server's.
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';

/** /stream/ID/…: the branch's id, and the path at the stream's own root. */
export const STREAM_PATH_PATTERN = /^\/stream\/([a-z0-9]{1,32})(\/.*)$/;

/** Request headers a browser sends that the stream has no business seeing (the app's own credentials). */
const DROPPED_REQUEST_HEADERS = ['cookie', 'authorization'];

export function proxyStreamRequest(
  req: http.IncomingMessage,
  res: http.ServerResponse,
  socketPath: string,
  upstreamPath: string,
  responseHeaders: Record<string, string>,
): void {
  // A connection of its own, closed with the reply: the helper keeps a branch's streamer while connections are open (stream/branch-streams.ts).
  const upstream = http.request({ socketPath, agent: false, path: upstreamPath, method: req.method, headers: forwardedHeaders(req) }, (reply) => {
    const headers = { ...reply.headers };
    for (const name of Object.keys(responseHeaders)) delete headers[name];
    delete headers['set-cookie'];
    res.writeHead(reply.statusCode ?? 502, { ...headers, ...responseHeaders });
    reply.pipe(res);
  });
  upstream.on('error', () => {
    if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end('Grove: the stream is not running.\n');
    else res.destroy();
  });
  req.pipe(upstream);
}

/** Relays a WebSocket upgrade, its handshake included, to the stream; after it, bytes both ways. */
export function proxyStreamUpgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer, socketPath: string, upstreamPath: string): void {
  const upstream = net.connect(socketPath);
  const close = () => {
    upstream.destroy();
    socket.destroy();
  };
  upstream.on('error', () => {
    if (socket.writable) socket.end('HTTP/1.1 502 Bad Gateway\r\nconnection: close\r\n\r\n');
    close();
  });
  socket.on('error', close);
  upstream.on('connect', () => {
    const lines = [`${req.method ?? 'GET'} ${upstreamPath} HTTP/1.1`];
    for (const [name, value] of Object.entries(forwardedHeaders(req))) {
      for (const v of Array.isArray(value) ? value : [value]) if (v !== undefined) lines.push(`${name}: ${v}`);
    }
    upstream.write(`${lines.join('\r\n')}\r\n\r\n`);
    if (head.length > 0) upstream.write(head);
    upstream.pipe(socket);
    socket.pipe(upstream);
  });
  upstream.on('close', close);
  socket.on('close', close);
}

function forwardedHeaders(req: http.IncomingMessage): http.IncomingHttpHeaders {
  const headers = { ...req.headers };
  for (const name of DROPPED_REQUEST_HEADERS) delete headers[name];
  return headers;
}
