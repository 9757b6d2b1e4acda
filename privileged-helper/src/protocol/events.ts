// Events the helper publishes: topic → payload schema. Broadcast topics reach
// every subscribed connection; exec.* topics reach only the session's owner.
// An event a call caused carries the caller's identity in its envelope (`by`).
import { z } from 'zod';
import { Approval, AuditEntry, Grant } from './approvals.js';
import { DesktopAction } from './desktop.js';
import { ImageName, Id, Name } from './names.js';
import { EgressVerdict, PoolSpace, Version, Workspace } from './entities.js';

export const events = {
  /** Progress of a long operation (an image build, later forks). */
  progress: z.strictObject({
    job: z.string(),
    stage: z.string(),
    message: z.string(),
    done: z.boolean(),
    image: ImageName.optional(),
    /** The branch a copy goes into or out of, by name. */
    workspace: Name.optional(),
  }),
  'workspace.changed': z.strictObject({ workspace: Workspace }),
  'workspace.removed': z.strictObject({ id: Id }),
  /** A version appeared (a checkpoint, saving) or changed (saved). */
  'version.changed': z.strictObject({ version: Version }),
  /** A version was deleted, or a checkpoint could not be saved (then `reason` says why). */
  'version.removed': z.strictObject({ id: Id, reason: z.string().optional() }),
  /** The pool became low on space, or is no longer (sent when `low` changes). */
  'pool.space': PoolSpace,
  'exec.output': z.strictObject({ session: z.string(), data: z.string() }),
  'exec.exit': z.strictObject({ session: z.string(), exitCode: z.number().int(), signal: z.string().nullable() }),
  /** A request joined the approvals queue (an agent's, or a connection the gate holds). */
  'approval.opened': Approval,
  /** A request was decided, carried out, withdrawn or timed out. */
  'approval.changed': Approval,
  'grant.changed': z.strictObject({ grant: Grant, revoked: z.boolean() }),
  /** Every call that changes something, with who made it. */
  audit: AuditEntry,
  /** Every computer-use call on a branch's desktop. */
  'desktop.action': DesktopAction,
  /** The verdict on an egress attempt (by policy, by a person, or by timeout). */
  'egress.decision': z.strictObject({
    request: z.string().nullable(),
    workspace: Id,
    host: z.string(),
    port: z.number().int(),
    method: z.string(),
    verdict: EgressVerdict,
    decidedBy: z.string(),
    at: z.string(),
  }),
} as const;

export type Events = typeof events;
export type Topic = keyof Events;
export type EventPayload<T extends Topic> = z.infer<Events[T]>;

export const PRIVATE_TOPICS: ReadonlySet<Topic> = new Set(['exec.output', 'exec.exit']);
