// The gate's deciding side, in the helper: every request a branch's gate
// listener receives (gate-proxy.ts, in its own unprivileged process:
// gate-child.ts) is asked here and decided by the branch's policy: passed,
// refused (403), or held until a person approves or denies it (or it times
// out: 504). A held request waits in the approvals queue, beside every other
// decision a person makes. Every answer and outcome is logged here.
import { NO_PREVIEW, type ApprovalQueue } from '../approvals/approval-queue.js';
import { formatRule } from '../protocol/egress-rules.js';
import type { Approval } from '../protocol/approvals.js';
import type { EgressVerdict } from '../protocol/entities.js';
import type { EventPayload } from '../protocol/events.js';
import type { Actor } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry } from '../registry/registry.js';
import { describeAddress } from './address.js';
import { GateChild, type GateUser } from './gate-child.js';
import type { Admission, FromGate, GateBranch, ProxyTarget } from './gate-protocol.js';
import { decide, editAllowList, parseHostsMap } from './policy.js';

export const DEFAULT_HOLD_TIMEOUT_MS = 120_000;
/** More held requests than this from one branch are refused outright. */
const MAX_PENDING_PER_BRANCH = 200;
const OPEN_TIMEOUT_MS = 15_000;

export interface GateOptions {
  registry: Registry;
  /** Held requests wait here for a person. */
  approvals: ApprovalQueue;
  /** The unprivileged user the gate process runs as. */
  user: GateUser;
  /** Grove's branch subnet (e.g. 10.213.0.0/16): never a destination. */
  subnet: string;
  holdTimeoutMs: number;
  /** Names the gate resolves without DNS (tests), as GROVE_GATE_HOSTS gives them. */
  staticHosts: string | undefined;
  publish: {
    decision(d: EventPayload<'egress.decision'>): void;
  };
  log: (msg: string) => void;
}

type Decision = { verdict: 'approved' | 'rejected' | 'timeout' | 'abandoned'; by: string };

type Opening = { hostAddress: string; answer: Promise<void>; resolve: () => void; reject: (err: Error) => void };

export class EgressGate {
  /** The branches whose listener should be open; opened again whenever the gate process starts again. */
  private readonly branches = new Map<string, GateBranch>();
  private readonly opening = new Map<string, Opening>();
  /** The running gate process's open asks, aborted when it dies. */
  private readonly asks = new Map<number, AbortController>();
  private readonly child: GateChild;

  constructor(private readonly o: GateOptions) {
    parseHostsMap(o.staticHosts); // a bad GROVE_GATE_HOSTS stops the helper's start, not the gate's
    this.child = new GateChild({
      user: o.user,
      env: { GROVE_SUBNET: o.subnet, ...(o.staticHosts ? { GROVE_GATE_HOSTS: o.staticHosts } : {}) },
      onMessage: (m) => this.onMessage(m),
      onReady: () => {
        for (const branch of this.branches.values()) void this.listen(branch).catch((err: Error) => o.log(err.message));
      },
      onExit: () => this.onGateExit(),
      log: o.log,
    });
  }

  /** The gate process's pid while it runs. */
  get pid(): number | null {
    return this.child.pid;
  }

  /** Starts the branch's listener (idempotent); the branch's veth must exist. */
  async open(branch: GateBranch): Promise<void> {
    this.branches.set(branch.id, branch);
    await this.child.start();
    await this.listen(branch);
  }

  /** Stops the branch's listener, ends its connections and its held requests (idempotent). */
  async close(id: string): Promise<void> {
    this.branches.delete(id);
    this.o.approvals.abandonBranch(id, 'the branch stopped');
    this.child.send({ type: 'close', branchId: id });
  }

  /** The helper is stopping: every listener closes with the gate process. */
  async closeAll(): Promise<void> {
    for (const id of [...this.branches.keys()]) await this.close(id);
    this.child.stop();
  }

