// The gate's network side: an HTTP forward proxy and CONNECT tunnel for each
// running branch, listening on the host end of the branch's veth (port 3128).
// It runs in its own unprivileged process (gate-process.ts): everything a
// branch sends is parsed here, never in the root helper. The branch's firewall
// lets out nothing else, so every outbound connection of a branch passes here,
// attributed to the branch whose listener received it. Whether it may pass is
// the helper's answer (`admit`); this side only resolves names once allowed,
// refuses Grove's and the host's own addresses, and moves the bytes.
import dns from 'node:dns/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import type { Duplex } from 'node:stream';
import { formatRule } from '../protocol/egress-rules.js';
import type { EgressVerdict } from '../protocol/entities.js';
import type { Admission, GateBranch, ProxyTarget } from './gate-protocol.js';
import { forbiddenReason, parseCidr, parseConnectTarget, parseProxyUrl, type Cidr } from './policy.js';
import { GATE_PORT } from '../host/branch-network.js';
import { canonicalAddress, parseAddress } from './address.js';

export interface GateProxyOptions {
  /** Grove's branch subnet (e.g. 10.213.0.0/16): never a destination. */
  subnet: string;
  /** Names resolved without DNS (tests: GROVE_GATE_HOSTS). */
  staticHosts: Map<string, string>;
  /** Asks the helper whether a request may pass; `gone` aborts when the client hangs up. */
  admit(branchId: string, target: ProxyTarget, method: string, gone: AbortSignal): Promise<Admission>;
  /** Tells the helper what happened to an admitted request that did not get through. */
  outcome(branchId: string, target: ProxyTarget, method: string, verdict: 'denied' | 'failed', detail: string): void;
  log(msg: string): void;
}

/** Connections to the gate one branch may hold open at once (each costs the gate's process descriptors and memory). */
export const MAX_CONNECTIONS_PER_BRANCH = 256;

interface Listener {
  branch: GateBranch;
  server: http.Server;
  sockets: Set<Duplex>;
}

export class GateProxy {
  private readonly listeners = new Map<string, Listener>();

  constructor(private readonly o: GateProxyOptions) {}

