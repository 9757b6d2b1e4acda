// Every request the helper answers: method name → params schema + result schema.
// The helper validates params against this map before a handler sees them, and
// typed clients derive their signatures from it. Params objects are strict:
// unknown fields are refused, not ignored.
import { z } from 'zod';
import { DoctorReport, EgressLogEntry, EgressMode, EgressPolicy, EgressRequest, EgressRule, EgressStatus, ExecResult, ForkReport, ForkStage, Image, PerfReport, Version, Workspace } from './entities.js';
import { TreeDiff } from './diff.js';
import { Id, ImageName, Name, Port, WorkspaceRef } from './names.js';

export const PROTOCOL_VERSION = 1;

const Empty = z.strictObject({});
const ByWorkspace = z.strictObject({ workspace: WorkspaceRef });

/** argv for a command inside a workspace: a program and its arguments, no shell. */
const Argv = z.array(z.string().max(4096).refine((s) => !s.includes('\0'), 'NUL in argument')).min(1).max(256);
const EnvVars = z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'bad environment variable name'), z.string().max(4096));
const TermSize = { cols: z.number().int().min(1).max(1000), rows: z.number().int().min(1).max(500) };
const SessionId = z.string().regex(/^s[0-9]+$/);

export const ClientKind = z.enum(['cli', 'app', 'test']);

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
    }),
  },
  'events.subscribe': {
    params: z.strictObject({ topics: z.array(z.string()).max(64).optional() }),
    result: z.strictObject({ seq: z.number().int() }),
  },
  'host.doctor': { params: Empty, result: DoctorReport },
  'image.list': { params: Empty, result: z.array(Image) },
  'image.build': {
    params: z.strictObject({ name: ImageName, rebuild: z.boolean().optional() }),
    result: Image,
  },
  'workspace.create': {
    params: z.strictObject({
      name: Name,
      image: ImageName.optional(),
      /** Container ports to map in addition to VNC (5900) and the dev port (3000). */
      ports: z.array(Port).max(16).optional(),
    }),
    result: Workspace,
  },
  'workspace.list': { params: Empty, result: z.array(Workspace) },
  'workspace.get': { params: ByWorkspace, result: Workspace },
  'workspace.start': { params: ByWorkspace, result: Workspace },
  'workspace.stop': { params: ByWorkspace, result: Workspace },
  'workspace.delete': { params: ByWorkspace, result: z.strictObject({ deleted: z.string() }) },
  'branch.fork': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      copies: z.number().int().min(1).max(16),
      /** Names for the children (default: NAME-1, NAME-2, …). */
      names: z.array(Name).max(16).optional(),
      /** Tests only: fail right after this stage (the helper refuses it unless started with GROVE_FAULT_INJECTION=1). */
      faultAt: ForkStage.optional(),
    }),
    result: ForkReport,
  },
  'branch.checkpoint': {
    params: z.strictObject({ workspace: WorkspaceRef, label: z.string().max(200).optional() }),
    result: Version,
  },
  'branch.rollback': {
    params: z.strictObject({ workspace: WorkspaceRef, version: Id }),
    result: Workspace,
  },
  'branch.promote': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      /** What becomes of the old main line: kept as a version (default), discarded, or kept running as a branch. */
      oldMain: z.enum(['version', 'discard', 'keep']).optional(),
    }),
    result: Workspace,
  },
  'branch.diff': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      /** The branch to compare with (default: the branch's parent). */
      other: WorkspaceRef.optional(),
    }),
    result: TreeDiff,
  },
  'version.list': {
    params: z.strictObject({ workspace: WorkspaceRef.optional() }),
    result: z.array(Version),
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
      stdin: z.string().max(1 << 20).optional(),
      timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
    }),
    result: ExecResult,
  },
  'exec.open': {
    params: z.strictObject({
      workspace: WorkspaceRef,
      argv: Argv.optional(),
      env: EnvVars.optional(),
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
    params: z.strictObject({
      workspace: WorkspaceRef,
      mode: EgressMode.optional(),
      holdMutating: z.boolean().optional(),
      /** Destinations added to the allow list. */
      allow: z.array(EgressRule).max(64).optional(),
      /** Destinations removed from the allow list (a rule without port removes every rule for the host). */
      remove: z.array(EgressRule).max(64).optional(),
    }),
    result: EgressPolicy,
  },
  'egress.pending': {
    params: z.strictObject({ workspace: WorkspaceRef.optional() }),
    result: z.array(EgressRequest),
  },
  'egress.approve': {
    params: z.strictObject({ request: EgressRequest.shape.id, always: z.boolean().optional() }),
    result: EgressRequest,
  },
  'egress.deny': {
    params: z.strictObject({ request: EgressRequest.shape.id }),
    result: EgressRequest,
  },
  'egress.log': {
    params: z.strictObject({ workspace: WorkspaceRef.optional(), limit: z.number().int().min(1).max(10_000).optional() }),
    result: z.array(EgressLogEntry),
  },
  /** Fork history and memory per running branch and of the host; cheap enough to poll every few seconds. */
  'perf.get': { params: Empty, result: PerfReport },
} as const;

export type Methods = typeof methods;
export type MethodName = keyof Methods;
export type Params<M extends MethodName> = z.infer<Methods[M]['params']>;
export type Result<M extends MethodName> = z.infer<Methods[M]['result']>;

export function isMethodName(name: string): name is MethodName {
  return Object.hasOwn(methods, name);
}
