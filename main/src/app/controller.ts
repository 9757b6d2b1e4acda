// The app's controller: one connection to the helper (re-made whenever it
// drops), the app state built from it, and the actions the renderer may ask
// for. Plain Node: it runs standalone (web mode) and inside Electron's main.
//
// Staleness: when the helper connection drops, the state is marked
// 'disconnected' at once (the renderer greys it out); after reconnecting,
// everything is read again before the state is called 'connected'.
import { EventEmitter } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import { GroveError, HelperClient } from '../helper-client/client.js';
import type { EventPayload } from '../../../privileged-helper/src/protocol/events.js';
import type {
  ActivityEntry,
  AppState,
  Connection,
  EgressRequest,
  Image,
  Operation,
  OperationKind,
  RequestName,
  RequestParams,
  RequestResult,
  Version,
  Workspace,
} from '../api/contract.js';

const MAX_ACTIVITY = 500;
const MAX_OPERATIONS = 50;
/** Verdicts the policy repeats for one destination are logged once per this window (Chromium retries a lot). */
const POLICY_LOG_WINDOW_MS = 60_000;

export interface ControllerOptions {
  socketPath?: string;
  /** First reconnect delay; doubles up to 5 s. */
  retryMs?: number;
}

type TerminalListener = {
  output: (data: string) => void;
  exit: (exitCode: number, signal: string | null) => void;
};

export class Controller {
  private client: HelperClient | null = null;
  private connection: Connection = { status: 'connecting', epoch: null, error: null, since: now() };
  private branches = new Map<string, Workspace>();
  private versions: Version[] = [];
  private images: Image[] = [];
  private operations: Operation[] = [];
  private activity: ActivityEntry[] = [];
  private activitySeq = 0;
  private approvals = new Map<string, EgressRequest>();
  /** Held requests this app decided: their egress.decision events are already in the activity log. */
  private readonly decidedHere = new Set<string>();
  private readonly policyLogged = new Map<string, number>();
  private opSeq = 0;
  private readonly emitter = new EventEmitter();
  private readonly terminals = new Map<string, TerminalListener>();
  private stopped = false;
  private changeTimer: NodeJS.Timeout | null = null;
  private connectedOnce: (() => void) | null = null;

  constructor(private readonly opts: ControllerOptions = {}) {
    this.emitter.setMaxListeners(0);
  }

  /** Starts connecting (and reconnecting). Resolves after the first attempt, connected or not. */
  async start(): Promise<void> {
    const first = new Promise<void>((resolve) => (this.connectedOnce = resolve));
    void this.connectLoop();
    await first;
  }

  stop(): void {
    this.stopped = true;
    this.client?.close();
    if (this.changeTimer) clearTimeout(this.changeTimer);
  }

  snapshot(): AppState {
    return {
      connection: this.connection,
      branches: [...this.branches.values()].sort((a, b) => a.createdAt.localeCompare(b.createdAt) || a.id.localeCompare(b.id)),
      versions: this.versions,
      images: this.images,
      operations: this.operations,
      activity: this.activity,
      approvals: [...this.approvals.values()].sort((a, b) => a.at.localeCompare(b.at) || a.id.localeCompare(b.id)),
    };
  }

  /** Called (coalesced, at most every 50 ms) after any change of the state. */
  onChange(listener: () => void): () => void {
    this.emitter.on('change', listener);
    return () => this.emitter.off('change', listener);
  }

  /** The host VNC port of a running branch, or null. */
  vncPort(branchId: string): number | null {
    const b = this.branches.get(branchId);
    if (!b || b.state !== 'running' || this.connection.status !== 'connected') return null;
    return b.ports.find((p) => p.containerPort === 5900)?.hostPort ?? null;
  }

  /** Handles one validated renderer request. `terminals` receives output of sessions it opens. */
  async handle<R extends RequestName>(method: R, params: RequestParams<R>, owner: TerminalOwner): Promise<RequestResult<R>> {
    return (await this.dispatch(method, params as never, owner)) as RequestResult<R>;
  }