  /** Starts the branch's listener (idempotent); the branch's veth must exist. */
  async open(branch: GateBranch): Promise<void> {
    const current = this.listeners.get(branch.id);
    if (current && current.branch.hostAddress === branch.hostAddress && current.server.listening) return;
    if (current) await this.close(branch.id);
    const sockets = new Set<Duplex>();
    const server = http.createServer({ requestTimeout: 0, headersTimeout: 30_000 });
    this.listeners.set(branch.id, { branch, server, sockets });
    let refusedSaidAt = 0;
    server.on('connection', (s: net.Socket) => {
      if (s.remoteAddress !== branch.containerAddress) return void s.destroy(); // only the branch itself is served
      if (sockets.size >= MAX_CONNECTIONS_PER_BRANCH) {
        s.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        s.destroySoon();
        if (Date.now() - refusedSaidAt > 60_000) {
          refusedSaidAt = Date.now();
          this.o.log(`egress gate of ${branch.name}: refusing connections: ${sockets.size} open (at most ${MAX_CONNECTIONS_PER_BRANCH} a branch)`);
        }
        return;
      }
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    server.on('request', (req, res) => void this.onRequest(branch, req, res));
    server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void this.onConnect(branch, req, socket, head));
    server.on('clientError', (_err, socket: Duplex) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
    server.on('error', (err) => this.o.log(`egress gate of ${branch.name}: ${err.message}`));
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen({ host: branch.hostAddress, port: GATE_PORT, exclusive: true }, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      this.listeners.delete(branch.id);
      throw new Error(`listening on ${branch.hostAddress}:${GATE_PORT}: ${(err as Error).message}`, { cause: err });
    }
  }

  /** Stops the branch's listener and ends its connections (idempotent). */
  async close(id: string): Promise<void> {
    const listener = this.listeners.get(id);
    this.listeners.delete(id);
    if (!listener) return;
    for (const s of listener.sockets) s.destroy();
    await new Promise<void>((resolve) => listener.server.close(() => resolve()));
  }

  // --- plain HTTP -----------------------------------------------------------

  private async onRequest(branch: GateBranch, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const admitted = await this.admit(
      branch,
      () => parseProxyUrl(req.url ?? ''),
      method,
      res,
      (...a) => sendHttp(res, ...a),
    );
    if (!admitted) return;
    const { target, ip } = admitted;
    const upstream = http.request({
      host: ip,
      port: target.port,
      method,
      path: target.path ?? '/',
      headers: forwardHeaders(req.headers),
      setHost: false,
      agent: false,
    });
    upstream.on('response', (up) => {
      res.writeHead(up.statusCode ?? 502, up.statusMessage, forwardHeaders(up.headers));
      up.pipe(res);
    });
    upstream.on('error', (err) => {
      this.o.outcome(branch.id, target, method, 'failed', err.message);
      if (!res.headersSent) sendHttp(res, 502, `Grove gate: ${formatRule(target)} failed: ${err.message}\n`, 'failed');
      else res.destroy();
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  }

  // --- CONNECT tunnels --------------------------------------------------------

  private async onConnect(branch: GateBranch, req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const admitted = await this.admit(
      branch,
      () => parseConnectTarget(req.url ?? ''),
      'CONNECT',
      socket,
      (...a) => sendRaw(socket, ...a),
    );
    if (!admitted) return;
    const { target, ip } = admitted;
    const upstream = net.connect({ host: ip, port: target.port });
    upstream.once('connect', () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', (err) => {
      if (upstream.connecting || !upstream.remoteAddress) {
        this.o.outcome(branch.id, target, 'CONNECT', 'failed', err.message);
        sendRaw(socket, 502, `Grove gate: ${formatRule(target)} failed: ${err.message}\n`, 'failed');
      } else socket.destroy();
    });
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  }

  // --- admission ------------------------------------------------------------------

  /**
   * Parses what the client asks for, waits for the helper's answer (a policy
   * or a person), resolves the name only once it may pass and refuses Grove's
   * and the host's own addresses. Resolves with where to connect, or null when
   * the request ends here (the client was told why). A client that hangs up
   * (`client` closes) while held abandons its request.
   */
  private async admit(
    branch: GateBranch,
    parse: () => ProxyTarget,
    method: string,
    client: { on(event: 'close', listener: () => void): unknown },
    refuse: (status: number, body: string, verdict?: EgressVerdict) => void,
  ): Promise<{ target: ProxyTarget; ip: string } | null> {
    let target: ProxyTarget;
    try {
      target = parse();
    } catch (err) {
      refuse(400, `Grove gate: ${(err as Error).message}\n`);
      return null;
    }
    const forbidden = (ip: string): boolean => {
      const why = forbiddenReason(ip, groveRanges(this.o.subnet));
      if (!why) return false;
      const detail = ip === target.host ? why : `${target.host} resolves to ${ip}: ${why}`;
      this.o.outcome(branch.id, target, method, 'denied', detail);
      refuse(403, `Grove gate: ${method} ${formatRule(target)} refused: ${detail}\n`, 'denied');
      return true;
    };
    // No allow list and no person can open these: refused before anyone is asked (any literal form, address.ts).
    if (parseAddress(target.host) && forbidden(target.host)) return null;
    const gone = new AbortController();
    client.on('close', () => gone.abort());
    const admission = await this.o.admit(branch.id, target, method, gone.signal);
    if (!admission.ok) {
      if (!('abandoned' in admission)) refuse(admission.status, admission.message, admission.verdict);
      return null;
    }
    let ip: string;
    try {
      ip = await this.resolve(target.host);
    } catch (err) {
      this.o.outcome(branch.id, target, method, 'failed', `cannot resolve: ${(err as Error).message}`);
      refuse(502, `Grove gate: cannot resolve ${target.host}\n`, 'failed');
      return null;
    }
    return forbidden(ip) ? null : { target, ip };
  }

  private async resolve(host: string): Promise<string> {
    const literal = canonicalAddress(host); // what was judged is what is connected to
    if (literal) return literal;
    const fixed = this.o.staticHosts.get(host);
    if (fixed) return fixed;
    return (await dns.lookup(host)).address;
  }
}

/** Grove's subnet, every branch veth's /30 (of any Grove instance), and every address of this host. */
export function groveRanges(subnet: string): Cidr[] {
  const ranges = [parseCidr(subnet)];
  for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
    for (const a of addrs ?? []) {
      ranges.push(parseCidr(`${a.address.replace(/%.*$/, '')}/${a.family === 'IPv4' ? 32 : 128}`));
      if (name.startsWith('gv') && a.cidr) ranges.push(parseCidr(a.cidr));
    }
  }
  return ranges;
}

const HOP_BY_HOP = new Set([
  'connection',
  'proxy-connection',
  'keep-alive',
  'proxy-authorization',
  'proxy-authenticate',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Headers without the hop-by-hop ones (and without those the Connection header names). */
export function forwardHeaders(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(headers.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !HOP_BY_HOP.has(k) && !named.has(k)) out[k] = v;
  return out;
}

function sendHttp(res: http.ServerResponse, status: number, body: string, verdict?: EgressVerdict): void {
  if (res.headersSent) return void res.destroy();
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body), connection: 'close' };
  if (verdict) headers['x-grove-egress'] = verdict;
  res.writeHead(status, headers);
  res.end(body);
}

/**
 * Refuses a CONNECT on its raw socket. Nothing reads that socket any more, so
 * what the client sent after its request head, or sends now, is read and
 * dropped: bytes left unread would hide the client's end, and the socket
 * would stay open (and count against the branch's connections) for good.
 */
function sendRaw(socket: Duplex, status: number, body: string, verdict?: EgressVerdict): void {
  if (!socket.writable) return void socket.destroy();
  const reason = http.STATUS_CODES[status] ?? 'Error';
  const extra = verdict ? `X-Grove-Egress: ${verdict}\r\n` : '';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
  socket.resume();
}
