// The one typed API between the app's renderer and its controller: request
// name → (params, result) and event name → payload, as zod schemas. Both ends
// import this file and validate what they receive with it. It must stay free
// of Node imports: the renderer bundles it for the browser.
import { z } from 'zod';
// Requests that pass straight through to the helper keep the helper's own definitions.
import { methods as helper } from '../../../privileged-helper/src/protocol/methods.js';
import { TreeDiff } from '../../../privileged-helper/src/protocol/diff.js';
import {
  EgressLogEntry,
  EgressMode,
  EgressPolicy,
  EgressRequest,
  EgressRule,
  EgressStatus,
  ForkReport,
  ForkStage,
  Image,
  PerfReport,
  Version,
  Workspace,
} from '../../../privileged-helper/src/protocol/entities.js';
import { ImageName, Name, WorkspaceRef } from '../../../privileged-helper/src/protocol/names.js';

export { EgressLogEntry, EgressMode, EgressPolicy, EgressRequest, EgressRule, EgressStatus, ForkStage, Image, TreeDiff, Version, Workspace };
export type { ForkReport, PerfReport };

/** The controller's link to the helper: anything but 'connected' means the state shown is not live. */
export const Connection = z.strictObject({
  status: z.enum(['connecting', 'connected', 'disconnected']),
  /** The helper's epoch (new after every helper restart); null before the first hello. */
  epoch: z.string().nullable(),
  /** Why the controller is not connected, in words. */
  error: z.string().nullable(),
  since: z.string(),
});
export type Connection = z.infer<typeof Connection>;

export const OperationKind = z.enum([
  'image.build',
  'workspace.create',
  'workspace.start',
  'workspace.stop',
  'branch.discard',
  'branch.fork',
  'branch.checkpoint',
  'branch.rollback',
  'branch.promote',
]);
export type OperationKind = z.infer<typeof OperationKind>;

/** A long action started from the app, with the stages the helper reported as they completed. */
export const Operation = z.strictObject({
  id: z.string(),
  kind: OperationKind,
  /** The branch (or image) acted on, by name. */
  target: z.string(),
  startedAt: z.string(),
  status: z.enum(['running', 'done', 'failed']),
  stages: z.array(z.strictObject({ stage: z.string(), message: z.string(), at: z.string() })),
  error: z.string().nullable(),
  finishedAt: z.string().nullable(),
});
export type Operation = z.infer<typeof Operation>;

export const ActivityEntry = z.strictObject({
  seq: z.number().int(),
  at: z.string(),
  /**
   * person: done in this app. outside: a change the helper reported while the
   * app had nothing running, so another client did it (an agent's CLI, a
   * script). helper: a change reported while an app action ran. controller:
   * the app's own link to the helper. (The helper's audit log, in its
   * registry, knows each client for sure; it has no API yet.)
   */
  actor: z.enum(['person', 'outside', 'helper', 'controller']),
  action: z.string(),
  target: z.string().nullable(),
  outcome: z.enum(['started', 'ok', 'failed', 'info']),
  detail: z.string(),
});
export type ActivityEntry = z.infer<typeof ActivityEntry>;

export const AppState = z.strictObject({
  connection: Connection,
  branches: z.array(Workspace),
  versions: z.array(Version),
  images: z.array(Image),
  operations: z.array(Operation),
  activity: z.array(ActivityEntry),
  /**
   * Requests the egress gate holds for a person's decision (the approvals
   * queue): kept live from the helper's egress.request/egress.decision events,
   * read again with egress.pending after every reconnect.
   */
  approvals: z.array(EgressRequest),
});
export type AppState = z.infer<typeof AppState>;

const Empty = z.strictObject({});
const ByBranch = z.strictObject({ workspace: WorkspaceRef });
const TermSize = { cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(500) };
const Session = z.string().regex(/^s[0-9]+$/);

export const requests = {
  'state.get': { params: Empty, result: AppState },
  'image.build': { params: z.strictObject({ name: ImageName }), result: Image },
  'workspace.create': { params: z.strictObject({ name: Name }), result: Workspace },
  'workspace.start': { params: ByBranch, result: Workspace },
  'workspace.stop': { params: ByBranch, result: Workspace },
  'branch.discard': { params: ByBranch, result: z.strictObject({ deleted: z.string() }) },
  'branch.fork': { params: z.strictObject({ workspace: WorkspaceRef, copies: z.number().int().min(1).max(16) }), result: ForkReport },
  'branch.checkpoint': helper['branch.checkpoint'],
  'branch.rollback': helper['branch.rollback'],
  'branch.promote': { params: ByBranch, result: Workspace },
  'branch.diff': helper['branch.diff'],
  /** A branch's egress policy, its firewall's drop counters and its held requests. */
  'egress.status': { params: ByBranch, result: EgressStatus },
  /** Changes one branch's policy (its forks inherit it when they are made; its source keeps its own). */
  'egress.set': helper['egress.set'],
  /** Lets a held request pass: once, or always for its destination (added to the branch's allow list). */
  'egress.approve': helper['egress.approve'],
  'egress.deny': helper['egress.deny'],
  /** The helper's egress log (every attempt and decision), newest last. */
  'egress.log': helper['egress.log'],
  /** Fork history and memory per running branch and of the host (the Performance panel polls it). */
  'perf.get': helper['perf.get'],
  'terminal.open': { params: z.strictObject({ workspace: WorkspaceRef, ...TermSize }), result: z.strictObject({ session: Session }) },
  'terminal.write': { params: z.strictObject({ session: Session, data: z.string().max(1 << 20) }), result: Empty },
  'terminal.resize': { params: z.strictObject({ session: Session, ...TermSize }), result: Empty },
  'terminal.close': { params: z.strictObject({ session: Session }), result: Empty },
} as const;

export const events = {
  /** The whole app state, sent on connect and after every change (coalesced). */
  state: AppState,
  'terminal.output': z.strictObject({ session: Session, data: z.string() }),
  'terminal.exit': z.strictObject({ session: Session, exitCode: z.number().int(), signal: z.string().nullable() }),
} as const;

export type Requests = typeof requests;
export type RequestName = keyof Requests;
export type RequestParams<R extends RequestName> = z.infer<Requests[R]['params']>;
export type RequestResult<R extends RequestName> = z.infer<Requests[R]['result']>;
export type Events = typeof events;
export type EventName = keyof Events;
export type EventData<E extends EventName> = z.infer<Events[E]>;

export function isRequestName(name: string): name is RequestName {
  return Object.hasOwn(requests, name);
}

// Frames on the API WebSocket (JSON text):
//   renderer → controller  {id, method, params}
//   controller → renderer  {id, result} | {id, error: {code, message}} | {event, data}
export const ApiError = z.strictObject({ code: z.string(), message: z.string() });
export type ApiError = z.infer<typeof ApiError>;
export const RequestFrame = z.strictObject({ id: z.number().int(), method: z.string().max(64), params: z.unknown() });
export const ServerFrame = z.union([
  z.strictObject({ id: z.number().int(), result: z.unknown() }),
  z.strictObject({ id: z.number().int(), error: ApiError }),
  z.strictObject({ event: z.string(), data: z.unknown() }),
]);

/** WebSocket paths the controller serves (each also needs the launch secret). */
export const API_PATH = '/api';
export const vncPath = (branchId: string) => `/vnc/${branchId}`;
export const VNC_PATH_PATTERN = /^\/vnc\/([0-9a-f]{8})$/;