  private async dispatch(method: RequestName, p: Record<string, unknown>, owner: TerminalOwner): Promise<unknown> {
    const c = this.helper();
    const ws = p.workspace as string;
    switch (method) {
      case 'state.get':
        return this.snapshot();
      case 'image.build':
        return this.operation('image.build', 'desktop', 'build the desktop image', () => c.request('image.build', { name: 'desktop' }), (img) => `image ${img.state}`);
      case 'workspace.create':
        return this.operation('workspace.create', p.name as string, 'create workspace', () => c.request('workspace.create', { name: p.name as string }), (w) => `created ${w.name} (${w.id})`);
      case 'workspace.start':
        return this.operation('workspace.start', this.nameOf(ws), 'start', () => c.request('workspace.start', { workspace: ws }), () => 'running');
      case 'workspace.stop':
        return this.operation('workspace.stop', this.nameOf(ws), 'stop', () => c.request('workspace.stop', { workspace: ws }), () => 'stopped');
      case 'branch.discard':
        return this.operation('branch.discard', this.nameOf(ws), 'discard', () => c.request('workspace.delete', { workspace: ws }), () => 'discarded');
      case 'branch.fork':
        return this.operation(
          'branch.fork',
          this.nameOf(ws),
          `fork into ${p.copies as number}`,
          () => c.request('branch.fork', { workspace: ws, copies: p.copies as number }),
          (r) => `made ${r.children.map((x) => x.name).join(', ')} in ${Math.round(r.timings.total)} ms (source paused ${Math.round(r.timings.sourceFrozen)} ms)`,
        );
      case 'branch.checkpoint':
        return this.operation('branch.checkpoint', this.nameOf(ws), 'checkpoint', () => c.request('branch.checkpoint', { workspace: ws, label: p.label as string | undefined }), (v) => `version ${v.id}`);
      case 'branch.rollback':
        return this.operation('branch.rollback', this.nameOf(ws), `roll back to ${p.version as string}`, () => c.request('branch.rollback', { workspace: ws, version: p.version as string }), () => 'rolled back');
      case 'branch.promote':
        return this.operation('branch.promote', this.nameOf(ws), 'promote to main line', () => c.request('branch.promote', { workspace: ws }), () => 'now the main line');
      case 'branch.diff':
        return c.request('branch.diff', { workspace: ws, other: p.other as string | undefined });
      case 'egress.status':
        return c.request('egress.status', { workspace: ws });
      case 'egress.log':
        return c.request('egress.log', { workspace: p.workspace as string | undefined, limit: p.limit as number | undefined });
      case 'perf.get':
        return c.request('perf.get', {});
      case 'egress.set': {
        const change = p as RequestParams<'egress.set'>;
        const what = describePolicyChange(change);
        try {
          const policy = await c.request('egress.set', change);
          this.log('person', 'change outside access', this.nameOf(ws), 'ok', `${what} → ${policy.mode}${policy.allow.length ? `, allow ${policy.allow.map(formatRule).join(' ')}` : ''}${policy.holdMutating ? ', hold mutating' : ''}`);
          return policy;
        } catch (err) {
          this.log('person', 'change outside access', this.nameOf(ws), 'failed', (err as Error).message);
          throw err;
        }
      }
      case 'egress.approve':
      case 'egress.deny': {
        const id = p.request as string;
        const held = this.approvals.get(id);
        const action = method === 'egress.deny' ? 'deny outside access' : p.always ? 'always allow outside access' : 'allow outside access once';
        this.decidedHere.add(id);
        try {
          const req = method === 'egress.deny' ? await c.request('egress.deny', { request: id }) : await c.request('egress.approve', { request: id, always: p.always === true });
          this.approvals.delete(id);
          this.log('person', action, req.workspaceName, 'ok', describeRequest(req));
          return req;
        } catch (err) {
          this.decidedHere.delete(id);
          this.log('person', action, held ? held.workspaceName : null, 'failed', `${held ? `${describeRequest(held)}: ` : ''}${(err as Error).message}`);
          // Gone already (decided elsewhere or timed out): the queue must not keep showing it.
          if (err instanceof GroveError && err.code === 'E_NOT_FOUND') this.approvals.delete(id);
          this.changed();
          throw err;
        }
      }
      case 'terminal.open': {
        const res = await c.request('exec.open', { workspace: ws, cols: p.cols as number, rows: p.rows as number });
        this.terminals.set(res.session, owner.terminal(res.session));
        this.log('person', 'open a terminal', this.nameOf(ws), 'ok', `session ${res.session}`);
        return res;
      }
      case 'terminal.write':
        return c.request('exec.write', { session: p.session as string, data: p.data as string });
      case 'terminal.resize':
        return c.request('exec.resize', { session: p.session as string, cols: p.cols as number, rows: p.rows as number });
      case 'terminal.close':
        this.terminals.delete(p.session as string);
        return c.request('exec.close', { session: p.session as string }).catch(() => ({}));
    }
  }

  private helper(): HelperClient {
    if (!this.client || this.connection.status !== 'connected') {
      throw new GroveError('E_PRECONDITION', this.connection.error ?? 'the app is not connected to the Grove helper yet');
    }
    return this.client;
  }

  private nameOf(ref: string): string {
    return this.branches.get(ref)?.name ?? ref;
  }

