// Every request the helper answers: method name → params schema + result schema.
// The helper validates params against this map before a handler sees them, and
// typed clients derive their signatures from it. Params objects are strict:
// unknown fields are refused, not ignored.
import { z } from 'zod';
import {
  BranchLimits,
  CheckpointStage,
  DiscardStage,
  DoctorReport,
  EgressChange,
  EgressLogEntry,
  EgressPolicy,
  EgressStatus,
  CopyResult,
  ExecResult,
  DetachedRun,
  ExportResult,
  ForkFault,
  ForkReport,
  Image,
  LosersFate,
  OldMainFate,
  PickResult,
  PerfReport,
  PoolSpace,
  PromoteStage,
  RollbackStage,
  SpaceReport,
  Version,
  Workspace,
} from './entities.js';
import { AgentRequestAction, AgentRequestKind, Approval, ApprovalId, AuditEntry, Grant, GrantId } from './approvals.js';
import {
  FrameToken,
  MAX_HOLD_MS,
  MAX_TRANSFER_BYTES,
  MAX_TYPED_CHARS,
  MAX_ZOOM_SIDE,
  MouseButton,
  Point,
  PointerState,
  Region,
  Screenshot,
  WaitCondition,
  WaitResult,
  WindowList,
} from './desktop.js';
import { Actor, Role } from './identity.js';
import { AccountName, Scope, ScopeChange, ScopeWho } from './scopes.js';
import { ImageRef, RegistryRef } from './image-refs.js';
import { TreeDiff } from './diff.js';
import { Timeline } from './timeline.js';
import { MergeRequest, MergeResult, MergeStage } from './merge.js';
import { BranchPath, HostPath, Id, ImageName, Name, Port, WorkspaceRef } from './names.js';

/** 2: identities from peer credentials, the approvals queue, the computer-use API. */
export const PROTOCOL_VERSION = 2;

const Empty = z.strictObject({});
const ByWorkspace = z.strictObject({ workspace: WorkspaceRef });

/** argv for a command inside a workspace: a program and its arguments, no shell. */
const Argv = z
  .array(
    z
      .string()
      .max(4096)
      .refine((s) => !s.includes('\0'), 'NUL in argument'),
  )
  .min(1)
  .max(256);
const EnvVars = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'bad environment variable name'), z.string().max(4096));
const TermSize = { cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(500) };
const SessionId = z.string().regex(/^s[0-9]+$/);
const Coordinate = Point.shape.x;
/** Where a pointer action happens; the current pointer position when left out. */
const At = { x: Coordinate.optional(), y: Coordinate.optional() };
const Note = z.string().max(2000);
/** A point in time, e.g. 2026-01-31T09:00:00Z or with an offset (+01:00). */
const Time = z.iso.datetime({ offset: true });
/** What becomes of a workspace's versions when its last branch is deleted (see workspace.delete). */
/**
 * Tests only (the helper refuses them unless started with
 * GROVE_FAULT_INJECTION=1): the operation fails right after the stage
 * faultAt, or with crash the helper dies there (SIGKILL), for the tests of
 * what the next start finishes or undoes.
 */
function testFault<S extends z.ZodType>(stages: S) {
  return { faultAt: stages.optional(), crash: z.boolean().optional() };
}

/** How many rivals one pick may settle (a fork makes at most 16 copies). */
export const MAX_PICK_RIVALS = 16;

export const VersionsFate = z.enum(['keep', 'delete']);
export type VersionsFate = z.infer<typeof VersionsFate>;

export const ClientKind = z.enum(['cli', 'app', 'test']);

/** A registry's user name and password or token, for one pull or push: used for that call, never kept or logged. */
const RegistryCredentials = z.strictObject({ username: z.string().min(1).max(256), password: z.string().min(1).max(8192) });
const BuildArgs = z.record(
  z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'bad build argument name')
    .max(128),
  z.string().max(4096),
);

