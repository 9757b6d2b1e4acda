// The one typed API between the app's renderer and its controller: request
// name → (params, result) and event name → payload, as zod schemas. Both ends
// import this file and validate what they receive with it. It must stay free
// of Node imports: the renderer bundles it for the browser.
import { z } from 'zod';
// Requests that pass straight through to the helper keep the helper's own definitions.
import { methods as helper } from '../../../privileged-helper/src/protocol/methods.js';
import { TreeDiff } from '../../../privileged-helper/src/protocol/diff.js';
import { AgentRequestKind, Approval, ApprovalState, Grant, OPEN_STATES } from '../../../privileged-helper/src/protocol/approvals.js';
import { Point, ScreenSize, Screenshot } from '../../../privileged-helper/src/protocol/desktop.js';
import { Actor, Maker } from '../../../privileged-helper/src/protocol/identity.js';
import {
  EgressChange,
  EgressLogEntry,
  EgressMode,
  EgressPolicy,
  EgressRule,
  EgressStatus,
  ExportResult,
  ForkReport,
  Image,
  OldMainFate,
  PerfReport,
  PickResult,
  PoolSpace,
  SpaceReport,
  Version,
  Workspace,
} from '../../../privileged-helper/src/protocol/entities.js';
import { MergeConflict, MergeRequest, MergeResult } from '../../../privileged-helper/src/protocol/merge.js';
import { HostPath, Id, ImageName, WorkspaceRef } from '../../../privileged-helper/src/protocol/names.js';
import type { Scope, ScopeWho } from '../../../privileged-helper/src/protocol/scopes.js';

export {
  Actor,
  AgentRequestKind,
  Approval,
  ApprovalState,
  EgressChange,
  EgressLogEntry,
  EgressMode,
  EgressPolicy,
  EgressRule,
  EgressStatus,
  Grant,
  Image,
  Maker,
  MergeConflict,
  MergeResult,
  OldMainFate,
  OPEN_STATES,
  TreeDiff,
  Version,
  Workspace,
};
export type { ApprovalAction, HeldConnection } from '../../../privileged-helper/src/protocol/approvals.js';
export type { Point, ScreenSize, Screenshot };
export type { Scope, ScopeWho };
export type { ExportResult, ForkReport, PerfReport, PoolSpace, SpaceReport };

/** The controller's link to the helper: anything but 'connected' means the state shown is not live. */
export const Connection = z.strictObject({
  status: z.enum(['connecting', 'connected', 'disconnected']),
  /** The helper's epoch (new after every helper restart); null before the first hello. */
  epoch: z.string().nullable(),
  /** Why the controller is not connected, in words. */
  error: z.string().nullable(),
  since: z.string(),
  /** Who the helper takes this app for (a person, from the kernel's credentials); null before the first hello. */
  identity: Actor.nullable(),
});
export type Connection = z.infer<typeof Connection>;

export const OperationKind = z.enum([
  'image.build',
  'image.pull',
  'image.remove',
  'workspace.create',
  'workspace.start',
  'workspace.stop',
  'branch.discard',
  'branch.fork',
  'branch.checkpoint',
  'branch.rollback',
  'branch.promote',
  'branch.pick',
  'branch.merge',
  'branch.export',
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
   * you: done in this app (its own connection to the helper). person, agent:
   * another client, as the helper identified it from the kernel (`who`).
   * helper: the helper on its own (a policy verdict, a timeout). controller:
   * the app's own link to the helper.
   */
  actor: z.enum(['you', 'person', 'agent', 'helper', 'controller']),
  /** The person or agent, for those actors; null otherwise. */
  who: Maker.nullable(),
  action: z.string(),
  target: z.string().nullable(),
  outcome: z.enum(['started', 'ok', 'failed', 'info']),
  detail: z.string(),
  /** The same thing done again and again (an agent typing) is one entry: how many times. */
  count: z.number().int().positive(),
});
export type ActivityEntry = z.infer<typeof ActivityEntry>;

/** One thing an agent did on a branch: a desktop action or an audited call. */
export const AgentAction = z.strictObject({
  by: Maker,
  /** The desktop action's kind, or the audited method. */
  action: z.string(),
  /** What it is doing, as the tree says it: 'typing', 'looking at the screen', 'running a command'. */
  doing: z.string(),
  /** The helper's words: 'double click left at 120,340', 'type 12 characters'. */
  summary: z.string(),
  /** The pointer after a desktop action, in screen pixels, and the screen's size (null when it did not touch the pointer). */
  cursor: Point.nullable(),
  screen: ScreenSize.nullable(),
  ok: z.boolean(),
  at: z.string(),
});
export type AgentAction = z.infer<typeof AgentAction>;

