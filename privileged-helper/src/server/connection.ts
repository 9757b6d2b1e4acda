// One client connection: newline-delimited JSON in both directions. Every line
// is checked in order — size, JSON, envelope, handshake, method, params — and a
// failure at any step is answered with a typed error while the connection (and
// the helper) keep serving.
import type net from 'node:net';
import { z } from 'zod';
import { events as eventSchemas, PRIVATE_TOPICS, type Topic } from '../protocol/events.js';
import { LineReader } from '../protocol/line-reader.js';
import { isMethodName, methods, PROTOCOL_VERSION, type MethodName } from '../protocol/methods.js';
import { GroveError, MAX_MESSAGE_BYTES, RequestEnvelope } from '../protocol/wire.js';
import type { EventListener } from './event-bus.js';
import { AUDITED, type Handlers, type Services } from './handlers.js';

export const HELPER_VERSION = '0.1.0';

export class Connection implements EventListener {
  private readonly reader = new LineReader(MAX_MESSAGE_BYTES);
  private actor: string | null = null;
  private topics: Set<string> | 'all' | null = null;

  constructor(
    private readonly socket: net.Socket,
    private readonly services: Services,
    private readonly handlers: Handlers,
    private readonly log: (msg: string) => void,
  ) {
    socket.on('data', (chunk: Buffer) => {
      for (const item of this.reader.push(chunk)) {
        if (item.kind === 'oversized') {
          this.send({ id: null, error: new GroveError('E_TOO_LARGE', `message of ${item.bytes} bytes exceeds ${MAX_MESSAGE_BYTES}`).toBody() });
        } else {
          void this.handleLine(item.text);
        }
      }
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

  deliver(topic: Topic, seq: number, data: unknown): void {
    this.send({ event: topic, seq, data: eventSchemas[topic].parse(data) });
  }

  private async handleLine(text: string): Promise<void> {
    let id: string | number | null = null;
    try {
      const envelope = RequestEnvelope.safeParse(parseJson(text));
      if (!envelope.success) throw new GroveError('E_INVALID_REQUEST', `expected {id, method, params}: ${z.prettifyError(envelope.error)}`);
      id = envelope.data.id;
      const result = await this.dispatch(envelope.data.method, envelope.data.params ?? {});
      this.send({ id, result });
    } catch (err) {
      this.send({ id, error: toGroveError(err, this.log).toBody() });
    }
  }

  private async dispatch(method: string, rawParams: unknown): Promise<unknown> {
    if (!isMethodName(method)) throw new GroveError('E_UNKNOWN_METHOD', `unknown method '${method}'`);
    const params = parseParams(method, rawParams);
    if (method === 'hello') return this.hello(params as z.infer<(typeof methods)['hello']['params']>);
    if (this.actor === null) throw new GroveError('E_HANDSHAKE_REQUIRED', 'send hello before any other request');
    if (method === 'events.subscribe') {
      const p = params as z.infer<(typeof methods)['events.subscribe']['params']>;
      this.topics = p.topics ? new Set(p.topics) : 'all';
      this.services.bus.add(this);
      return { seq: this.services.bus.lastSeq };
    }
    const handler = this.handlers[method] as (p: unknown, ctx: { connection: EventListener; actor: string }) => Promise<unknown>;
    const actor = this.actor;
    try {
      const result = methods[method].result.parse(await handler(params, { connection: this, actor }));
      if (AUDITED.has(method)) this.services.registry.audit({ actor, action: method, target: targetOf(params), outcome: 'ok' });
      return result;
    } catch (err) {
      if (AUDITED.has(method)) {
        this.services.registry.audit({ actor, action: method, target: targetOf(params), outcome: 'error', detail: String((err as Error).message) });
      }
      throw err;
    }
  }

  private hello(p: z.infer<(typeof methods)['hello']['params']>) {
    if (p.protocol !== PROTOCOL_VERSION) {
      throw new GroveError('E_PROTOCOL_VERSION', `this helper speaks protocol ${PROTOCOL_VERSION}, the client ${p.protocol}`);
    }
    this.actor = `${p.client.kind}:${p.client.name}`;
    return { protocol: PROTOCOL_VERSION, helperVersion: HELPER_VERSION, epoch: this.services.bus.epoch, capabilities: Object.keys(methods) };
  }

  private send(message: object): void {
    if (!this.socket.writable) return;
    this.socket.write(`${JSON.stringify(message)}\n`);
  }
}

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

function targetOf(params: unknown): string | undefined {
  const p = params as { workspace?: string; name?: string };
  return p.workspace ?? p.name;
}

function toGroveError(err: unknown, log: (msg: string) => void): GroveError {
  if (err instanceof GroveError) return err;
  log(`internal error: ${(err as Error)?.stack ?? String(err)}`);
  return new GroveError('E_INTERNAL', `internal error: ${(err as Error)?.message ?? String(err)}`);
}
