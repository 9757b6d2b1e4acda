// Agents' scopes: a person gives an agent user (or every member of a group)
// workspaces to work in, one by one or all those of an image, and may let it
// create workspaces of its own. An agent sees and acts only within its scope;
// everything else is, to it, as if it did not exist (auth/scopes.ts).
import { z } from 'zod';
import { Actor } from './identity.js';
import { Id, ImageName, WorkspaceRef } from './names.js';

export const ScopeId = z.string().regex(/^a[0-9a-f]{8}$/, 'a scope id is a and 8 hex digits');

/** A user or group name as the system spells them (useradd's rules, bounded). */
export const AccountName = z
  .string()
  .regex(/^[a-z_][a-z0-9_-]{0,31}\$?$/, 'a user or group name: a lower-case letter or _, then letters, digits, _ or -, at most 32');

/** Who a scope is for: one user, or every member of a group (numbers as resolved when it was given). */
export const ScopeSubject = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('user'), name: AccountName, uid: z.number().int().nonnegative() }),
  z.strictObject({ kind: z.literal('group'), name: AccountName, gid: z.number().int().nonnegative() }),
]);
export type ScopeSubject = z.infer<typeof ScopeSubject>;

/** What a scope gives: one workspace (every branch of its tree), every workspace of an image, or creating workspaces. */
export const ScopeTarget = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('workspace'), tree: Id }),
  z.strictObject({ kind: z.literal('image'), image: ImageName }),
  z.strictObject({ kind: z.literal('create') }),
]);
export type ScopeTarget = z.infer<typeof ScopeTarget>;

export const Scope = z.strictObject({
  id: ScopeId,
  subject: ScopeSubject,
  target: ScopeTarget,
  /** The workspace's main line's name now (its tree id once it has no branch left); null for other targets. */
  targetName: z.string().nullable(),
  /** The person who gave it; for a workspace an agent created, that agent. */
  grantedBy: Actor,
  at: z.string(),
});
export type Scope = z.infer<typeof Scope>;

/** Whom a scope change is for, as a person names them. */
export const ScopeWho = z.union([z.strictObject({ user: AccountName }), z.strictObject({ group: AccountName })]);
export type ScopeWho = z.infer<typeof ScopeWho>;

export const ScopeChange = z
  .strictObject({
    who: ScopeWho,
    workspaces: z.array(WorkspaceRef).max(64).optional(),
    images: z.array(ImageName).max(64).optional(),
    /** It may create workspaces (they are its own). */
    create: z.boolean().optional(),
  })
  .refine((c) => (c.workspaces?.length ?? 0) + (c.images?.length ?? 0) > 0 || c.create === true, {
    message: 'name at least one workspace or image, or create',
  });
export type ScopeChange = z.infer<typeof ScopeChange>;
