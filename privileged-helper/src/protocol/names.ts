// Identifier grammar shared by the helper and its clients. Every name or id that
// reaches a path, a command line or an interface name is one of these, so none
// can carry "../", a leading "-" (option injection), whitespace or a NUL.
import { z } from 'zod';

/** A person-chosen name: lower-case letters, digits and inner dashes, at most 32. */
export const NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

/** Ids the helper generates: 8 lower-case hex digits. */
export const ID_PATTERN = /^[0-9a-f]{8}$/;

export const Name = z.string().regex(NAME_PATTERN, 'a name is 1-32 lower-case letters, digits and inner dashes (a-z, 0-9, -)');

export const Id = z.string().regex(ID_PATTERN, 'an id is 8 lower-case hex digits');

/** A workspace may be addressed by its id or by its name. */
export const WorkspaceRef = z.union([Id, Name]);

/** An image's name in Grove: a Name. 'desktop' is Grove's own, built from its recipe. */
export const ImageName = Name;
export const DESKTOP_IMAGE = 'desktop';

/** A path on the host, as a client names it: absolute, no NUL, bounded. */
export const HostPath = z
  .string()
  .max(4096)
  .refine((s) => s.startsWith('/'), 'a host path is absolute')
  .refine((s) => !s.includes('\0'), 'NUL in a path');

/** A path inside a branch: absolute, no NUL, bounded (resolved inside the branch's root, never on the host). */
export const BranchPath = z
  .string()
  .max(4096)
  .refine((s) => s.startsWith('/'), 'a path in a branch is absolute')
  .refine((s) => !s.includes('\0'), 'NUL in a path');

export const Port = z.number().int().min(1).max(65535);