export const methods = {
  hello: {
    params: z.strictObject({
      protocol: z.number().int(),
      client: z.strictObject({ name: z.string().min(1).max(64), kind: ClientKind }),
    }),
    result: z.strictObject({
      protocol: z.number().int(),
      helperVersion: z.string(),
      epoch: z.string(),
      capabilities: z.array(z.string()),
      /** Who the helper takes this connection for (from the kernel's peer credentials). */
      identity: Actor,
    }),
  },
  'events.subscribe': {
    params: z.strictObject({ topics: z.array(z.string()).max(64).optional() }),
    result: z.strictObject({ seq: z.number().int() }),
  },
  'host.doctor': { params: Empty, result: DoctorReport },
  'image.list': { params: Empty, result: z.array(Image) },
  /**
   * Builds an image: Grove's desktop from its recipe (no containerfile), or
   * any image from a Containerfile with buildah; the files are read as the
   * caller, and each step's output comes as progress events.
   */
  'image.build': {
    params: z.strictObject({
      name: ImageName,
      rebuild: z.boolean().optional(),
      containerfile: HostPath.optional(),
      /** The build context (default: the Containerfile's folder). */
      context: HostPath.optional(),
      buildArgs: BuildArgs.optional(),
    }),
    result: Image,
  },
  /** Pulls an image from a registry or an archive (archives are read as the caller). */
  'image.pull': {
    params: z.strictObject({ name: ImageName, ref: ImageRef, credentials: RegistryCredentials.optional() }),
    result: Image,
  },
  /** Pushes an image to a registry. */
  'image.push': {
    params: z.strictObject({ name: ImageName, ref: RegistryRef, credentials: RegistryCredentials.optional() }),
    result: z.strictObject({ ref: z.string(), digest: z.string() }),
  },
  /** Removes an image; refused while a branch or a version uses it. */
  'image.remove': { params: z.strictObject({ name: ImageName }), result: z.strictObject({ removed: ImageName }) },
  'workspace.create': {
    params: z.strictObject({
      name: Name,
      image: ImageName.optional(),
      /** Container ports to map to 127.0.0.1 in addition to the dev port (3000); the desktop (5900) has its own socket. */
      ports: z.array(Port).max(16).optional(),
      /** A host folder to copy into it (read as the caller), at `path` (default /root/work). */
      project: z.strictObject({ hostPath: HostPath, path: BranchPath.optional() }).optional(),
      /** Keep its memory out of KSM: no page-content side channel with other workspaces (its forks inherit it). */
      sensitive: z.boolean().optional(),
    }),
    result: Workspace,
  },
  'workspace.list': { params: Empty, result: z.array(Workspace) },
  'workspace.get': { params: ByWorkspace, result: Workspace },
  'workspace.start': { params: ByWorkspace, result: Workspace },
  'workspace.stop': { params: ByWorkspace, result: Workspace },
  /**
   * Deletes a branch. Versions belong to the workspace (the tree): they stay
   * while it has other branches; with its last branch they are deleted
   * (default for a person) or kept as orphans (`keep`; always for an agent:
   * only persons delete versions).
   */
  'workspace.delete': {
    params: z.strictObject({ workspace: WorkspaceRef, versions: VersionsFate.optional(), ...testFault(DiscardStage) }),
    result: z.strictObject({
      deleted: z.string(),
      /** When it was its workspace's last branch and the workspace had versions: what became of them. */
      versions: z.strictObject({ deleted: z.array(Id), kept: z.array(Id) }).optional(),
    }),
  },
  /** Changes a branch's resource limits (fields left out stay); applied at once while it runs; its forks inherit them. */
  'workspace.limits': { params: BranchLimits.partial().extend({ workspace: WorkspaceRef }), result: Workspace },
  'branch.fork': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      copies: z.number().int().min(1).max(16),
      /** Names for the children (default: NAME-1, NAME-2, …). */
      names: z.array(Name).max(16).optional(),
      /** Restore the children from this version of the workspace instead of the branch as it runs (which is not touched, and need not run). */
      version: Id.optional(),
      ...testFault(ForkFault),
    }),
    result: ForkReport,
  },
  'branch.checkpoint': {
    params: z.strictObject({ workspace: WorkspaceRef, label: z.string().max(200).optional(), ...testFault(CheckpointStage) }),
    result: Version,
  },
  'branch.rollback': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      version: Id,
      /** Keep what the running branch was as a version ("before rollback to …"), saved in the background. */
      keep: z.boolean().optional(),
      ...testFault(RollbackStage),
    }),
    result: Workspace,
  },
  'branch.promote': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      /** What becomes of the old main line: kept as a version (default), discarded, or kept running as a branch. */
      oldMain: OldMainFate.optional(),
      ...testFault(PromoteStage),
    }),
    result: Workspace,
  },
  /**
   * A race's end, as one decision: `workspace` (the winner) is promoted and
   * `others` (its rivals, branches of the same workspace other than the main
   * line) are discarded or kept; the old main line's fate is oldMain's. All is
   * checked before anything changes; a failure before the first discard
   * switches back as a promotion does.
   */
  'branch.pick': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      others: z.array(WorkspaceRef).min(1).max(MAX_PICK_RIVALS),
      losers: LosersFate,
      oldMain: OldMainFate.optional(),
      ...testFault(PromoteStage),
    }),
    result: PickResult,
  },
  'branch.diff': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      /** The branch to compare with (default: the branch's parent). */
      other: WorkspaceRef.optional(),
      /** Noise too: Grove's own files, and what the project's .gitignore files match (branches/noise.ts). */
      all: z.boolean().optional(),
    }),
    result: TreeDiff,
  },
  /** Copies a host file or folder (read as the caller) into a running branch: `to` is resolved inside the branch. */
  'file.copyIn': { params: z.strictObject({ workspace: WorkspaceRef, from: HostPath, to: BranchPath }), result: CopyResult },
  /** Copies a file or folder of a running branch to the host, written as the caller (persons only). */
  'file.copyOut': { params: z.strictObject({ workspace: WorkspaceRef, from: BranchPath, to: HostPath }), result: CopyResult },
  /**
   * A branch's changes to its project since the workspace was made (or since
   * a version of it: the paths changed since, as they are now), as one
   * commit on the commit it was copied at: on a new branch of a repository,
   * or as a patch file (both written as the caller; persons only).
   */
  'branch.export': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      to: z.discriminatedUnion('kind', [
        z.strictObject({ kind: z.literal('git'), repo: HostPath, branch: z.string().min(1).max(200), force: z.boolean().optional() }),
        z.strictObject({ kind: z.literal('patch'), file: HostPath }),
      ]),
      message: z.string().min(1).max(20_000).optional(),
      /** A version of the branch's workspace: only the paths changed since it. */
      since: Id.optional(),
    }),
    result: ExportResult,
  },
  /**
   * Brings into a live branch what each source changed since the fork point
   * their lines share, file by file (branches/merge.ts); with conflicts left
   * unsettled nothing is written and merged is false.
   */
  'branch.merge': { params: MergeRequest.extend(testFault(MergeStage)), result: MergeResult },
  /** Every version, orphans included, or one workspace's (a deleted workspace's orphans by its former name); oldest first. */
  'version.list': {
    params: z.strictObject({
      workspace: WorkspaceRef.optional(),
      /** Also measure each one's size on disk (du: slower with many versions). */
      sizes: z.boolean().optional(),
    }),
    result: z.array(Version),
  },
  /** Names a version (an empty label takes its name away). */
  'version.label': {
    params: z.strictObject({ version: Id, label: z.string().max(200) }),
    result: Version,
  },
  'version.delete': {
    params: z.strictObject({ version: Id }),
    result: z.strictObject({ deleted: Id }),
  },
  'exec.run': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      argv: Argv,
      env: EnvVars.optional(),
      cwd: z.string().startsWith('/').max(1024).optional(),
      stdin: z
        .string()
        .max(1 << 20)
        .optional(),
      timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
    }),
    result: ExecResult,
  },
  /** The runs detached in the branch (the copies a fork or rollback made of runs under way), or one of them with its output's newest part. */
  'exec.log': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      run: z
        .string()
        .regex(/^e[0-9a-f]{8}$/)
        .optional(),
    }),
    result: z.strictObject({ runs: z.array(DetachedRun), output: z.string().nullable() }),
  },
  /** The terminals held in the branch, and whether a session is attached to each: a fork's child has its source's, detached. */
  'exec.terminals': {
    params: z.strictObject({ workspace: WorkspaceRef }),
    result: z.strictObject({ terminals: z.array(z.strictObject({ id: z.string().regex(/^t[0-9a-f]{8}$/), attached: z.boolean() })) }),
  },
  'exec.open': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      argv: Argv.optional(),
      env: EnvVars.optional(),
      /** A terminal already in the branch to attach to (a fork's report names its copies), instead of a new one. */
      attach: z
        .string()
        .regex(/^t[0-9a-f]{8}$/)
        .optional(),
      ...TermSize,
    }),
    result: z.strictObject({ session: SessionId }),
  },
  'exec.write': {
    params: z.strictObject({ session: SessionId, data: z.string().max(1 << 20) }),
    result: z.strictObject({}),
  },
  'exec.resize': {
    params: z.strictObject({ session: SessionId, ...TermSize }),
    result: z.strictObject({}),
  },
  'exec.close': {
    params: z.strictObject({ session: SessionId }),
    result: z.strictObject({}),
  },
  'egress.status': { params: ByWorkspace, result: EgressStatus },
  'egress.set': {
    params: EgressChange.extend({ workspace: WorkspaceRef }),
    result: EgressPolicy,
  },
  'egress.log': {
    params: z.strictObject({ workspace: WorkspaceRef.optional(), limit: z.number().int().min(1).max(10_000).optional() }),
    result: z.array(EgressLogEntry),
  },
  /** Fork history and memory per running branch and of the host; cheap enough to poll every few seconds. */
  /** What agents did in the branch since it was made, with a screenshot every few actions (persons only). */
  'branch.timeline': { params: ByWorkspace, result: Timeline },
  'perf.get': { params: Empty, result: PerfReport },
  /** Measures every branch's and version's files (a few seconds with many): for a person's listing, not for polling. */
  'space.get': { params: Empty, result: SpaceReport },
  /** The pool's free space only (one statfs): cheap enough to ask on every connect. */
  'space.pool': { params: Empty, result: PoolSpace },
  /** The host's certificate and key the controller serves branches' streams with over HTTPS, and the local CA that signed it (docs/stream.md). */
  'stream.tls': { params: Empty, result: z.strictObject({ cert: z.string(), key: z.string(), ca: z.string() }) },

  // The approvals queue: requests only a person decides.
  'approval.list': {
    params: z.strictObject({ workspace: WorkspaceRef.optional(), all: z.boolean().optional() }),
    /** Open requests (pending or being carried out), oldest first; with all, recently closed ones too. */
    result: z.array(Approval),
  },
  'approval.get': { params: z.strictObject({ id: ApprovalId }), result: Approval },
  /** An agent asks a person to do something only a person may do; it runs when a person approves it. */
  'approval.create': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      action: AgentRequestAction,
      reason: z.string().trim().min(1, 'say why: the person deciding reads it').max(2000),
      /** How long the request may wait for a decision (default: the helper's, GROVE_APPROVAL_TIMEOUT_MS). */
      timeoutS: z.number().int().min(10).max(86_400).optional(),
    }),
    result: Approval,
  },
  /** Waits until the request is decided and carried out, or timeoutMs passes; answers its state then. */
  'approval.wait': { params: z.strictObject({ id: ApprovalId, timeoutMs: z.number().int().min(0).max(300_000) }), result: Approval },
  /** The agent that asked takes its request back. */
  'approval.withdraw': { params: z.strictObject({ id: ApprovalId }), result: Approval },
  /** A person lets it happen (always: a held connection's destination joins the branch's allow list). */
  'approval.approve': { params: z.strictObject({ id: ApprovalId, always: z.boolean().optional(), note: Note.optional() }), result: Approval },
  'approval.deny': { params: z.strictObject({ id: ApprovalId, note: Note.optional() }), result: Approval },
  'grant.list': { params: z.strictObject({ workspace: WorkspaceRef.optional() }), result: z.array(Grant) },
  /** A person lets agents do one kind of thing in one workspace (every branch of its tree) without asking. */
  'grant.set': { params: z.strictObject({ workspace: WorkspaceRef, kind: AgentRequestKind }), result: Grant },
  'grant.revoke': { params: z.strictObject({ grant: GrantId }), result: Grant },
  /** Agents' scopes: every one (a person), or one's own (an agent); with user, those given to that user by name. */
  'scope.list': { params: z.strictObject({ user: AccountName.optional() }), result: z.array(Scope) },
  /** A person gives an agent user or group workspaces, those of images, or leave to create its own; answers its scopes now. */
  'scope.allow': { params: ScopeChange, result: z.array(Scope) },
  /** Takes back what is named, or everything the user or group has when nothing is; answers what was taken back. */
  'scope.revoke': {
    params: z.strictObject({
      who: ScopeWho,
      workspaces: ScopeChange.shape.workspaces,
      images: ScopeChange.shape.images,
      create: ScopeChange.shape.create,
    }),
    result: z.array(Scope),
  },
  /** Who did what, newest last: the newest `limit` entries (default 500) that match every filter given. */
  'audit.list': {
    params: z
      .strictObject({
        /** Calls about this branch (by id or name; a removed one by the id or name its calls used). */
        workspace: WorkspaceRef.optional(),
        /** Calls by this user name, by this uid, in this role (as the kernel identified the caller). */
        user: z.string().min(1).max(64).optional(),
        uid: z.number().int().nonnegative().optional(),
        role: Role.optional(),
        /** Calls at or after `since` and before `until`. */
        since: Time.optional(),
        until: Time.optional(),
        limit: z.number().int().min(1).max(10_000).optional(),
      })
      .refine((p) => p.since === undefined || p.until === undefined || Date.parse(p.since) < Date.parse(p.until), {
        message: 'since must be before until',
        path: ['until'],
      }),
    result: z.array(AuditEntry),
  },

  // Computer use: a branch's desktop, driven over its own VNC server from the host.
  'desktop.screenshot': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      /** Only this part of the screen (default: all of it). */
      region: Region.optional(),
      /** Scale the picture down by this factor (0 < scale ≤ 1). */
      scale: z.number().gt(0).max(1).optional(),
    }),
    result: Screenshot,
  },
  'desktop.cursor': { params: ByWorkspace, result: PointerState },
  'desktop.move': { params: z.strictObject({ workspace: WorkspaceRef, x: Coordinate, y: Coordinate }), result: PointerState },
  'desktop.click': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      ...At,
      button: MouseButton.optional(),
      /** 2: double click, 3: triple click. */
      count: z.number().int().min(1).max(3).optional(),
      /** Keys held during the click, e.g. 'shift' or 'ctrl+alt'. */
      modifiers: z.string().max(64).optional(),
    }),
    result: PointerState,
  },
  /** Presses or releases one mouse button (for drags an agent paces itself). */
  'desktop.button': {
    params: z.strictObject({ workspace: WorkspaceRef, ...At, button: MouseButton.optional(), action: z.enum(['down', 'up']) }),
    result: PointerState,
  },
  'desktop.drag': {
    params: z.strictObject({ workspace: WorkspaceRef, from: Point, to: Point, button: MouseButton.optional() }),
    result: PointerState,
  },
  /** Wheel notches: dy > 0 scrolls down, dx > 0 right. */
  'desktop.scroll': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      ...At,
      dx: z.number().int().min(-50).max(50),
      dy: z.number().int().min(-50).max(50),
      /** Keys held while the wheel turns, e.g. 'ctrl' (zoom in a browser) or 'shift'. */
      modifiers: z.string().max(64).optional(),
    }),
    result: PointerState,
  },
  /** Key combos written the usual way ('ctrl+l', 'alt+F4', 'Return'); several separated by spaces are pressed in turn. */
  'desktop.key': { params: z.strictObject({ workspace: WorkspaceRef, keys: z.string().trim().min(1).max(256) }), result: PointerState },
  /** Presses keys ('shift', 'ctrl+a', 'Left'), holds them for durationMs, and releases them in reverse. */
  'desktop.holdKey': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      keys: z.string().trim().min(1).max(256),
      durationMs: z.number().int().min(1).max(MAX_HOLD_MS, `keys are held at most ${MAX_HOLD_MS} ms a call`),
    }),
    result: PointerState,
  },
  /** Types any Unicode text as key presses. */
  'desktop.type': {
    params: z.strictObject({ workspace: WorkspaceRef, text: z.string().min(1).max(MAX_TYPED_CHARS, `text is at most ${MAX_TYPED_CHARS} characters a call`) }),
    result: PointerState,
  },
  /**
   * Waits until the screen has not changed for quietMs (still), or until it
   * changes (changed): with `since`, a change after that frame (which an
   * earlier call answered) satisfies it, also one before the wait began.
   */
  'desktop.wait': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      until: WaitCondition,
      timeoutMs: z.number().int().min(1).max(120_000),
      quietMs: z.number().int().min(50).max(10_000).optional(),
      since: FrameToken.optional(),
    }),
    result: WaitResult,
  },
  /** A region at the screen's own resolution, scaled up to `width` pixels across (default: not scaled). */
  'desktop.zoom': {
    params: z.strictObject({ workspace: WorkspaceRef, region: Region, width: z.number().int().min(1).max(MAX_ZOOM_SIDE).optional() }),
    result: Screenshot,
  },
  /** The desktop's top-level windows (its window manager's list), with titles, geometry and which has the focus. */
  'desktop.windows': { params: ByWorkspace, result: WindowList },
  /** Opens an http(s) address in the branch's own browser (Chromium), in a new tab. */
  'desktop.openUrl': {
    params: z.strictObject({ workspace: WorkspaceRef, url: z.string().trim().min(1).max(8192) }),
    result: z.strictObject({ url: z.string() }),
  },
  /** Starts a program in the branch's desktop session, detached (it outlives the call). */
  'desktop.launch': { params: z.strictObject({ workspace: WorkspaceRef, argv: Argv }), result: z.strictObject({ pid: z.number().int().positive() }) },
  /** Writes bytes (base64) into a file in a running branch (its folders made if missing), replacing what it held. */
  'file.upload': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      path: BranchPath,
      data: z.base64('data is base64').max(base64Length(MAX_TRANSFER_BYTES), `an upload is at most ${MAX_TRANSFER_BYTES} bytes`),
    }),
    result: z.strictObject({ path: z.string(), bytes: z.number().int().nonnegative() }),
  },
  /** A file of a running branch, as base64 (at most MAX_TRANSFER_BYTES). */
  'file.download': {
    params: z.strictObject({ workspace: WorkspaceRef, path: BranchPath }),
    result: z.strictObject({ path: z.string(), bytes: z.number().int().nonnegative(), data: z.string() }),
  },
} as const;

export type Methods = typeof methods;

/** How many base64 characters `bytes` bytes take. */
export function base64Length(bytes: number): number {
  return Math.ceil(bytes / 3) * 4;
}
export type MethodName = keyof Methods;
export type Params<M extends MethodName> = z.infer<Methods[M]['params']>;
export type Result<M extends MethodName> = z.infer<Methods[M]['result']>;

export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(methods, name);
}
