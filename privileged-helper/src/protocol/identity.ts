// Who is calling: derived by the helper from the kernel's credentials of the
// connection (SO_PEERCRED), never from what a client says about itself.
import { z } from 'zod';

/**
 * person: root and members of the `grove` group, on the person socket. They
 * decide. agent: anyone on the agent socket (members of `grove-agent`). They
 * work in branches and ask a person for what leaves the sandbox.
 */
export const Role = z.enum(['person', 'agent']);
export type Role = z.infer<typeof Role>;

export const Actor = z.strictObject({
  role: Role,
  uid: z.number().int().nonnegative(),
  /** The uid's user name ('#UID' when it has none). */
  user: z.string(),
  /** The process that connected, and its name (comm) at the time. */
  pid: z.number().int().nonnegative(),
  process: z.string(),
  /** What the client calls itself in hello ('cli:grove-cli'): its own words, shown for context, never trusted. */
  client: z.string(),
});
export type Actor = z.infer<typeof Actor>;

/** Who made a branch: kept with it after the process that made it is gone. */
export const Maker = Actor.pick({ role: true, uid: true, user: true });
export type Maker = z.infer<typeof Maker>;

/** 'agent alice (uid 1001)' — how an actor is named in messages and logs. */
export function describeActor(a: Pick<Actor, 'role' | 'user' | 'uid'>): string {
  return `${a.role} ${a.user} (uid ${a.uid})`;
}
