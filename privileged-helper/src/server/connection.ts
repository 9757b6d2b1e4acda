// One client connection: newline-delimited JSON in both directions. Every line
// is checked in order — size, JSON, envelope, handshake, method, params,
// authority — and a failure at any step is answered with a typed error while
// the connection (and the helper) keep serving. The caller's identity was
// derived from the kernel's peer credentials before the first line was read.
// What the connection starts (terminals, runs, its subscription) ends when it
// closes, and a client that does not read gets back-pressure (outgoing.ts).
import type net from 'node:net';
import { z } from 'zod';
import { AUTHORITY, authorize, CLAIMING } from '../auth/authority.js';
import { ScopeGuard } from '../auth/scope-guard.js';
import type { AgentAccount } from '../auth/scopes.js';
import { events as eventSchemas, PRIVATE_TOPICS, type Topic } from '../protocol/events.js';
import { describeActor, type Actor } from '../protocol/identity.js';
import { LineReader } from '../protocol/line-reader.js';
import { isMethodName, methods, PROTOCOL_VERSION, type MethodName } from '../protocol/methods.js';
import { GroveError, MAX_MESSAGE_BYTES, RequestEnvelope } from '../protocol/wire.js';
import { callers } from './caller.js';
import type { EventListener } from './event-bus.js';
import type { Handlers, Services } from './handlers.js';
import { Outgoing, OUTGOING_LIMIT_BYTES } from './outgoing.js';
import { Turns } from './turns.js';

export const HELPER_VERSION = '0.2.0';

export class Connection implements EventListener {
  private readonly reader = new LineReader(MAX_MESSAGE_BYTES);
  private readonly outgoing: Outgoing;
  /** While any request waits its turn, no more is read (turns.ts). */
  private readonly turns: Turns;
  private greeted = false;
  private topics: Set<string> | 'all' | null = null;