  private async operation<T>(kind: OperationKind, target: string, action: string, run: () => Promise<T>, describe: (r: T) => string): Promise<T> {
    const op: Operation = {
      id: `op${++this.opSeq}`,
      kind,
      target,
      startedAt: now(),
      status: 'running',
      stages: [],
      error: null,
      finishedAt: null,
    };
    this.operations = [...this.operations, op].slice(-MAX_OPERATIONS);
    this.log('person', action, target, 'started', '');
    try {
      const result = await run();
      this.finish(op, 'done', null);
      this.log('person', action, target, 'ok', describe(result));
      await this.refresh().catch(() => undefined);
      return result;
    } catch (err) {
      const message = (err as Error).message;
      this.finish(op, 'failed', message);
      this.log('person', action, target, 'failed', message);
      await this.refresh().catch(() => undefined);
      throw err;
    }
  }

  private finish(op: Operation, status: 'done' | 'failed', error: string | null): void {
    this.operations = this.operations.map((o) => (o.id === op.id ? { ...o, status, error, finishedAt: now() } : o));
    this.changed();
  }

  private log(actor: ActivityEntry['actor'], action: string, target: string | null, outcome: ActivityEntry['outcome'], detail: string): void {
    this.activity = [...this.activity, { seq: ++this.activitySeq, at: now(), actor, action, target, outcome, detail }].slice(-MAX_ACTIVITY);
    this.changed();
  }

  private changed(): void {
    if (this.changeTimer) return;
    this.changeTimer = setTimeout(() => {
      this.changeTimer = null;
      this.emitter.emit('change');
    }, 50);
  }

  private setConnection(status: Connection['status'], error: string | null, epoch = this.connection.epoch): void {
    this.connection = { status, epoch, error, since: now() };
    this.changed();
  }

  private async connectLoop(): Promise<void> {
    let delay = this.opts.retryMs ?? 250;
    let lastError = '';
    while (!this.stopped) {
      try {
        const client = await HelperClient.connect({ socketPath: this.opts.socketPath, name: 'grove-app', kind: 'app' });
        const closed = new Promise<void>((resolve) => client.onClose(resolve));
        await this.adopt(client);
        delay = this.opts.retryMs ?? 250;
        lastError = '';
        this.connectedOnce?.();
        await closed;
        if (this.stopped) return;
        this.client = null;
        for (const t of this.terminals.values()) t.exit(-1, 'helper connection lost');
        this.terminals.clear();
        this.setConnection('disconnected', 'the connection to the Grove helper was lost; reconnecting…');
        this.log('controller', 'lost the helper', null, 'info', 'what is shown is the last known state; it is not live');
      } catch (err) {
        const message = (err as Error).message;
        if (message !== lastError) this.log('controller', 'cannot reach the helper', null, 'failed', message);
        lastError = message;
        this.setConnection('disconnected', message);
        this.connectedOnce?.();
        await sleep(delay);
        delay = Math.min(delay * 2, 5000);
      }
    }
  }

  private async adopt(client: HelperClient): Promise<void> {
    const previousEpoch = this.connection.epoch;
    client.on('workspace.changed', (e) => this.onWorkspaceChanged(e));
    client.on('workspace.removed', (e) => this.onWorkspaceRemoved(e));
    client.on('progress', (e) => this.onProgress(e));
    client.on('egress.request', (e) => this.onEgressRequest(e));
    client.on('egress.decision', (e) => this.onEgressDecision(e));
    client.on('exec.output', (e) => this.terminals.get(e.session)?.output(e.data));
    client.on('exec.exit', (e) => {
      this.terminals.get(e.session)?.exit(e.exitCode, e.signal);
      this.terminals.delete(e.session);
    });
    await client.subscribe();
    this.client = client;
    await this.readAll(client);
    const epoch = client.hello?.epoch ?? null;
    this.setConnection('connected', null, epoch);
    if (previousEpoch && epoch !== previousEpoch) this.log('controller', 'helper restarted', null, 'info', 'state read again from the new helper');
    else this.log('controller', 'connected to the helper', null, 'info', `helper ${client.hello?.helperVersion ?? '?'}`);
  }

  private async readAll(client: HelperClient): Promise<void> {
    const [branches, versions, images, pending] = await Promise.all([
      client.request('workspace.list', {}),
      client.request('version.list', {}),
      client.request('image.list', {}),
      client.request('egress.pending', {}),
    ]);
    this.branches = new Map(branches.map((b) => [b.id, b]));
    this.approvals = new Map(pending.map((r) => [r.id, r]));
    this.versions = versions;
    this.images = images;
    this.changed();
  }

  /** Reads everything again (after an action, since versions have no events). */
  async refresh(): Promise<void> {
    if (this.client && this.connection.status === 'connected') await this.readAll(this.client);
  }

