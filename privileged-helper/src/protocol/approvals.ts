// One queue of decisions only a person makes: an agent's request to promote,
// discard or stop a branch or to change its outside access, and a connection
// the egress gate holds for a person's verdict. One decision path for all of
// them (approval.approve / approval.deny), standing approvals per workspace
// (grants), and the audit log that says who did what.
import { z } from 'zod';
import { EgressChange, OldMainFate } from './entities.js';
import { Actor } from './identity.js';
import { MergeRequest } from './merge.js';
import { HostPath, Id, Port } from './names.js';

export const ApprovalId = z.string().regex(/^q[0-9a-f]{8}$/, 'a request id is q and 8 hex digits');
export const GrantId = z.string().regex(/^g[0-9a-f]{8}$/, 'a grant id is g and 8 hex digits');

/** What an agent may ask a person for (and what a grant may let agents do without asking). */
export const AgentRequestKind = z.enum([
  'branch.promote',
  'branch.discard',
  'workspace.stop',
  'egress.policy',
  'branch.merge',
  'branch.rollback',
  'branch.export',
]);
export type AgentRequestKind = z.infer<typeof AgentRequestKind>;

export const AgentRequestAction = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('branch.promote'),
    /** What becomes of the old main line (as for branch.promote). */
    oldMain: OldMainFate.optional(),
  }),
  z.strictObject({ kind: z.literal('branch.discard') }),
  z.strictObject({ kind: z.literal('workspace.stop') }),
  z.strictObject({ kind: z.literal('egress.policy'), change: EgressChange }),
  /** A merge into the request's branch (as for branch.merge). */
  z.strictObject({ kind: z.literal('branch.merge'), sources: MergeRequest.shape.sources, take: MergeRequest.shape.take, all: MergeRequest.shape.all }),
  /** The branch returns to one of its workspace's versions (as for branch.rollback). */
  z.strictObject({ kind: z.literal('branch.rollback'), version: Id }),
  /** The branch's work as a commit on a new branch of a person's repository (as branch.export; never over an existing branch). */
  z.strictObject({
    kind: z.literal('branch.export'),
    repo: HostPath,
    branch: z.string().min(1).max(200),
    message: z.string().min(1).max(20_000).optional(),
    since: Id.optional(),
  }),
]);
export type AgentRequestAction = z.infer<typeof AgentRequestAction>;

/** A connection from inside a branch that the egress gate holds. */
export const HeldConnection = z.strictObject({
  kind: z.literal('egress.connection'),
  host: z.string(),
  port: Port,
  /** HTTP method, or CONNECT for a tunnel (HTTPS). */
  method: z.string(),
  /** The full URL of a plain-HTTP request; null for a tunnel. */
  url: z.string().nullable(),
  /** Why it is held: a destination not on the allow list, or a mutating request under holdMutating. */
  held: z.enum(['destination', 'mutating']),
  /** For an address literal, in whatever form the branch wrote it: the address it reaches and what that is; null for a host name. */
  address: z.strictObject({ reached: z.string(), what: z.string() }).nullable(),
});
export type HeldConnection = z.infer<typeof HeldConnection>;

export const ApprovalAction = z.discriminatedUnion('kind', [...AgentRequestAction.options, HeldConnection]);
export type ApprovalAction = z.infer<typeof ApprovalAction>;
export type ApprovalKind = ApprovalAction['kind'];

/** What a person looks at before deciding; filled in when the request is made. */
export const ApprovalPreview = z.strictObject({
  /** The branch's screen at the time, scaled down, as a data: URL (PNG). */
  thumbnail: z.string().nullable(),
  /** Files the branch changed: against the main line (promote) or its parent (discard). */
  diff: z
    .strictObject({
      against: z.strictObject({ id: Id, name: z.string() }),
      added: z.number().int(),
      changed: z.number().int(),
      removed: z.number().int(),
      /** The first paths, added/changed/removed marked with + ~ -. */
      paths: z.array(z.string()),
    })
    .nullable(),
  /** Processes that end with it (discard, stop): how many, and their names, the most frequent first. */
  processes: z.strictObject({ count: z.number().int(), names: z.array(z.string()) }).nullable(),
  /** An export: where it would go, and the whole commit as a patch (noise left out; cut at its bound, then a note says so). */
  export: z.strictObject({ repo: z.string(), branch: z.string(), patch: z.string() }).nullable().optional(),
  /** Versions of the branch that are kept (they survive a discard). */
  versions: z.number().int().nullable(),
  /** Parts of the preview that could not be made, and why. */
  notes: z.array(z.string()),
});
export type ApprovalPreview = z.infer<typeof ApprovalPreview>;

/**
 * pending: waits for a person. running: approved, being carried out. done /
 * failed: carried out, and how it went. denied, expired (nobody decided in
 * time), withdrawn (by the agent that asked), abandoned (the connection that
 * waited went away, or its branch did).
 */
export const ApprovalState = z.enum(['pending', 'running', 'done', 'failed', 'denied', 'expired', 'withdrawn', 'abandoned']);
export type ApprovalState = z.infer<typeof ApprovalState>;
export const OPEN_STATES: ReadonlySet<ApprovalState> = new Set(['pending', 'running']);

export const Approval = z.strictObject({
  id: ApprovalId,
  action: ApprovalAction,
  workspace: Id,
  workspaceName: z.string(),
  tree: Id,
  /** The agent that asked; null for a connection the branch's own software opened. */
  requestedBy: Actor.nullable(),
  /** The agent's stated reason, or why the gate holds the connection. */
  reason: z.string(),
  /** What happens if a person approves, in words. */
  effect: z.string(),
  preview: ApprovalPreview,
  state: ApprovalState,
  at: z.string(),
  expiresAt: z.string(),
  decision: z
    .strictObject({
      /** The person; null when the helper decided (a timeout, a withdrawal, a branch that went away). */
      by: Actor.nullable(),
      /** Set when a standing approval (grant) decided it. */
      grant: GrantId.nullable(),
      at: z.string(),
      note: z.string().nullable(),
      /** egress.connection approved for good: its destination joined the branch's allow list. */
      always: z.boolean(),
    })
    .nullable(),
  /** Once carried out: what it did, or why it failed. */
  outcome: z.string().nullable(),
  /** When it left the open states (done, failed, denied, expired, withdrawn, abandoned). */
  closedAt: z.string().optional(),
});
export type Approval = z.infer<typeof Approval>;

/** A person's standing approval: agents may do this kind of thing in this workspace without asking. */
export const Grant = z.strictObject({
  id: GrantId,
  /** The workspace (tree) it covers: every branch of it, present and future. */
  tree: Id,
  treeName: z.string(),
  kind: AgentRequestKind,
  grantedBy: Actor,
  at: z.string(),
});
export type Grant = z.infer<typeof Grant>;

export const AuditEntry = z.strictObject({
  seq: z.number().int(),
  at: z.string(),
  /** Null for entries written before identities were recorded. */
  actor: Actor.nullable(),
  action: z.string(),
  target: z.string().nullable(),
  outcome: z.enum(['ok', 'error']),
  detail: z.string().nullable(),
});
export type AuditEntry = z.infer<typeof AuditEntry>;
