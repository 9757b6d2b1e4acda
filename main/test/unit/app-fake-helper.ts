// A fake helper on a Unix socket that speaks just enough of protocol 2 for
// the app's controller, and a renderer's end of the web server's API: what
// the controller tests (app-controller, app-images) run against.
import { rmSync } from 'node:fs';
import net from 'node:net';
import WebSocket from 'ws';
import type { Actor, AppState, Approval, Grant, Image, Workspace } from '../../src/api/contract.js';
import type { WebServer } from '../../src/app/server.js';
import { APP, audit, decided, grant } from './app-fixtures.js';

/** The method an approved agent request runs as. */
const CARRIED_OUT_AS: Partial<Record<Approval['action']['kind'], string>> = {
  'branch.promote': 'branch.promote',
  'branch.discard': 'workspace.delete',
  'workspace.stop': 'workspace.stop',
  'egress.policy': 'egress.set',
};

/** A helper that speaks just enough of protocol 2: the app connects as APP. */
export class FakeHelper {
  server: net.Server | null = null;
  sockets = new Set<net.Socket>();
  workspaces: Workspace[] = [];
  /** What approval.list answers (open and lately closed). */
  approvals: Approval[] = [];
  grants: Grant[] = [];
  images: Image[] = [];
  /** Answers of a test's own for more methods: a result, or a thrown error (with its code) the helper would send. */
  handlers = new Map<string, (params: Record<string, unknown>) => unknown>();
  pool = { freeBytes: 9 * 2 ** 30, totalBytes: 16 * 2 ** 30, low: false };
  calls: string[] = [];
  params: Record<string, unknown>[] = [];
  private seq = 0;
  constructor(
    readonly socketPath: string,
    public epoch: string,
  ) {}

  async listen(): Promise<void> {
    rmSync(this.socketPath, { force: true });
    this.server = net.createServer((s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      let buf = '';
      s.on('data', (d) => {
        buf += d.toString();
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const req = JSON.parse(buf.slice(0, i)) as { id: number; method: string; params: Record<string, unknown> };
          buf = buf.slice(i + 1);
          this.calls.push(req.method);
          this.params.push(req.params);
          s.write(`${JSON.stringify(this.answer(req))}\n`);
        }
      });
    });
    await new Promise<void>((r) => this.server!.listen(this.socketPath, r));
  }

  answer(req: { id: number; method: string; params: Record<string, unknown> }): unknown {
    const ok = (result: unknown) => ({ id: req.id, result });
    const handler = this.handlers.get(req.method);
    if (handler) {
      try {
        return ok(handler(req.params));
      } catch (err) {
        return { id: req.id, error: { code: (err as { code?: string }).code ?? 'E_INTERNAL', message: (err as Error).message } };
      }
    }
    switch (req.method) {
      case 'hello':
        return ok({ protocol: 2, helperVersion: 'fake', epoch: this.epoch, capabilities: [], identity: APP });
      case 'events.subscribe':
        return ok({ seq: 0 });
      case 'workspace.list':
        return ok(this.workspaces);
      case 'version.list':
        return ok([]);
      case 'image.list':
        return ok(this.images);
      case 'approval.list':
        return ok(this.approvals);
      case 'grant.list':
        return ok(this.grants);
      case 'space.pool':
        return ok(this.pool);
      case 'workspace.stop':
        return { id: req.id, error: { code: 'E_BUSY', message: 'a fork holds it' } };
      case 'approval.approve':
      case 'approval.deny': {
        const open = this.approvals.find((a) => a.id === req.params.id && a.state === 'pending');
        if (!open) return { id: req.id, error: { code: 'E_NOT_FOUND', message: `no pending request '${String(req.params.id)}'` } };
        const approve = req.method === 'approval.approve';
        // As the helper does: the decision is published at once (under the caller's identity);
        // an approved request is carried out in the asker's name (audited so) before the call returns.
        let after = decided(open, APP, approve, (req.params.note as string | undefined) ?? null, req.params.always === true);
        this.emit('approval.changed', after, APP);
        if (approve) {
          if (open.requestedBy)
            this.emit(
              'audit',
              audit(++this.seq, open.requestedBy, CARRIED_OUT_AS[open.action.kind]!, open.workspace, 'ok', 'approved by person root (uid 0)'),
              APP,
            );
          after = { ...after, state: 'done', outcome: `${open.workspaceName}: done` };
          this.emit('approval.changed', after, APP);
        }
        this.approvals = this.approvals.map((a) => (a === open ? after : a));
        return ok(after);
      }
      case 'grant.set': {
        const g = grant('g00000001', req.params.kind as Grant['kind']);
        this.grants = [...this.grants, g];
        this.emit('grant.changed', { grant: g, revoked: false }, APP);
        return ok(g);
      }
      case 'egress.set':
        return ok({ mode: req.params.mode ?? 'deny', allow: req.params.allow ?? [], holdMutating: req.params.holdMutating ?? false });
      case 'perf.get':
        return ok(PERF);
      default:
        return { id: req.id, error: { code: 'E_UNKNOWN_METHOD', message: req.method } };
    }
  }

  /** An event, stamped with who caused it (none: the helper acted by itself). */
  emit(event: string, data: unknown, by?: Actor): void {
    const line = `${JSON.stringify(by ? { event, seq: ++this.seq, data, by } : { event, seq: ++this.seq, data })}\n`;
    for (const s of this.sockets) s.write(line);
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((r) => this.server!.close(() => r()));
  }
}

/** What perf.get answers: no forks yet, no branch running. */
export const PERF = {
  forks: [],
  branches: [],
  host: { totalBytes: 2 ** 34, availableBytes: 2 ** 33, pageBytes: 4096, ksm: { pagesShared: 0, pagesSharing: 0, pagesUnshared: 0, fullScans: 3, run: 1 } },
  pool: { freeBytes: 2 ** 33, totalBytes: 2 ** 34, low: false },
  prepared: { ready: [], kept: 2 },
  standbys: [],
  at: '2026-11-30T10:00:00.000Z',
};

type Reply = { result?: unknown; error?: { code: string; message: string } };

/** A renderer: the API socket with the cookie, collecting state events and every other event in order. */
export async function connectRenderer(
  web: WebServer,
  secret: string,
): Promise<{ ws: WebSocket; states: AppState[]; events: { event: string; data: unknown }[]; call: (method: string, params: unknown) => Promise<Reply> }> {
  const ws = new WebSocket(`${web.url.replace('http', 'ws')}api`, { headers: { cookie: `grove_token=${secret}` } });
  const states: AppState[] = [];
  const events: { event: string; data: unknown }[] = [];
  const waiting = new Map<number, (f: Reply) => void>();
  ws.on('message', (m: Buffer) => {
    const f = JSON.parse(m.toString()) as { event?: string; data?: unknown; id?: number };
    if (f.event === 'state') states.push(f.data as AppState);
    else if (f.event !== undefined) events.push({ event: f.event, data: f.data });
    else if (f.id !== undefined) waiting.get(f.id)?.(f as Reply);
  });
  await new Promise((r, j) => {
    ws.once('open', r);
    ws.once('error', j);
  });
  let id = 0;
  const call = (method: string, params: unknown) =>
    new Promise<Reply>((resolve) => {
      waiting.set(++id, resolve);
      ws.send(JSON.stringify({ id, method, params }));
    });
  return { ws, states, events, call };
}