  /** Asks the gate process to listen for the branch; a second ask while one is on its way waits for the same answer. */
  private listen(branch: GateBranch): Promise<void> {
    const pending = this.opening.get(branch.id);
    if (pending && pending.hostAddress === branch.hostAddress) return pending.answer;
    pending?.reject(new Error('opened again elsewhere'));
    let opening!: Opening;
    const answer = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => settle(new Error('the gate process did not answer')), OPEN_TIMEOUT_MS);
      const settle = (err: Error | null) => {
        clearTimeout(timer);
        if (this.opening.get(branch.id) === opening) this.opening.delete(branch.id);
        if (!err) return resolve();
        reject(new GroveError('E_HOST', `cannot open the egress gate of '${branch.name}': ${err.message}`));
      };
      opening = { hostAddress: branch.hostAddress, answer: Promise.resolve(), resolve: () => settle(null), reject: settle };
    });
    opening.answer = answer;
    this.opening.set(branch.id, opening);
    if (!this.child.send({ type: 'open', branch })) opening.reject(new Error('the gate process is starting again'));
    return answer;
  }

  private onMessage(m: FromGate): void {
    switch (m.type) {
      case 'opened': {
        const opening = this.opening.get(m.branchId);
        if (m.error === null) opening?.resolve();
        else opening?.reject(new Error(m.error));
        return;
      }
      case 'admit':
        return void this.answer(m.ask, m.branchId, m.target, m.method);
      case 'gone':
        return this.asks.get(m.ask)?.abort();
      case 'outcome': {
        const branch = this.branches.get(m.branchId);
        if (branch) this.record(branch, m.target, m.method, null, m.verdict, m.verdict === 'denied' ? 'policy' : 'gate', m.detail);
        return;
      }
      default:
        return;
    }
  }

  /** The gate process died: its listeners and connections are gone, so are the requests they held. */
  private onGateExit(): void {
    for (const opening of this.opening.values()) opening.reject(new Error('the gate process exited'));
    for (const ask of this.asks.values()) ask.abort();
    this.asks.clear();
  }

  private async answer(ask: number, branchId: string, target: ProxyTarget, method: string): Promise<void> {
    const branch = this.branches.get(branchId);
    let admission: Admission;
    if (!branch) {
      admission = { ok: false, status: 403, verdict: 'denied', message: 'Grove gate: this branch is not served\n' };
    } else {
      const gone = new AbortController();
      this.asks.set(ask, gone);
      admission = await this.authorize(branch, target, method, gone.signal);
      if (this.asks.get(ask) !== gone) return; // the gate process that asked is gone
      this.asks.delete(ask);
    }
    this.child.send({ type: 'admission', ask, admission });
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

  /** The policy's (or a person's) answer to one request, logged. */
  private async authorize(branch: GateBranch, target: ProxyTarget, method: string, gone: AbortSignal): Promise<Admission> {
    const dest = { host: target.host, port: target.port, method };
    const refuse = (status: number, verdict: EgressVerdict, by: string, why: string, request: string | null = null): Admission => {
      this.record(branch, target, method, request, verdict, by, why);
      return { ok: false, status, verdict, message: `Grove gate: ${method} ${formatRule(target)} refused: ${why}\n` };
    };
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
        return {
          ok: false,
          status: 403,
          verdict: 'rejected',
          message: `Grove gate: ${method} ${formatRule(target)} was denied by ${d.by}; request ${info.id}\n`,
        };
      }
    } else {
      this.record(branch, target, method, null, 'allowed', 'policy', null);
    }
    return { ok: true };
  }

  private hold(branch: GateBranch, target: ProxyTarget, method: string, reason: 'destination' | 'mutating', gone: AbortSignal) {
    const dest = formatRule(target);
    const what = target.url ? `${method} ${target.url}` : `${method} ${dest}`;
    let settle!: (d: Decision) => void;
    const decision = new Promise<Decision>((resolve) => (settle = resolve));
    let clientGone = false;
    const info = this.o.approvals.open({
      action: { kind: 'egress.connection', host: target.host, port: target.port, method, url: target.url, held: reason, address: describeAddress(target.host) },
      branch: { id: branch.id, name: branch.name, treeId: branch.treeId },
      requestedBy: null,
      reason:
        reason === 'destination' ? `${dest} is not on ${branch.name}'s allow list` : `${method} changes something, and ${branch.name} holds such requests`,
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
    this.o.registry.logEgress({ ...logFields(branch, target, method, info.id), verdict: 'held', decidedBy: 'policy', detail: reason });
    return { info, decision: recorded };
  }

  private allowAlways(workspaceId: string, target: ProxyTarget, by: Actor | null): void {
    const policy = this.o.registry.egressPolicy(workspaceId);
    const allow = editAllowList(policy.allow, [{ host: target.host, port: target.port }], []);
    this.o.registry.setEgressPolicy(workspaceId, { ...policy, allow });
    this.o.log(`egress: ${formatRule(target)} joined the allow list of ${workspaceId} (${actorLabel(by)})`);
  }

  private record(branch: GateBranch, target: ProxyTarget, method: string, request: string | null, verdict: EgressVerdict, by: string, detail: string | null) {
    const entry = { ...logFields(branch, target, method, request), verdict, decidedBy: by, detail };
    try {
      this.o.registry.logEgress(entry);
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