  constructor(
    private readonly socket: net.Socket,
    private readonly actor: Actor,
    /** The peer's uid and gids (for agents' scopes). */
    private readonly account: AgentAccount,
    private readonly services: Services,
    private readonly handlers: Handlers,
    private readonly log: (msg: string) => void,
  ) {
    this.turns = new Turns((waiting) => {
      if (waiting) socket.pause();
      else if (!socket.writableNeedDrain) socket.resume(); // a full socket resumes reading at its drain (outgoing.ts)
    });
    this.outgoing = new Outgoing(socket, OUTGOING_LIMIT_BYTES, (unread) =>
      log(
        `disconnecting ${describeActor(actor)} [${actor.client || actor.process}, pid ${actor.pid}]: ${unread} bytes of replies and events unread, over the limit of ${OUTGOING_LIMIT_BYTES}`,
      ),
    );
    socket.on('data', (chunk: Buffer) => {
      if (socket.destroyed) return; // lines still buffered at the close: a subscription made now would never end
      for (const item of this.reader.push(chunk)) {
        if (item.kind === 'oversized') {
          this.send({ id: null, error: new GroveError('E_TOO_LARGE', `message of ${item.bytes} bytes exceeds ${MAX_MESSAGE_BYTES}`).toBody() });
        } else {
          void this.handleLine(item.text);
        }
      }
      // A drain of the outgoing side resumes reading whatever waits here: one chunk, then no more.
      if (this.turns.waitingCount > 0) socket.pause();
    });
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      services.bus.remove(this);
      services.exec.closeAll(this);
    });
  }

  wants(topic: Topic): boolean {
    if (PRIVATE_TOPICS.has(topic) || this.topics === null) return false;
    return this.topics === 'all' || this.topics.has(topic);
  }

  deliver(topic: Topic, seq: number, data: unknown, by: Actor | undefined): void {
    const parsed = eventSchemas[topic].parse(data);
    if (this.scopeGuard()?.allows(topic, parsed) === false) return;
    this.send(by ? { event: topic, seq, data: parsed, by } : { event: topic, seq, data: parsed });
  }

  private async handleLine(text: string): Promise<void> {
    let id: string | number | null = null;
    try {
      const envelope = RequestEnvelope.safeParse(parseJson(text));
      if (!envelope.success) throw new GroveError('E_INVALID_REQUEST', `expected {id, method, params}: ${z.prettifyError(envelope.error)}`);
      id = envelope.data.id;
      const done = await this.turns.take(envelope.data.method);
      try {
        const result = await this.dispatch(envelope.data.method, envelope.data.params ?? {});
        this.send({ id, result });
      } finally {
        done();
      }
    } catch (err) {
      this.send({ id, error: toGroveError(err, this.log).toBody() });
    }
  }

  private async dispatch(method: string, rawParams: unknown): Promise<unknown> {
    if (!isMethodName(method)) throw new GroveError('E_UNKNOWN_METHOD', `unknown method '${method}'`);
    const params = parseParams(method, rawParams);
    if (method === 'hello') return this.hello(params as z.infer<(typeof methods)['hello']['params']>);
    if (!this.greeted) throw new GroveError('E_HANDSHAKE_REQUIRED', 'send hello before any other request');
    if (method === 'events.subscribe') {
      const p = params as z.infer<(typeof methods)['events.subscribe']['params']>;
      this.topics = p.topics ? new Set(p.topics) : 'all';
      this.services.bus.add(this);
      return { seq: this.services.bus.lastSeq };
    }
    const actor = this.actor;
    const target = targetOf(params);
    const audited = AUTHORITY[method].audit;
    let grant: string | null;
    // An agent's scope as it stands at this call: a revocation holds from the next call on.
    const guard = this.scopeGuard();
    try {
      // What only a person may do is refused as such, whatever it names; anything else an agent names must be in its
      // scope before the authority check speaks of it (its refusals name the branch).
      if (AUTHORITY[method].agent.rule !== 'person') guard?.check(method, params as object);
      grant = authorize(actor, method, params as { workspace?: unknown }, this.services.authority).grant;
    } catch (err) {
      if (audited) this.services.audit.record(actor, method, target, 'error', (err as Error).message);
      throw err;
    }
    const handler = this.handlers[method] as (p: unknown, ctx: { connection: EventListener; actor: Actor }) => Promise<unknown>;
    return callers.during(actor, async () => {
      try {
        const answer = await handler(params, { connection: this, actor });
        const result = methods[method].result.parse(guard ? guard.filter(method, answer) : answer);
        if (CLAIMING.has(method)) this.claim((params as { workspace: string }).workspace, grant);
        if (audited) this.services.audit.record(actor, method, target, 'ok', grant ? `allowed by grant ${grant}` : null);
        return result;
      } catch (err) {
        if (audited) this.services.audit.record(actor, method, target, 'error', String((err as Error).message));
        // An operation that changes something, or any the host failed, says why in the log too: a failure that
        // depends on timing is explained there, next to what the helper did around it.
        if (audited || (err instanceof GroveError && HOST_FAILURES.has(err.code))) {
          this.log(
            `${method}${target ? ` ${target}` : ''} by ${describeActor(actor)} failed: ${err instanceof GroveError ? err.code : 'E_INTERNAL'}: ${(err as Error).message}`,
          );
        }
        throw err;
      }
    });
  }

  /** Null for a person: persons see everything. */
  private scopeGuard(): ScopeGuard | null {
    if (this.actor.role !== 'agent') return null;
    const { registry, approvals, scopes } = this.services;
    return new ScopeGuard({ registry, approval: (id) => approvals.get(id) }, scopes.viewOf(this.account), this.actor, this.account);
  }

  /** A person acted on the branch (or let an agent, by a standing approval): it is that person's now (auth/authority.ts). */
  private claim(ref: string, grant: string | null): void {
    const { registry } = this.services;
    const person = this.actor.role === 'person' ? this.actor : grant ? registry.grants().find((g) => g.id === grant)?.grantedBy : undefined;
    const branch = registry.findWorkspace(ref);
    if (person && branch) registry.claimWorkspace(branch.id, person);
  }

  private hello(p: z.infer<(typeof methods)['hello']['params']>) {
    if (p.protocol !== PROTOCOL_VERSION) {
      throw new GroveError('E_PROTOCOL_VERSION', `this helper speaks protocol ${PROTOCOL_VERSION}, the client ${p.protocol}`);
    }
    this.actor.client = `${p.client.kind}:${p.client.name}`;
    this.greeted = true;
    return {
      protocol: PROTOCOL_VERSION,
      helperVersion: HELPER_VERSION,
      epoch: this.services.bus.epoch,
      capabilities: Object.keys(methods),
      identity: this.actor,
    };
  }

  private send(message: object): void {
    this.outgoing.send(`${JSON.stringify(message)}\n`);
  }
}

/** Failures of the host rather than of the request: logged whatever the method. */
const HOST_FAILURES = new Set(['E_HOST', 'E_NO_SPACE']);

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new GroveError('E_PARSE', 'the message is not valid JSON');
  }
}

function parseParams(method: MethodName, raw: unknown): unknown {
  const parsed = methods[method].params.safeParse(raw);
  if (!parsed.success) throw new GroveError('E_INVALID_PARAMS', `${method}: ${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

function targetOf(params: unknown): string | null {
  const p = params as { workspace?: string; name?: string; id?: string; grant?: string; session?: string; version?: string };
  return p.workspace ?? p.name ?? p.id ?? p.grant ?? p.session ?? p.version ?? null;
}

function toGroveError(err: unknown, log: (msg: string) => void): GroveError {
  if (err instanceof GroveError) return err;
  log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
  return new GroveError('E_INTERNAL', `internal error: ${(err as Error)?.message ?? String(err)}`);
}
