// The app's controller: one connection to the helper (re-made whenever it
// drops), the app state built from it, and the actions the renderer may ask
// for. Plain Node: it runs standalone (web mode) and inside Electron's main.
//
// Staleness: when the helper connection drops, the state is marked
// 'disconnected' at once (the renderer greys it out); after reconnecting,
// everything is read again before the state is called 'connected'.
import { EventEmitter } from 'node:events';
import { mkdtemp, open, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { GroveError, HelperClient, PERSON_SOCKET } from '../helper-client/client.js';
import { describeEgressChange, formatRule } from '../../../privileged-helper/src/protocol/egress-rules.js';
import type { EventPayload } from '../../../privileged-helper/src/protocol/events.js';
import { describeActor, type Actor } from '../../../privileged-helper/src/protocol/identity.js';
import type {
  ActivityEntry,
  AppState,
  Approval,
  Connection,
  EgressPolicy,
  EventData,
  ExportResult,
  Image,
  MergeResult,
  Operation,
  OperationKind,
  PoolSpace,
  RequestName,
  RequestParams,
  RequestResult,
  Version,
  Workspace,
} from '../api/contract.js';
import { REVIEW_PATCH_BYTES } from '../api/contract.js';
import { REQUEST_VERB, isSelf, notADesktop, projectOrigin, scopeGivesWords, scopeWhoWords } from '../api/words.js';
import { ActivityLog, CONTROLLER, HELPER, YOU, attribute, type Who } from './activity.js';
import { AgentWatch } from './agent-watch.js';
import { ApprovalBook } from './approval-book.js';
import { approvalLines, decisionAction, describeApproval } from './approval-log.js';
import { callDone, toldByItsEvents } from './calls.js';
import { buildImage } from './image-build.js';
import { ImageLogs } from './image-logs.js';

const MAX_OPERATIONS = 50;
/** Verdicts the policy repeats for one destination are logged once per this window (Chromium retries a lot). */
const POLICY_LOG_WINDOW_MS = 60_000;
/** At most this much of a session's output is kept while its open is not answered yet (a scrollback is 256 KiB). */
const EARLY_OUTPUT_MAX = 512 << 10;

export interface ControllerOptions {
  socketPath?: string;
  /** First reconnect delay; doubles up to 5 s. */
  retryMs?: number;
  /** How the renderer shows desktops (AppState.desktopView); noVNC unless the server frames streams. */
  desktopView?: AppState['desktopView'];
}

type TerminalListener = {
  output: (data: string) => void;
  exit: (exitCode: number, signal: string | null) => void;
};

export class Controller {
  private client: HelperClient | null = null;
  private connection: Connection = { status: 'connecting', epoch: null, error: null, since: now(), identity: null };
  private branches = new Map<string, Workspace>();
  private versions: Version[] = [];
  private images: Image[] = [];
  private pool: PoolSpace | null = null;
  private operations: Operation[] = [];
  private readonly activity = new ActivityLog();
  private readonly book = new ApprovalBook();
  private readonly agents = new AgentWatch();
  private readonly imageLogs = new ImageLogs();
  private readonly policyLogged = new Map<string, number>();
  private opSeq = 0;
  private readonly emitter = new EventEmitter();
  private readonly terminals = new Map<string, TerminalListener>();
  /**
   * Output of a session this app opened that came before the answer to its
   * open did (an attached terminal's scrollback does): handed on once the
   * session is known.
   */
  private readonly earlyOutput = new Map<string, string>();
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
      activity: this.activity.entries,
      ...this.book.snapshot(),
      agents: this.agents.snapshot(),
      pool: this.pool,
      desktopView: this.opts.desktopView ?? 'vnc',
    };
  }

  /** Called (coalesced, at most every 50 ms) after any change of the state. */
  onChange(listener: () => void): () => void {
    this.emitter.on('change', listener);
    return () => this.emitter.off('change', listener);
  }

  /** Every line of every image's build or pull, as it comes (not coalesced: the log panel follows it live). */
  onImageOutput(listener: (e: EventData<'image.output'>) => void): () => void {
    this.emitter.on('image.output', listener);
    return () => this.emitter.off('image.output', listener);
  }

  /** The desktop socket of a running branch (a Unix socket the helper serves to root and the grove group), or null. */
  vncSocket(branchId: string): string | null {
    const b = this.branches.get(branchId);
    if (!b || b.state !== 'running' || this.connection.status !== 'connected') return null;
    return b.vncSocket;
  }

  /** The Selkies stream socket of a running branch (served to root and the grove group), or null. */
  streamSocket(branchId: string): string | null {
    const b = this.branches.get(branchId);
    if (!b || b.state !== 'running' || this.connection.status !== 'connected') return null;
    return b.streamSocket;
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
      case 'image.build': {
        const build = p as RequestParams<'image.build'>;
        return this.operation('image.build', build.name, 'build image', () => buildImage(c, build), describeImage);
      }
      case 'image.pull': {
        const pull = p as RequestParams<'image.pull'>;
        return this.operation('image.pull', pull.name, 'pull image', () => c.request('image.pull', pull), describeImage);
      }
      case 'image.remove': {
        const name = p.name as string;
        const removed = await this.operation(
          'image.remove',
          name,
          'remove image',
          () => c.request('image.remove', { name }),
          () => 'removed',
        );
        this.imageLogs.forget(name);
        return removed;
      }
      case 'image.logs':
        return this.imageLogs.snapshot();
      case 'workspace.create': {
        const create = p as RequestParams<'workspace.create'>;
        return this.operation('workspace.create', create.name, 'create workspace', () => c.request('workspace.create', create), describeCreated);
      }
      case 'workspace.start':
        return this.operation(
          'workspace.start',
          this.nameOf(ws),
          'start',
          () => c.request('workspace.start', { workspace: ws }),
          () => 'running',
        );
      case 'workspace.stop':
        return this.operation(
          'workspace.stop',
          this.nameOf(ws),
          'stop',
          () => c.request('workspace.stop', { workspace: ws }),
          () => 'stopped',
        );
      case 'branch.discard':
        return this.operation(
          'branch.discard',
          this.nameOf(ws),
          'discard',
          () => c.request('workspace.delete', { workspace: ws, versions: 'keep' }),
          () => 'discarded',
        );
      case 'branch.fork':
        return this.operation(
          'branch.fork',
          this.nameOf(ws),
          `fork into ${p.copies as number}`,
          () => c.request('branch.fork', { workspace: ws, copies: p.copies as number }),
          (r) =>
            [
              `made ${r.children.map((x) => x.name).join(', ')} in ${Math.round(r.timings.total)} ms (source paused ${Math.round(r.timings.sourceFrozen)} ms)`,
              ...r.carried,
              ...r.leftBehind,
            ].join('; '),
        );
      case 'branch.checkpoint':
        return this.operation(
          'branch.checkpoint',
          this.nameOf(ws),
          'checkpoint',
          () => c.request('branch.checkpoint', { workspace: ws, label: p.label as string | undefined }),
          (v) => `version ${v.id}`,
        );
      case 'branch.rollback':
        return this.operation(
          'branch.rollback',
          this.nameOf(ws),
          `roll back to ${p.version as string}`,
          () => c.request('branch.rollback', { workspace: ws, version: p.version as string }),
          () => 'rolled back',
        );
      case 'branch.promote':
        return this.operation(
          'branch.promote',
          this.nameOf(ws),
          'promote to main line',
          () => c.request('branch.promote', { workspace: ws, oldMain: p.oldMain as RequestParams<'branch.promote'>['oldMain'] }),
          () => 'now the main line',
        );
      case 'branch.pick': {
        const pick = p as RequestParams<'branch.pick'>;
        return this.operation(
          'branch.pick',
          this.nameOf(pick.workspace),
          `pick the winner among ${[pick.workspace, ...pick.others].map((r) => this.nameOf(r)).join(', ')}`,
          () => c.request('branch.pick', pick),
          (r) =>
            [
              `${r.main.name} is the main line`,
              r.discarded.length ? `discarded ${r.discarded.map((id) => this.nameOf(id)).join(', ')}` : null,
              r.kept.length ? `kept ${r.kept.map((id) => this.nameOf(id)).join(', ')}` : null,
            ]
              .filter(Boolean)
              .join('; '),
        );
      }
      case 'branch.diff':
        return c.request('branch.diff', { workspace: ws, other: p.other as string | undefined });
      case 'branch.merge': {
        const merge = p as RequestParams<'branch.merge'>;
        if (merge.dryRun) return c.request('branch.merge', merge);
        return this.operation(
          'branch.merge',
          this.nameOf(ws),
          `merge ${merge.sources.map((r) => this.nameOf(r)).join(', ')} into it`,
          () => c.request('branch.merge', merge),
          describeMerge,
        );
      }
      case 'branch.export': {
        const { workspace, repo, branch, force, message, since } = p as RequestParams<'branch.export'>;
        return this.operation(
          'branch.export',
          this.nameOf(workspace),
          `export to ${repo} as branch ${branch}`,
          () => c.request('branch.export', { workspace, to: { kind: 'git', repo, branch, force }, message, since }),
          (r) => describeExport(r),
        );
      }
      case 'branch.exportReview':
        return reviewExport(c, ws, p.since as string | undefined);
      case 'version.delete': {
        const id = p.version as string;
        const v = this.versions.find((x) => x.id === id);
        return this.recorded(
          'delete a version',
          v ? this.nameOf(v.branch) : null,
          () => c.request('version.delete', { version: id }),
          () => `version ${v?.label ? `'${v.label}' (${id})` : id}`,
        );
      }
      case 'version.label': {
        const { version: id, label } = p as RequestParams<'version.label'>;
        const v = this.versions.find((x) => x.id === id);
        return this.recorded(
          'name a version',
          v ? this.nameOf(v.branch) : null,
          () => c.request('version.label', { version: id, label }),
          (named) => (named.label ? `version ${id} is '${named.label}'` : `version ${id} has no name`),
        );
      }
      case 'branch.timeline': {
        const timeline = await c.request('branch.timeline', { workspace: ws });
        // A call's method, in the words the activity log gives it (a computer-use action's summary is in words already).
        const entries = timeline.entries.map((e) =>
          e.action.includes('.') ? { ...e, summary: e.ok ? callDone(e.action) : `${callDone(e.action)} failed${e.summary.slice(e.action.length)}` } : e,
        );
        return { ...timeline, entries };
      }
      case 'branch.screenshot':
        return c.request('desktop.screenshot', { workspace: ws, scale: p.scale as number });
      case 'egress.status':
        return c.request('egress.status', { workspace: ws });
      case 'egress.log':
        return c.request('egress.log', { workspace: p.workspace as string | undefined, limit: p.limit as number | undefined });
      case 'perf.get':
        return c.request('perf.get', {});
      case 'space.get':
        return c.request('space.get', {});
      case 'egress.set': {
        const change = p as RequestParams<'egress.set'>;
        return this.recorded(
          'change outside access',
          this.nameOf(ws),
          () => c.request('egress.set', change),
          (policy) => `${describeEgressChange(change)} → ${describePolicy(policy)}`,
        );
      }
      case 'approval.approve':
      case 'approval.deny':
        return this.decide(method === 'approval.approve', p as RequestParams<'approval.approve'>);
      case 'grant.set': {
        const { kind } = p as RequestParams<'grant.set'>;
        return this.recorded(
          `let agents ${REQUEST_VERB[kind]} without asking`,
          this.nameOf(ws),
          () => c.request('grant.set', { workspace: ws, kind }),
          (g) => `in every branch of ${g.treeName}`,
        );
      }
      case 'grant.revoke': {
        const id = p.grant as string;
        const g = this.book.grantById(id);
        const action = g ? `ask again before agents ${REQUEST_VERB[g.kind]}` : 'revoke a standing approval';
        return this.recorded(
          action,
          g?.treeName ?? null,
          () => c.request('grant.revoke', { grant: id }),
          (revoked) => `granted by ${revoked.grantedBy.user}`,
        );
      }
      case 'scope.list':
        return c.request('scope.list', p as RequestParams<'scope.list'>);
      case 'scope.allow': {
        const change = p as RequestParams<'scope.allow'>;
        return this.recorded(
          `give ${scopeWhoWords(change.who)} workspaces`,
          null,
          () => c.request('scope.allow', change),
          (scopes) => `it now has ${scopes.map(scopeGivesWords).join('; ')}`,
        );
      }
      case 'scope.revoke': {
        const change = p as RequestParams<'scope.revoke'>;
        return this.recorded(
          `take workspaces back from ${scopeWhoWords(change.who)}`,
          null,
          () => c.request('scope.revoke', change),
          (gone) => gone.map(scopeGivesWords).join('; '),
        );
      }
      case 'terminal.open': {
        const { terminals } = await c.request('exec.terminals', { workspace: ws });
        const attach = terminals.find((t) => !t.attached)?.id;
        const res = await c.request('exec.open', { workspace: ws, cols: p.cols as number, rows: p.rows as number, attach });
        const listener = owner.terminal(res.session);
        this.terminals.set(res.session, listener);
        const early = this.earlyOutput.get(res.session);
        this.earlyOutput.delete(res.session);
        if (early) listener.output(early);
        this.log(YOU, 'open a terminal', this.nameOf(ws), 'ok', attach ? `session ${res.session}, attached to ${attach}` : `session ${res.session}`);
        return { session: res.session, attached: attach ?? null };
      }
      case 'terminal.write':
        return c.request('exec.write', { session: p.session as string, data: p.data as string });
      case 'terminal.resize':
        return c.request('exec.resize', { session: p.session as string, cols: p.cols as number, rows: p.rows as number });
      case 'terminal.close':
        this.terminals.delete(p.session as string);
        return c.request('exec.close', { session: p.session as string }).catch(() => ({})); // ended, or its connection is gone: closed already
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

  /** The branch a reference (id or name, as a call gave it) names, if it is known. */
  private branchIdOf(ref: string | null): string | null {
    if (ref === null) return null;
    if (this.branches.has(ref)) return ref;
    for (const b of this.branches.values()) if (b.name === ref) return b.id;
    return null;
  }

  /** Runs a person's change and logs it as theirs, with its outcome. */
  private async recorded<T>(action: string, target: string | null, run: () => Promise<T>, describe: (r: T) => string): Promise<T> {
    try {
      const result = await run();
      this.log(YOU, action, target, 'ok', describe(result));
      return result;
    } catch (err) {
      this.log(YOU, action, target, 'failed', (err as Error).message);
      throw err;
    }
  }

  /**
   * The person's decision on a request in the queue. The helper reports it
   * (approval.changed, under this app's identity) as soon as it is made, and
   * that is what the log tells; an approved request's call returns only once
   * it is carried out. A decision that fails is logged here.
   */
  private async decide(approve: boolean, p: RequestParams<'approval.approve'>): Promise<Approval> {
    const c = this.helper();
    try {
      return approve ? await c.request('approval.approve', p) : await c.request('approval.deny', { id: p.id, note: p.note });
    } catch (err) {
      const known = this.book.get(p.id);
      const action = known ? decisionAction(known.action, approve, p.always === true) : approve ? 'approve a request' : 'deny a request';
      this.log(YOU, action, known?.workspaceName ?? null, 'failed', `${known ? `${describeApproval(known)}: ` : ''}${(err as Error).message}`);
      // Gone already (decided elsewhere, or timed out): the queue must not keep showing it.
      if (err instanceof GroveError && err.code === 'E_NOT_FOUND') this.book.drop(p.id);
      throw err;
    }
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
    this.log(YOU, action, target, 'started', '');
    // What is told is the operation's outcome. A refresh after it that fails leaves the state as
    // events keep it, and a reconnect (after a lost connection, its usual cause) reads it all again.
    try {
      const result = await run();
      this.finish(op, 'done', null);
      this.log(YOU, action, target, 'ok', describe(result));
      await this.refresh().catch(() => undefined);
      return result;
    } catch (err) {
      const message = (err as Error).message;
      this.finish(op, 'failed', message);
      this.log(YOU, action, target, 'failed', message);
      await this.refresh().catch(() => undefined);
      throw err;
    }
  }

  private finish(op: Operation, status: 'done' | 'failed', error: string | null): void {
    this.operations = this.operations.map((o) => (o.id === op.id ? { ...o, status, error, finishedAt: now() } : o));
    this.changed();
  }

  private log(who: Who, action: string, target: string | null, outcome: ActivityEntry['outcome'], detail: string): void {
    this.activity.add(who, action, target, outcome, detail);
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
    this.connection = { ...this.connection, status, epoch, error, since: now() };
    this.changed();
  }

  /** Who the helper takes this app for: its own calls come back in events and the audit log under this identity. */
  private get self(): Actor | null {
    return this.connection.identity;
  }

  private async connectLoop(): Promise<void> {
    let delay = this.opts.retryMs ?? 250;
    let lastError = '';
    while (!this.stopped) {
      try {
        // The person socket only: the app is a person's seat, never an agent's (as the CLI may fall back to).
        const client = await HelperClient.connect({ socketPath: this.opts.socketPath ?? PERSON_SOCKET, name: 'grove-app', kind: 'app' });
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
        this.earlyOutput.clear();
        this.setConnection('disconnected', 'the connection to the Grove helper was lost; reconnecting…');
        this.log(CONTROLLER, 'lost the helper', null, 'info', 'what is shown is the last known state; it is not live');
      } catch (err) {
        const message = (err as Error).message;
        if (message !== lastError) this.log(CONTROLLER, 'cannot reach the helper', null, 'failed', message);
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
    client.on('workspace.changed', (e, _seq, by) => this.onWorkspaceChanged(e, by));
    client.on('workspace.removed', (e, _seq, by) => this.onWorkspaceRemoved(e, by));
    client.on('version.changed', (e) => this.onVersionChanged(e.version));
    client.on('version.removed', (e) => {
      this.versions = this.versions.filter((v) => v.id !== e.id);
      if (e.reason) this.log(HELPER, 'checkpoint lost', e.id, 'failed', e.reason);
      else this.changed();
    });
    client.on('progress', (e) => this.onProgress(e));
    client.on('approval.opened', (e) => this.onApproval(e));
    client.on('approval.changed', (e) => this.onApproval(e));
    client.on('grant.changed', (e, _seq, by) => this.onGrantChanged(e, by));
    client.on('audit', (e) => this.onAudit(e));
    client.on('desktop.action', (e, _seq, by) => this.onDesktopAction(e, by));
    client.on('egress.decision', (e) => this.onEgressDecision(e));
    client.on('pool.space', (e) => this.onPoolSpace(e));
    client.on('exec.output', (e) => {
      const terminal = this.terminals.get(e.session);
      if (terminal) terminal.output(e.data);
      else this.earlyOutput.set(e.session, ((this.earlyOutput.get(e.session) ?? '') + e.data).slice(-EARLY_OUTPUT_MAX));
    });
    client.on('exec.exit', (e) => {
      this.terminals.get(e.session)?.exit(e.exitCode, e.signal);
      this.terminals.delete(e.session);
    });
    await client.subscribe();
    this.client = client;
    // Known before the first event is taken apart: it tells this app's own calls from others'.
    this.connection = { ...this.connection, identity: client.hello?.identity ?? null };
    await this.readAll(client);
    const epoch = client.hello?.epoch ?? null;
    this.setConnection('connected', null, epoch);
    if (previousEpoch && epoch !== previousEpoch) this.log(CONTROLLER, 'helper restarted', null, 'info', 'state read again from the new helper');
    else
      this.log(
        CONTROLLER,
        'connected to the helper',
        null,
        'info',
        `helper ${client.hello?.helperVersion ?? '?'}, as ${client.hello ? describeActor(client.hello.identity) : '?'}`,
      );
  }

  private async readAll(client: HelperClient): Promise<void> {
    const [branches, versions, images, approvals, grants, pool] = await Promise.all([
      client.request('workspace.list', {}),
      client.request('version.list', {}),
      client.request('image.list', {}),
      // Open requests only: the helper keeps hundreds of closed ones, thumbnails and all, and this runs after every action.
      client.request('approval.list', { all: false }),
      client.request('grant.list', {}),
      client.request('space.pool', {}),
    ]);
    this.pool = pool;
    this.branches = new Map(branches.map((b) => [b.id, b]));
    this.book.reset(approvals, grants);
    this.agents.keepOnly(new Set(this.branches.keys()));
    this.versions = versions;
    this.images = images;
    this.changed();
  }

  /** Reads the images again: one was built, pulled or removed by another client (no event tells that). */
  private async readImages(): Promise<void> {
    if (!this.client || this.connection.status !== 'connected') return;
    this.images = await this.client.request('image.list', {});
    this.changed();
  }

  /** Reads everything again (after an action: not every change has an event, e.g. a rollback's versions). */
  async refresh(): Promise<void> {
    if (this.client && this.connection.status === 'connected') await this.readAll(this.client);
  }

  private onWorkspaceChanged(e: EventPayload<'workspace.changed'>, by: Actor | undefined): void {
    const before = this.branches.get(e.workspace.id);
    this.branches.set(e.workspace.id, e.workspace);
    const who = attribute(by, this.self);
    if (!before)
      this.log(
        who,
        'branch appeared',
        e.workspace.name,
        'info',
        `${e.workspace.state}${e.workspace.parent ? `, forked from ${this.nameOf(e.workspace.parent)}` : ''}`,
      );
    else if (before.state !== e.workspace.state) this.log(who, `branch ${e.workspace.state}`, e.workspace.name, 'info', `was ${before.state}`);
    else if (before.main !== e.workspace.main && e.workspace.main) this.log(who, 'branch is now the main line', e.workspace.name, 'info', '');
    else this.changed();
  }

  /** A checkpoint appeared (saving) or was saved: in place, in creation order. */
  private onVersionChanged(version: Version): void {
    const at = this.versions.findIndex((v) => v.id === version.id);
    if (at >= 0) this.versions = this.versions.map((v) => (v.id === version.id ? version : v));
    else this.versions = [...this.versions, version];
    this.changed();
  }

  private onWorkspaceRemoved(e: EventPayload<'workspace.removed'>, by: Actor | undefined): void {
    const name = this.nameOf(e.id);
    this.branches.delete(e.id);
    this.agents.forget(e.id);
    this.log(attribute(by, this.self), 'branch removed', name, 'info', '');
  }

  private onApproval(a: Approval): void {
    const before = this.book.apply(a);
    if (before === a.state) return this.changed();
    const lines = approvalLines(a, before, this.self);
    for (const l of lines) this.log(l.who, l.action, l.target, l.outcome, l.detail);
    if (lines.length === 0) this.changed();
  }

  private onGrantChanged(e: EventPayload<'grant.changed'>, by: Actor | undefined): void {
    this.book.grant(e.grant, e.revoked);
    if (by && isSelf(by, this.self)) return this.changed(); // logged when the person here made it
    const verb = REQUEST_VERB[e.grant.kind];
    this.log(attribute(by, this.self), e.revoked ? `ask again before agents ${verb}` : `let agents ${verb} without asking`, e.grant.treeName, 'ok', '');
  }

  /** Every call that changes something, with who made it: the log's source for what other clients do. */
  private onAudit(e: EventPayload<'audit'>): void {
    const branch = this.branchIdOf(e.target);
    if (e.actor?.role === 'agent' && branch && !e.action.startsWith('desktop.')) this.agents.call(branch, e, e.actor);
    const mine = e.actor !== null && isSelf(e.actor, this.self); // logged as it was done, with its outcome
    if (!mine && e.action.startsWith('image.')) void this.readImages().catch(() => undefined); // as a refresh after an operation
    if (mine || (e.outcome === 'ok' && toldByItsEvents(e.action))) return this.changed();
    const target = e.target === null ? null : this.nameOf(branch ?? e.target);
    this.log(attribute(e.actor, this.self), callDone(e.action), target, e.outcome === 'ok' ? 'ok' : 'failed', e.detail ?? '');
  }

  private onDesktopAction(e: EventPayload<'desktop.action'>, by: Actor | undefined): void {
    if (by?.role === 'agent') this.agents.desktop(e, by);
    // The tree's still pictures of this app's own rows are no one's action.
    if (e.action === 'screenshot' && by && isSelf(by, this.self)) return this.changed();
    this.log(attribute(by, this.self), 'use the desktop', e.workspaceName, e.ok ? 'ok' : 'failed', e.summary);
  }

  /** The pool became low on space, or has room again: shown at once, and in the activity log. */
  private onPoolSpace(e: EventPayload<'pool.space'>): void {
    this.pool = e;
    const free = `${Math.round(e.freeBytes / 2 ** 20)} MiB of ${Math.round(e.totalBytes / 2 ** 20)} MiB free`;
    this.log(HELPER, e.low ? 'the pool is low on space' : 'the pool has room again', null, e.low ? 'failed' : 'info', free);
  }

  /** Verdicts of the branch's policy; those on held connections are the queue's (approval.*). */
  private onEgressDecision(e: EventPayload<'egress.decision'>): void {
    if (e.request !== null && e.verdict !== 'failed') return;
    const dest = `${e.method} ${e.host}:${e.port}`;
    if (e.decidedBy === 'policy') {
      const key = `${e.workspace} ${dest} ${e.verdict}`;
      const last = this.policyLogged.get(key);
      const t = Date.now();
      if (last !== undefined && t - last < POLICY_LOG_WINDOW_MS) return this.changed();
      this.policyLogged.set(key, t);
      if (this.policyLogged.size > 1000) this.policyLogged.clear();
    }
    this.log(HELPER, `outside access ${e.verdict}`, this.nameOf(e.workspace), e.verdict === 'failed' ? 'failed' : 'info', `${dest} · by ${e.decidedBy}`);
  }

  /**
   * A step of a long operation. An image's lines go to its log, whoever
   * started it. The operation started here gets each stage; a tool's output
   * streamed line by line (a build, a copy) keeps only its newest line per
   * stage there: the whole of it is the image's log.
   */
  private onProgress(e: EventPayload<'progress'>): void {
    if (e.image) {
      const line = this.imageLogs.add(e.image, e.job, e.stage, e.message);
      this.emitter.emit('image.output', { image: e.image, job: e.job, line });
    }
    const op = this.operationOf(e);
    if (!op) return;
    const streamed = e.image !== undefined || e.workspace !== undefined;
    const stage = { stage: e.stage, message: e.message, at: now() };
    const stages = (o: Operation) => (streamed && o.stages.at(-1)?.stage === e.stage ? [...o.stages.slice(0, -1), stage] : [...o.stages, stage]);
    this.operations = this.operations.map((o) => (o.id === op.id ? { ...o, stages: stages(o) } : o));
    this.changed();
  }

  /** The running operation a progress event is about: by image or branch name; a fork's, the oldest fork (the helper runs one per branch at a time). */
  private operationOf(e: EventPayload<'progress'>): Operation | undefined {
    const running = this.operations.filter((o) => o.status === 'running');
    if (e.image) return running.find((o) => IMAGE_TAKEN_IN.has(o.kind) && o.target === e.image);
    if (e.workspace) return running.find((o) => o.kind === 'workspace.create' && o.target === e.workspace);
    if (e.job.startsWith('fork-')) return running.find((o) => o.kind === 'branch.fork');
    return undefined;
  }
}

export interface TerminalOwner {
  terminal(session: string): TerminalListener;
}

/** Operations that stream an image's output (its progress events name the image). */
const IMAGE_TAKEN_IN: ReadonlySet<OperationKind> = new Set(['image.build', 'image.pull']);

function describeImage(img: Image): string {
  return notADesktop(img) ?? `${img.state}${img.layers === null ? '' : `, ${img.layers} layer${img.layers === 1 ? '' : 's'}`}`;
}

function describeCreated(w: Workspace): string {
  return `created ${w.name} (${w.id}) from ${w.image}${w.project ? `, with ${projectOrigin(w.project)} in ${w.project.path}` : ''}`;
}

function describeMerge(r: MergeResult): string {
  if (r.conflicts.length > 0) return `nothing written: ${r.conflicts.length} conflict(s) left unsettled`;
  if (!r.merged) return 'nothing to merge';
  return `${r.changes.length} file(s) under ${r.scope}; before the merge it is version ${r.version}`;
}

function describeExport(r: ExportResult): string {
  return `commit ${r.commit.slice(0, 12)} on ${r.parent.slice(0, 12)}, ${r.files} file(s), branch ${r.branch}`;
}

/**
 * What an export of the branch would commit, as a patch: the helper writes
 * it (as this app's person) into a folder of the controller's own, which is
 * read up to REVIEW_PATCH_BYTES and removed.
 */
async function reviewExport(c: HelperClient, ws: string, since: string | undefined): Promise<RequestResult<'branch.exportReview'>> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'grove-review-'));
  try {
    const file = path.join(dir, 'export.patch');
    const made = await c.request('branch.export', { workspace: ws, to: { kind: 'patch', file }, since });
    const fh = await open(file, 'r');
    try {
      const { size } = await fh.stat();
      const { buffer, bytesRead } = await fh.read(Buffer.alloc(Math.min(size, REVIEW_PATCH_BYTES)), 0, Math.min(size, REVIEW_PATCH_BYTES), 0);
      return { patch: buffer.subarray(0, bytesRead).toString('utf8'), cut: size > REVIEW_PATCH_BYTES, files: made.files, parent: made.parent };
    } finally {
      await fh.close();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function describePolicy(p: EgressPolicy): string {
  return `${p.mode}${p.allow.length ? `, allow ${p.allow.map(formatRule).join(' ')}` : ''}${p.holdMutating ? ', hold mutating' : ''}`;
}

function now(): string {
  return new Date().toISOString();
}
