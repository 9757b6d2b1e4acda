// The gate: an HTTP forward proxy and CONNECT tunnel the helper runs for each
// running branch, listening on the host end of the branch's veth (port 3128).
// The branch's firewall lets out nothing else, so every outbound connection a
// branch makes passes here, is attributed to the branch whose listener received
// it, and is decided by the branch's policy: passed, refused (403), or held
// until a person approves or denies it (or it times out: 504). A held request
// waits in the approvals queue, beside every other decision a person makes.
import dns from 'node:dns/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import type { Duplex } from 'node:stream';
import { NO_PREVIEW, type ApprovalQueue } from '../approvals/approval-queue.js';
import { formatRule } from '../protocol/egress-rules.js';
import type { Approval } from '../protocol/approvals.js';
import type { EgressVerdict } from '../protocol/entities.js';
import type { EventPayload } from '../protocol/events.js';
import type { Actor } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry } from '../registry/registry.js';
import {
  decide,
  editAllowList,
  forbiddenReason,
  GATE_PORT,
  parseCidr,
  parseConnectTarget,
  parseProxyUrl,
  type Cidr,
  type ProxyTarget,
} from './policy.js';

export const DEFAULT_HOLD_TIMEOUT_MS = 120_000;
/** More held requests than this from one branch are refused outright. */
const MAX_PENDING_PER_BRANCH = 200;

/** What the gate needs to know about a branch's network. */
export interface GateBranch {
  id: string;
  name: string;
  treeId: string;
  /** The host end of the branch's veth: the gate listens here. */
  hostAddress: string;
  /** The branch's own address: the only client the listener serves. */
  containerAddress: string;
}

export interface GateOptions {
  registry: Registry;
  /** Held requests wait here for a person. */
  approvals: ApprovalQueue;
  /** Grove's branch subnet (e.g. 10.213.0.0/16): never a destination. */
  subnet: string;
  holdTimeoutMs: number;
  /** Names resolved without DNS (tests: GROVE_GATE_HOSTS). */
  staticHosts: Map<string, string>;
  publish: {
    decision(d: EventPayload<'egress.decision'>): void;
  };
  log: (msg: string) => void;
}

type Decision = { verdict: 'approved' | 'rejected' | 'timeout' | 'abandoned'; by: string };

type Outcome = { ok: true; ip: string } | { ok: false; status: number; message: string; verdict: EgressVerdict } | { ok: false; abandoned: true };

interface Listener {
  branch: GateBranch;
  server: http.Server;
  sockets: Set<Duplex>;
}

export class EgressGate {
  private readonly listeners = new Map<string, Listener>();

  constructor(private readonly o: GateOptions) {}