/** How many recently decided requests the state keeps, and how many agent actions per branch. */
export const MAX_DECIDED = 20;
export const MAX_AGENT_ACTIONS = 8;
/** How many lines of an image's last build or pull the controller keeps (and the renderer shows). */
export const MAX_IMAGE_LOG_LINES = 2000;

/** One line of an image operation's output (buildah's, skopeo's, or the helper's own words). */
export const ImageLogLine = z.strictObject({
  /** Grows across every image's log: which of two copies of a line is newer. */
  seq: z.number().int(),
  stage: z.string(),
  message: z.string(),
  at: z.string(),
});
export type ImageLogLine = z.infer<typeof ImageLogLine>;

/** The output of an image's latest build or pull (or a push with the CLI: a new one starts a new log), oldest line first. */
export const ImageLog = z.strictObject({
  /** The helper's job: one build, pull or push. */
  job: z.string(),
  lines: z.array(ImageLogLine).max(MAX_IMAGE_LOG_LINES),
});
export type ImageLog = z.infer<typeof ImageLog>;

export const AppState = z.strictObject({
  connection: Connection,
  branches: z.array(Workspace),
  versions: z.array(Version),
  images: z.array(Image),
  operations: z.array(Operation),
  activity: z.array(ActivityEntry),
  /**
   * The approvals queue: requests only a person decides (agents' requests,
   * connections the egress gate holds) that are open (pending, or approved and
   * being carried out), oldest first. Kept live from the helper's approval.*
   * events, read again with approval.list after every reconnect.
   */
  approvals: z.array(Approval),
  /** Requests closed lately (done, failed, denied, expired, …), newest first, without their thumbnails. */
  decided: z.array(Approval).max(MAX_DECIDED),
  /** Standing approvals: kinds of request agents may do in a workspace without asking. */
  grants: z.array(Grant),
  /** What agents did lately on each branch (by branch id), oldest first. */
  agents: z.record(Id, z.array(AgentAction).max(MAX_AGENT_ACTIONS)),
  /** The pool's space as last heard (on connect, then from pool.space events); null before. */
  pool: PoolSpace.nullable(),
  /**
   * How this app shows a branch's desktop: its Selkies stream, framed from
   * the app's own /stream/ID/ (`grove app --web`, over HTTPS: docs/stream.md),
   * or noVNC over the app's WebSocket (`--stream vnc`, and the Electron shell).
   */
  desktopView: z.enum(['stream', 'vnc']),
});
export type AppState = z.infer<typeof AppState>;

const Empty = z.strictObject({});
const ByBranch = z.strictObject({ workspace: WorkspaceRef });
const TermSize = { cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(500) };
const Session = z.string().regex(/^s[0-9]+$/);
/** How much of an export's patch a review shows (the export itself takes all of it). */
export const REVIEW_PATCH_BYTES = 1024 * 1024;
/** A version of the branch's workspace an export starts from (the CLI's --since); the workspace's making when left out. */
const ExportSince = { since: Id.optional() };
/** The helper reads at most this much of a Containerfile. */
const MAX_CONTAINERFILE_CHARS = 1 << 20;