  /** Who changed a branch: while an app action runs, presumably it; otherwise another client. */
  private changer(): ActivityEntry['actor'] {
    return this.operations.some((o) => o.status === 'running') ? 'helper' : 'outside';
  }

  private onWorkspaceChanged(e: EventPayload<'workspace.changed'>): void {
    const before = this.branches.get(e.workspace.id);
    this.branches.set(e.workspace.id, e.workspace);
    const actor = this.changer();
    if (!before) this.log(actor, 'branch appeared', e.workspace.name, 'info', `${e.workspace.state}${e.workspace.parent ? `, forked from ${this.nameOf(e.workspace.parent)}` : ''}`);
    else if (before.state !== e.workspace.state) this.log(actor, `branch ${e.workspace.state}`, e.workspace.name, 'info', `was ${before.state}`);
    else if (before.main !== e.workspace.main && e.workspace.main) this.log(actor, 'branch is now the main line', e.workspace.name, 'info', '');
    else this.changed();
  }

  private onWorkspaceRemoved(e: EventPayload<'workspace.removed'>): void {
    const name = this.nameOf(e.id);
    this.branches.delete(e.id);
    for (const r of this.approvals.values()) if (r.workspace === e.id) this.approvals.delete(r.id);
    this.log(this.changer(), 'branch removed', name, 'info', '');
  }

  private onEgressRequest(e: EventPayload<'egress.request'>): void {
    this.approvals.set(e.id, e);
    this.log('helper', 'asks for outside access', e.workspaceName, 'info', `${describeRequest(e)} · waiting for a person${e.reason === 'mutating' ? ' (a mutating request)' : ''}`);
  }

  private onEgressDecision(e: EventPayload<'egress.decision'>): void {
    if (e.verdict === 'held') return; // egress.request tells it, with more detail
    if (e.request) {
      this.approvals.delete(e.request);
      if (this.decidedHere.delete(e.request)) return this.changed(); // logged when the person decided
    }
    const dest = `${e.method} ${e.host}:${e.port}`;
    if (e.decidedBy === 'policy') {
      const key = `${e.workspace} ${dest} ${e.verdict}`;
      const last = this.policyLogged.get(key);
      const t = Date.now();
      if (last !== undefined && t - last < POLICY_LOG_WINDOW_MS) return this.changed();
      this.policyLogged.set(key, t);
      if (this.policyLogged.size > 1000) this.policyLogged.clear();
    }
    // 'app:…' is a person in an app (maybe another window); cli/test clients are agents or scripts.
    const actor: ActivityEntry['actor'] = e.decidedBy === 'policy' || e.decidedBy === 'timeout' ? 'helper' : e.decidedBy.startsWith('app:') ? 'person' : 'outside';
    const outcome: ActivityEntry['outcome'] = e.verdict === 'failed' ? 'failed' : 'info';
    this.log(actor, `outside access ${e.verdict}`, this.nameOf(e.workspace), outcome, `${dest} · by ${e.decidedBy}`);
  }

  private onProgress(e: EventPayload<'progress'>): void {
    const kind: OperationKind | null = e.image ? 'image.build' : e.job.startsWith('fork-') ? 'branch.fork' : null;
    // Attach to the oldest running operation of that kind (the helper runs one per branch at a time).
    const op = kind ? this.operations.find((o) => o.kind === kind && o.status === 'running') : undefined;
    if (op) {
      this.operations = this.operations.map((o) =>
        o.id === op.id ? { ...o, stages: [...o.stages, { stage: e.stage, message: e.message, at: now() }] } : o,
      );
      this.changed();
    }
  }
}

export interface TerminalOwner {
  terminal(session: string): TerminalListener;
}

/** 'GET http://outside.test:8080/x' or 'CONNECT example.org:443'. */
export function describeRequest(r: Pick<EgressRequest, 'method' | 'host' | 'port' | 'url'>): string {
  return r.url ? `${r.method} ${r.url}` : `${r.method} ${r.host}:${r.port}`;
}

function formatRule(r: { host: string; port?: number | undefined }): string {
  return r.port === undefined ? r.host : `${r.host}:${r.port}`;
}

function describePolicyChange(c: RequestParams<'egress.set'>): string {
  const parts: string[] = [];
  if (c.mode) parts.push(`mode ${c.mode}`);
  if (c.allow?.length) parts.push(`allow ${c.allow.map(formatRule).join(' ')}`);
  if (c.remove?.length) parts.push(`remove ${c.remove.map(formatRule).join(' ')}`);
  if (c.holdMutating !== undefined) parts.push(c.holdMutating ? 'hold mutating requests' : 'do not hold mutating requests');
  return parts.join(', ') || 'no change';
}

function now(): string {
  return new Date().toISOString();
}
