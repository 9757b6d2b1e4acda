// The contract between the helper and its egress gate process: JSON messages
// over the IPC channel of the unprivileged child the helper spawns. The gate
// parses what branches send and asks; the helper decides (policy, person) and
// keeps the log. Each side validates what it receives.
import { z } from 'zod';
import { EgressVerdict } from '../protocol/entities.js';

export const GateBranch = z.strictObject({
  id: z.string().min(1),
  name: z.string().min(1),
  treeId: z.string().min(1),
  /** The host end of the branch's veth: the gate listens here. */
  hostAddress: z.string().min(1),
  /** The branch's own address: the only client the listener serves. */
  containerAddress: z.string().min(1),
});
export type GateBranch = z.infer<typeof GateBranch>;

export const ProxyTarget = z.strictObject({
  host: z.string().min(1).max(255),
  port: z.number().int().min(1).max(65535),
  /** For plain HTTP: the path (and query) to ask the origin for. */
  path: z.string().max(65536).nullable(),
  /** For plain HTTP: the URL as the client gave it. */
  url: z.string().max(65536).nullable(),
});
export type ProxyTarget = z.infer<typeof ProxyTarget>;

/** The helper's answer to one request: connect, or tell the client why not (or nothing: it hung up). */
export const Admission = z.union([
  z.strictObject({ ok: z.literal(true) }),
  z.strictObject({ ok: z.literal(false), status: z.number().int(), message: z.string(), verdict: EgressVerdict }),
  z.strictObject({ ok: z.literal(false), abandoned: z.literal(true) }),
]);
export type Admission = z.infer<typeof Admission>;

/** Helper → gate. */
export const ToGate = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('open'), branch: GateBranch }),
  z.strictObject({ type: z.literal('close'), branchId: z.string() }),
  z.strictObject({ type: z.literal('admission'), ask: z.number().int(), admission: Admission }),
]);
export type ToGate = z.infer<typeof ToGate>;

/** Gate → helper. */
export const FromGate = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('ready') }),
  /** After 'open': listening, or why not. */
  z.strictObject({ type: z.literal('opened'), branchId: z.string(), error: z.string().nullable() }),
  /** A client asks to go somewhere; answered by 'admission' with the same ask. */
  z.strictObject({ type: z.literal('admit'), ask: z.number().int(), branchId: z.string(), target: ProxyTarget, method: z.string().min(1).max(32) }),
  /** The client of an ask hung up. */
  z.strictObject({ type: z.literal('gone'), ask: z.number().int() }),
  /** What happened after an admission, for the log: the name did not resolve, it resolved somewhere forbidden, the connection failed. */
  z.strictObject({
    type: z.literal('outcome'),
    branchId: z.string(),
    target: ProxyTarget,
    method: z.string().min(1).max(32),
    verdict: z.enum(['denied', 'failed']),
    detail: z.string().max(2000),
  }),
]);
export type FromGate = z.infer<typeof FromGate>;
