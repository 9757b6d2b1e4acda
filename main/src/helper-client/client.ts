// Typed client of the privileged helper's socket, used by the CLI and the
// controller. Results and events are validated against the same schemas the
// helper validates with, so a contract drift fails loudly at the boundary.
import { accessSync, constants } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { EventEmitter } from 'node:events';
import { z } from 'zod';
import { events as eventSchemas, type EventPayload, type Topic } from '../../../privileged-helper/src/protocol/events.js';
import type { Actor } from '../../../privileged-helper/src/protocol/identity.js';
import { LineReader } from '../../../privileged-helper/src/protocol/line-reader.js';
import { methods, PROTOCOL_VERSION, type MethodName, type Params, type Result } from '../../../privileged-helper/src/protocol/methods.js';
import { helperSockets } from '../../../privileged-helper/src/protocol/sockets.js';
import { EventEnvelope, GroveError, MAX_MESSAGE_BYTES, MAX_REPLY_BYTES, ResponseEnvelope } from '../../../privileged-helper/src/protocol/wire.js';

export { GroveError };
/** The default helper's sockets (protocol/sockets.ts): the person socket, and the agent socket. */
export const { person: PERSON_SOCKET, agent: AGENT_SOCKET } = helperSockets(process.env);

/** The socket to use: the one given; else the agent socket when asked for or when the person socket is closed to us. */
export function chooseSocket(opts: { socketPath?: string; agent?: boolean }): string {
  if (opts.socketPath) return opts.socketPath;
  if (opts.agent) return AGENT_SOCKET;
  return mayConnect(PERSON_SOCKET) || !mayConnect(AGENT_SOCKET) ? PERSON_SOCKET : AGENT_SOCKET;
}

function mayConnect(socketPath: string): boolean {
  try {
    accessSync(socketPath, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

interface Pending {
  method: MethodName;
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
}

export interface HelloInfo {
  epoch: string;
  helperVersion: string;
  capabilities: string[];
  /** Who the helper takes us for. */
  identity: Actor;
}

export class HelperClient {
  private readonly reader = new LineReader(MAX_REPLY_BYTES);
  private readonly pending = new Map<number, Pending>();
  private readonly emitter = new EventEmitter();
  private nextId = 1;
  /** Why requests fail at once: the connection is closed (a request on it would wait for a reply forever). */
  private closedWith: GroveError | null = null;
  hello: HelloInfo | null = null;

  private constructor(
    private readonly socket: net.Socket,
    /** The socket it connected to. */
    readonly socketPath: string,
  ) {
    this.emitter.setMaxListeners(0);
    socket.on('data', (chunk: Buffer) => {
      for (const item of this.reader.push(chunk)) if (item.kind === 'line') this.onLine(item.text);
    });
    socket.on('close', () => {
      const err = new GroveError('E_HOST', 'the connection to the helper closed');
      this.closedWith ??= err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      this.emitter.emit('close');
    });
    socket.on('error', () => undefined); // surfaced through 'close'
  }

  static async connect(opts: { socketPath?: string; agent?: boolean; name: string; kind: 'cli' | 'app' | 'test' }): Promise<HelperClient> {
    const socketPath = chooseSocket(opts);
    const socket = await new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(socketPath, () => resolve(s));
      s.once('error', (err: NodeJS.ErrnoException) => reject(explainConnectError(err, socketPath)));
    });
    const client = new HelperClient(socket, socketPath);
    const hello = await client.request('hello', { protocol: PROTOCOL_VERSION, client: { name: opts.name, kind: opts.kind } });
    client.hello = hello;
    return client;
  }

  request<M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>> {
    const id = this.nextId++;
    const line = `${JSON.stringify({ id, method, params })}\n`;
    if (this.closedWith) return Promise.reject(this.closedWith);
    if (Buffer.byteLength(line) > MAX_MESSAGE_BYTES) {
      return Promise.reject(new GroveError('E_TOO_LARGE', `${method}: the request exceeds ${MAX_MESSAGE_BYTES} bytes`));
    }
    return new Promise<Result<M>>((resolve, reject) => {
      this.pending.set(id, { method, resolve: resolve as (v: unknown) => void, reject });
      this.socket.write(line);
    });
  }

  async subscribe(topics?: Topic[]): Promise<number> {
    return (await this.request('events.subscribe', topics ? { topics } : {})).seq;
  }

  /** `by` is who caused the event (absent when the helper did on its own). */
  on<T extends Topic>(topic: T, listener: (data: EventPayload<T>, seq: number, by: Actor | undefined) => void): () => void {
    this.emitter.on(topic, listener);
    return () => this.emitter.off(topic, listener);
  }

  onClose(listener: () => void): void {
    this.emitter.on('close', listener);
  }

  close(): void {
    this.closedWith ??= new GroveError('E_HOST', 'this client closed its connection to the helper');
    this.socket.end();
  }

  private onLine(text: string): void {
    const message = JSON.parse(text) as unknown;
    const event = EventEnvelope.safeParse(message);
    if (event.success) {
      const topic = event.data.event as Topic;
      const schema = eventSchemas[topic];
      if (schema) this.emitter.emit(topic, schema.parse(event.data.data), event.data.seq, event.data.by);
      return;
    }
    const response = ResponseEnvelope.parse(message);
    if (response.id === null && 'error' in response) {
      // The helper refused the connection itself (e.g. a peer it does not serve): every call fails with its reason.
      const err = new GroveError(response.error.code, response.error.message);
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
      return;
    }
    const pending = typeof response.id === 'number' ? this.pending.get(response.id) : undefined;
    if (!pending) return; // only replies to lines we never sent carry no id
    this.pending.delete(response.id as number);
    if ('error' in response) {
      pending.reject(new GroveError(response.error.code, response.error.message, response.error.details));
      return;
    }
    const parsed = (methods[pending.method].result as z.ZodType).safeParse(response.result);
    if (parsed.success) pending.resolve(parsed.data);
    else pending.reject(new GroveError('E_INTERNAL', `the helper's reply to ${pending.method} breaks the contract: ${z.prettifyError(parsed.error)}`));
  }
}

function explainConnectError(err: NodeJS.ErrnoException, socketPath: string): GroveError {
  switch (err.code) {
    case 'EACCES':
    case 'EPERM':
      return new GroveError(
        'E_PRECONDITION',
        path.basename(socketPath) === path.basename(AGENT_SOCKET)
          ? `permission denied on ${socketPath}: agents must be members of the 'grove-agent' group`
          : `permission denied on ${socketPath}: only root and members of the 'grove' group may use Grove (agents: the 'grove-agent' group and ${AGENT_SOCKET})`,
      );
    case 'ENOENT':
    case 'ECONNREFUSED':
      return new GroveError('E_PRECONDITION', `the Grove helper is not running (no socket at ${socketPath}); start it with ./start.sh`);
    default:
      return new GroveError('E_HOST', `cannot connect to ${socketPath}: ${err.message}`);
  }
}