  /** Starts the branch's listener (idempotent); the branch's veth must exist. */
  async open(branch: GateBranch): Promise<void> {
    const current = this.listeners.get(branch.id);
    if (current && current.branch.hostAddress === branch.hostAddress && current.server.listening) return;
    if (current) await this.close(branch.id);
    const sockets = new Set<Duplex>();
    const server = http.createServer({ requestTimeout: 0, headersTimeout: 30_000 });
    const listener: Listener = { branch, server, sockets };
    server.on('connection', (s: net.Socket) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      if (s.remoteAddress !== branch.containerAddress) s.destroy(); // only the branch itself is served
    });
    server.on('request', (req, res) => void this.onRequest(branch, req, res));
    server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void this.onConnect(branch, req, socket, head));
    server.on('clientError', (_err, socket: Duplex) => {
      if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
      else socket.destroy();
    });
    server.on('error', (err) => this.o.log(`egress gate of ${branch.name}: ${err.message}`));
    this.listeners.set(branch.id, listener);
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
      throw new GroveError('E_HOST', `cannot open the egress gate of '${branch.name}' on ${branch.hostAddress}:${GATE_PORT}: ${(err as Error).message}`);
    }
  }

  /** Stops the branch's listener, ends its connections and its held requests (idempotent). */
  async close(id: string): Promise<void> {
    const listener = this.listeners.get(id);
    this.listeners.delete(id);
    this.o.approvals.abandonBranch(id, 'the branch stopped');
    if (!listener) return;
    for (const s of listener.sockets) s.destroy();
    await new Promise<void>((resolve) => listener.server.close(() => resolve()));
  }

  async closeAll(): Promise<void> {
    await Promise.all([...this.listeners.keys()].map((id) => this.close(id)));
  }

  isOpen(id: string): boolean {
    return this.listeners.get(id)?.server.listening ?? false;
  }

  /** The held connections of a branch that wait for a person. */
  private held(workspaceId: string): Approval[] {
    return this.o.approvals.openOf((a) => a.workspace === workspaceId && a.action.kind === 'egress.connection' && a.state === 'pending');
  }

  /** After a policy change: held requests it now allows pass, those it now denies are refused. */
  async reevaluate(workspaceId: string, actor: Actor): Promise<void> {
    const policy = this.o.registry.egressPolicy(workspaceId);
    for (const a of this.held(workspaceId)) {
      if (a.action.kind !== 'egress.connection') continue;
      const v = decide(policy, { host: a.action.host, port: a.action.port, method: a.action.method });
      if (v.action === 'allow') await this.o.approvals.approve(a.id, actor, { note: 'allowed by the new policy' });
      else if (v.action === 'deny') this.o.approvals.deny(a.id, actor, 'denied by the new policy');
    }
  }

  // --- plain HTTP -----------------------------------------------------------

  private async onRequest(branch: GateBranch, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const method = req.method ?? 'GET';
    const admitted = await this.admit(branch, () => parseProxyUrl(req.url ?? ''), method, res, (...a) => sendHttp(res, ...a));
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
      this.record(branch, target, method, null, 'failed', 'gate', err.message);
      if (!res.headersSent) sendHttp(res, 502, `Grove gate: ${formatRule(target)} failed: ${err.message}\n`, 'failed');
      else res.destroy();
    });
    res.on('close', () => upstream.destroy());
    req.pipe(upstream);
  }

  // --- CONNECT tunnels --------------------------------------------------------

  private async onConnect(branch: GateBranch, req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => socket.destroy());
    const admitted = await this.admit(branch, () => parseConnectTarget(req.url ?? ''), 'CONNECT', socket, (...a) => sendRaw(socket, ...a));
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
        this.record(branch, target, 'CONNECT', null, 'failed', 'gate', err.message);
        sendRaw(socket, 502, `Grove gate: ${formatRule(target)} failed: ${err.message}\n`, 'failed');
      } else socket.destroy();
    });
    socket.on('close', () => upstream.destroy());
    upstream.on('close', () => socket.destroy());
  }

  // --- the decision ---------------------------------------------------------------

  /** Decides one request; resolves the name only once it may pass, then refuses Grove's and the host's own addresses. */
  /**
   * Parses what the client asks for and waits for the policy's (or a
   * person's) answer, which it gives the client itself when it is a refusal:
   * resolves with where to connect, or null when the request ends here. A
   * client that hangs up (`client` closes) while held abandons its request.
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
    const gone = new AbortController();
    client.on('close', () => gone.abort());
    const outcome = await this.authorize(branch, target, method, gone.signal);
    if (outcome.ok) return { target, ip: outcome.ip };
    if (!('abandoned' in outcome)) refuse(outcome.status, outcome.message, outcome.verdict);
    return null;
  }

  private async authorize(branch: GateBranch, target: ProxyTarget, method: string, gone: AbortSignal): Promise<Outcome> {
    const dest = { host: target.host, port: target.port, method };
    const refuse = (status: number, verdict: EgressVerdict, by: string, why: string, request: string | null = null): Outcome => {
      this.record(branch, target, method, request, verdict, by, why);
      return { ok: false, status, verdict, message: `Grove gate: ${method} ${formatRule(target)} refused: ${why}\n` };
    };
    if (net.isIP(target.host)) {
      const why = forbiddenReason(target.host, this.groveRanges());
      if (why) return refuse(403, 'denied', 'policy', why);
    }
    const verdict = decide(this.o.registry.egressPolicy(branch.id), dest);
    if (verdict.action === 'deny') return refuse(403, 'denied', 'policy', verdict.reason);
    if (verdict.action === 'hold') {
      if (this.held(branch.id).length >= MAX_PENDING_PER_BRANCH) return refuse(429, 'denied', 'policy', 'too many requests are waiting for approval');
      const { info, decision } = this.hold(branch, target, method, verdict.reason, gone);
      const d = await decision;
      if (d.verdict === 'abandoned') return { ok: false, abandoned: true };
      if (d.verdict === 'timeout') {
        const s = Math.round(this.o.holdTimeoutMs / 1000);
        return {
          ok: false,
          status: 504,
          verdict: 'timeout',
          message: `Grove gate: ${method} ${formatRule(target)} was held for approval and not approved in time (${s} s); request ${info.id}\n`,
        };
      }
      if (d.verdict === 'rejected') {
        return { ok: false, status: 403, verdict: 'rejected', message: `Grove gate: ${method} ${formatRule(target)} was denied by ${d.by}; request ${info.id}\n` };
      }
    } else {
      this.record(branch, target, method, null, 'allowed', 'policy', null);
    }
    let ip: string;
    try {
      ip = await this.resolve(target.host);
    } catch (err) {
      this.record(branch, target, method, null, 'failed', 'gate', `cannot resolve: ${(err as Error).message}`);
      return { ok: false, status: 502, verdict: 'failed', message: `Grove gate: cannot resolve ${target.host}\n` };
    }
    const why = forbiddenReason(ip, this.groveRanges());
    if (why) return refuse(403, 'denied', 'policy', `${target.host} resolves to ${ip}: ${why}`);
    return { ok: true, ip };
  }

  private hold(branch: GateBranch, target: ProxyTarget, method: string, reason: 'destination' | 'mutating', gone: AbortSignal) {
    const dest = formatRule(target);
    const what = target.url ? `${method} ${target.url}` : `${method} ${dest}`;
    let settle!: (d: Decision) => void;
    const decision = new Promise<Decision>((resolve) => (settle = resolve));
    let clientGone = false;
    const info = this.o.approvals.open({
      action: { kind: 'egress.connection', host: target.host, port: target.port, method, url: target.url, held: reason },
      branch: { id: branch.id, name: branch.name, treeId: branch.treeId },
      requestedBy: null,
      reason: reason === 'destination' ? `${dest} is not on ${branch.name}'s allow list` : `${method} changes something, and ${branch.name} holds such requests`,
      effect: `${what} from ${branch.name} is let through (always: ${dest} also joins its allow list)`,
      preview: NO_PREVIEW,
      timeoutMs: this.o.holdTimeoutMs,
      carryOut: async (d) => {
        if (d.always) this.allowAlways(branch.id, target, d.by);
        settle({ verdict: 'approved', by: actorLabel(d.by) });
        if (d.always && d.by) await this.reevaluate(branch.id, d.by);
        return d.always ? `let through; ${dest} is now on the allow list` : 'let through once';
      },
      onRefused: (a) => settle(a.state === 'abandoned' ? { verdict: 'abandoned', by: clientGone ? 'client' : 'teardown' } : refusal(a)),
    });
    const onGone = () => {
      clientGone = true;
      this.o.approvals.abandon(info.id, 'the connection from the branch closed');
    };
    gone.addEventListener('abort', onGone);
    const recorded = decision.then((d) => {
      gone.removeEventListener('abort', onGone);
      const detail = d.verdict === 'timeout' ? `not decided within ${this.o.holdTimeoutMs} ms` : null;
      this.record(branch, target, method, info.id, d.verdict, d.by, detail);
      return d;
    });
    this.o.registry.insertEgressLog({ ...logFields(branch, target, method, info.id), verdict: 'held', decidedBy: 'policy', detail: reason });
    return { info, decision: recorded };
  }

  private allowAlways(workspaceId: string, target: ProxyTarget, by: Actor | null): void {
    const policy = this.o.registry.egressPolicy(workspaceId);
    const allow = editAllowList(policy.allow, [{ host: target.host, port: target.port }], []);
    this.o.registry.setEgressPolicy(workspaceId, { ...policy, allow });
    this.o.log(`egress: ${formatRule(target)} joined the allow list of ${workspaceId} (${actorLabel(by)})`);
  }

  private async resolve(host: string): Promise<string> {
    if (net.isIP(host)) return host;
    const fixed = this.o.staticHosts.get(host);
    if (fixed) return fixed;
    return (await dns.lookup(host)).address;
  }

  /** Grove's subnet, every branch veth's /30 (of any Grove instance), and every address of this host. */
  private groveRanges(): Cidr[] {
    const ranges = [parseCidr(this.o.subnet)];
    for (const [name, addrs] of Object.entries(os.networkInterfaces())) {
      for (const a of addrs ?? []) {
        ranges.push({ address: a.address, prefix: a.family === 'IPv4' ? 32 : 128 });
        if (name.startsWith('gv') && a.cidr) ranges.push(parseCidr(a.cidr));
      }
    }
    return ranges;
  }

  private record(branch: GateBranch, target: ProxyTarget, method: string, request: string | null, verdict: EgressVerdict, by: string, detail: string | null) {
    const entry = { ...logFields(branch, target, method, request), verdict, decidedBy: by, detail };
    try {
      this.o.registry.insertEgressLog(entry);
    } catch (err) {
      this.o.log(`egress log: ${(err as Error).message}`);
    }
    this.o.publish.decision({ request, workspace: branch.id, host: target.host, port: target.port, method, verdict, decidedBy: by, at: entry.at });
  }
}

/** How the egress log names who decided: 'person:alice', or the helper's reason. */
function actorLabel(by: Actor | null): string {
  return by ? `${by.role}:${by.user}` : 'helper';
}

/** A held request that closed unapproved: denied, timed out, or withdrawn (which no branch can do; treated as denied). */
function refusal(a: Approval): Decision {
  if (a.state === 'expired') return { verdict: 'timeout', by: 'timeout' };
  return { verdict: 'rejected', by: actorLabel(a.decision?.by ?? null) };
}

function logFields(branch: GateBranch, target: ProxyTarget, method: string, request: string | null) {
  return {
    at: new Date().toISOString(),
    workspace: branch.id,
    workspaceName: branch.name,
    request,
    host: target.host,
    port: target.port,
    method,
    url: target.url,
  };
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

function sendRaw(socket: Duplex, status: number, body: string, verdict?: EgressVerdict): void {
  if (!socket.writable) return void socket.destroy();
  const reason = http.STATUS_CODES[status] ?? 'Error';
  const extra = verdict ? `X-Grove-Egress: ${verdict}\r\n` : '';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}