export const requests = {
  'state.get': { params: Empty, result: AppState },
  /**
   * Builds an image: Grove's desktop from its recipe, or one from a
   * Containerfile, named by its host path or typed in the app
   * (`containerfileText`: the controller writes it to a private temporary
   * folder for the build, which is also the context unless one is given).
   */
  'image.build': {
    params: helper['image.build'].params
      .extend({ containerfileText: z.string().min(1).max(MAX_CONTAINERFILE_CHARS).optional() })
      .refine((p) => p.containerfile === undefined || p.containerfileText === undefined, 'a Containerfile is either typed or named by its path, not both'),
    result: Image,
  },
  /** From a registry or an archive; a registry that wants credentials: `grove image pull`, which reads the person's auth.json. */
  'image.pull': { params: helper['image.pull'].params.omit({ credentials: true }), result: Image },
  'image.remove': helper['image.remove'],
  /** The output of each image's latest build or pull, by image name (kept live by image.output events). */
  'image.logs': { params: Empty, result: z.record(ImageName, ImageLog) },
  'workspace.create': { params: helper['workspace.create'].params.omit({ ports: true }), result: Workspace },
  'workspace.start': { params: ByBranch, result: Workspace },
  'workspace.stop': { params: ByBranch, result: Workspace },
  'branch.discard': { params: ByBranch, result: z.strictObject({ deleted: z.string() }) },
  'branch.fork': { params: z.strictObject({ workspace: WorkspaceRef, copies: z.number().int().min(1).max(16) }), result: ForkReport },
  'branch.checkpoint': helper['branch.checkpoint'],
  'branch.rollback': helper['branch.rollback'],
  /** oldMain: what becomes of the old main line (the CLI's --old-main; a version by default). */
  'branch.promote': { params: z.strictObject({ workspace: WorkspaceRef, oldMain: OldMainFate.optional() }), result: Workspace },
  /** A race's end as one decision: the winner is promoted, its rivals discarded or kept (one helper transaction, audited once). */
  'branch.pick': { params: helper['branch.pick'].params.omit({ faultAt: true, crash: true }), result: PickResult },
  'branch.diff': helper['branch.diff'],
  /** Brings into a live branch what its sources changed (a dry run first: what it would write, and its conflicts); a person's, done at once. */
  'branch.merge': { params: MergeRequest, result: MergeResult },
  /** A branch's work as a commit on a new branch of a repository on this machine (written as the person running the app). */
  'branch.export': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      repo: HostPath,
      branch: z.string().min(1).max(200),
      /** Replaces a branch of that name (never the one checked out). */
      force: z.boolean().optional(),
      message: z.string().min(1).max(20_000).optional(),
      ...ExportSince,
    }),
    result: ExportResult,
  },
  /**
   * What an export would commit, for a review before it: the commit as a
   * patch (noise left out, as the export leaves it out), made by the helper
   * into a private folder of the controller's, nothing written into any
   * repository; cut at REVIEW_PATCH_BYTES.
   */
  'branch.exportReview': {
    params: z.strictObject({ workspace: WorkspaceRef, ...ExportSince }),
    result: z.strictObject({ patch: z.string(), cut: z.boolean(), files: z.number().int().nonnegative(), parent: z.string() }),
  },
  /** Deletes a checkpoint (a branch made from it keeps its own files). */
  'version.delete': helper['version.delete'],
  /** Names a checkpoint, or renames it ('' takes the name away). */
  'version.label': helper['version.label'],
  /** What agents did in the branch since it was made, with a screenshot every few actions (a promote or export request's "what it did"). */
  'branch.timeline': helper['branch.timeline'],
  /** A small still picture of a running branch's screen (the tree's rows beyond the live ones). */
  'branch.screenshot': { params: z.strictObject({ workspace: WorkspaceRef, scale: z.number().gt(0).max(0.25) }), result: Screenshot },
  /** A branch's egress policy and its firewall's drop counters. */
  'egress.status': { params: ByBranch, result: EgressStatus },
  /** Changes one branch's policy (its forks inherit it when they are made; its source keeps its own). */
  'egress.set': helper['egress.set'],
  /** A person's decision on a request in the queue (always: a held connection's destination joins the branch's allow list). */
  'approval.approve': helper['approval.approve'],
  'approval.deny': helper['approval.deny'],
  /** Lets agents do one kind of request in a workspace (every branch of its tree) without asking, or asks again. */
  'grant.set': helper['grant.set'],
  'grant.revoke': helper['grant.revoke'],
  /** Agents' scopes: the workspaces each agent user (or group) may see and act in, and who may create workspaces. */
  'scope.list': helper['scope.list'],
  'scope.allow': helper['scope.allow'],
  'scope.revoke': helper['scope.revoke'],
  /** The helper's egress log (every attempt and decision), newest last. */
  'egress.log': helper['egress.log'],
  /** Fork history and memory per running branch and of the host (the Performance panel polls it). */
  'perf.get': helper['perf.get'],
  /** What each branch and version holds in the pool: what to delete when it is low. */
  'space.get': helper['space.get'],
  /** A terminal: the branch's own that nobody is attached to (a fork's child has its source's), its scrollback first; else a new shell. */
  'terminal.open': {
    params: z.strictObject({ workspace: WorkspaceRef, ...TermSize }),
    result: z.strictObject({ session: Session, attached: z.string().nullable() }),
  },
  'terminal.write': { params: z.strictObject({ session: Session, data: z.string().max(1 << 20) }), result: Empty },
  'terminal.resize': { params: z.strictObject({ session: Session, ...TermSize }), result: Empty },
  'terminal.close': { params: z.strictObject({ session: Session }), result: Empty },
} as const;

export const events = {
  /** The whole app state, sent on connect and after every change (coalesced). */
  state: AppState,
  /** A line of an image's build or pull as it comes (whoever started it). */
  'image.output': z.strictObject({ image: ImageName, job: z.string(), line: ImageLogLine }),
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
