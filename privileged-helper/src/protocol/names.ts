// Identifier grammar shared by the helper and its clients. Every name or id that
// reaches a path, a command line or an interface name is one of these, so none
// can carry "../", a leading "-" (option injection), whitespace or a NUL.
import { z } from 'zod';

/** A person-chosen name: lower-case letters, digits and inner dashes, at most 32. */
export const NAME_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,30}[a-z0-9])?$/;

/** Ids the helper generates: 8 lower-case hex digits. */
export const ID_PATTERN = /^[0-9a-f]{8}$/;

export const Name = z
  .string()
  .regex(NAME_PATTERN, 'a name is 1-32 lower-case letters, digits and inner dashes (a-z, 0-9, -)');

export const Id = z.string().regex(ID_PATTERN, 'an id is 8 lower-case hex digits');

/** A workspace may be addressed by its id or by its name. */
export const WorkspaceRef = z.union([Id, Name]);

export const ImageName = z.enum(['desktop']);

export const Port = z.number().int().min(1).max(65535);
