// The renderer's end of the typed API: one WebSocket to the controller.
// Results and events are validated with the same schemas the controller uses.
import { z } from 'zod';
import {
  API_PATH,
  ServerFrame,
  events,
  requests,
  type EventData,
  type EventName,
  type RequestName,
  type RequestParams,
  type RequestResult,
} from '../../../main/src/api/contract.js';

export class ApiError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface Api {
  request<R extends RequestName>(method: R, params: RequestParams<R>): Promise<RequestResult<R>>;
}

type Listener = (data: unknown) => void;
type LinkListener = (link: 'connecting' | 'open' | 'closed') => void;

export class ApiClient implements Api {
  private ws: WebSocket | null = null;
  private nextId = 1;
  private readonly pending = new Map<number, { method: RequestName; resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly linkListeners = new Set<LinkListener>();
  private retry = 250;
  private closedByUs = false;

  constructor(private readonly url: string = defaultApiUrl()) {}

  connect(): void {
    this.closedByUs = false;
    this.emitLink('connecting');
    const ws = new WebSocket(this.url);
    this.ws = ws;
    ws.onopen = () => {
      this.retry = 250;
      this.emitLink('open');
    };
    ws.onmessage = (m) => this.onFrame(String(m.data));
    ws.onclose = () => {
      for (const p of this.pending.values()) p.reject(new ApiError('E_DISCONNECTED', 'the connection to the Grove app was lost'));
      this.pending.clear();
      this.emitLink('closed');
      if (!this.closedByUs) {
        setTimeout(() => this.connect(), this.retry);
        this.retry = Math.min(this.retry * 2, 5000);
      }
    };
  }

  close(): void {
    this.closedByUs = true;
    this.ws?.close();
  }

  onLink(fn: LinkListener): () => void {
    this.linkListeners.add(fn);
    return () => this.linkListeners.delete(fn);
  }

  on<E extends EventName>(event: E, fn: (data: EventData<E>) => void): () => void {
    let set = this.listeners.get(event);
    if (!set) this.listeners.set(event, (set = new Set()));
    set.add(fn as Listener);
    return () => set.delete(fn as Listener);
  }

  request<R extends RequestName>(method: R, params: RequestParams<R>): Promise<RequestResult<R>> {
    const ws = this.ws;
    if (!ws || ws.readyState !== WebSocket.OPEN) return Promise.reject(new ApiError('E_DISCONNECTED', 'the app is not connected to its controller'));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { method, resolve: resolve as (v: unknown) => void, reject });
      ws.send(JSON.stringify({ id, method, params }));
    });
  }

  private emitLink(link: 'connecting' | 'open' | 'closed'): void {
    for (const fn of this.linkListeners) fn(link);
  }

  private onFrame(text: string): void {
    const frame = ServerFrame.parse(JSON.parse(text));
    if ('event' in frame) {
      const schema = (events as Record<string, z.ZodType>)[frame.event];
      if (!schema) return;
      const data = schema.parse(frame.data);
      for (const fn of this.listeners.get(frame.event) ?? []) fn(data);
      return;
    }
    const p = this.pending.get(frame.id);
    if (!p) return;
    this.pending.delete(frame.id);
    if ('error' in frame) return p.reject(new ApiError(frame.error.code, frame.error.message));
    const parsed = (requests[p.method].result as z.ZodType).safeParse(frame.result);
    if (parsed.success) p.resolve(parsed.data);
    else p.reject(new ApiError('E_CONTRACT', `the controller's reply to ${p.method} breaks the contract`));
  }
}

export function defaultApiUrl(): string {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}${API_PATH}`;
}

export function vncUrl(branchId: string): string {
  const proto = location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${location.host}/vnc/${branchId}`;
}

/** What a request was for, as an error names it: "Could not fork ux-one". */
const ATTEMPT: Partial<Record<RequestName, string>> = {
  'workspace.create': 'create the workspace',
  'workspace.start': 'start',
  'workspace.stop': 'stop',
  'branch.discard': 'discard',
  'branch.fork': 'fork',
  'branch.checkpoint': 'checkpoint',
  'branch.rollback': 'roll back',
  'branch.promote': 'promote',
  'branch.diff': 'compare the files of',
  'branch.merge': 'merge into',
  'branch.export': 'export',
  'branch.exportReview': 'review the export of',
  'version.delete': 'delete the version',
  'version.label': 'name the version',
  'image.build': 'build the image',
  'image.pull': 'pull the image',
  'image.remove': 'remove the image',
  'egress.set': 'change the outside access of',
  'approval.approve': 'approve the request',
  'approval.deny': 'deny the request',
  'grant.set': 'set the standing approval',
  'grant.revoke': 'revoke the standing approval',
};

/**
 * An error in words a person understands: what could not be done, and the
 * helper's own words on why (they name the cause: "a workspace named 'x'
 * already exists"); a generic explanation only where the code adds one.
 */
export function humanError(err: unknown, method?: RequestName, branchName?: string): string {
  const code = err instanceof ApiError ? err.code : '';
  const message = err instanceof Error ? err.message : String(err);
  const attempt = method && ATTEMPT[method];
  const what = attempt ? `Could not ${attempt}${branchName ? ` ${branchName}` : ''}: ` : '';
  switch (code) {
    case 'E_DISCONNECTED':
      return `${what}the app lost its connection to Grove. It reconnects by itself; try again in a moment.`;
    case 'E_BUSY':
      return `${what}another operation is still running on this branch; try again when it finishes.`;
    case 'E_HOST':
      return `${what}a system tool on the host failed (${message}). The helper's log has the details.`;
    case 'E_INTERNAL':
      return `${what}Grove hit an internal error (${message}).`;
    default:
      return `${what}${message}`;
  }
}
