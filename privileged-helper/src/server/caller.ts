// The identity of the call being served, for events it causes: the connection
// runs each handler inside callers.during(actor, …), and the event bus stamps
// events published meanwhile with that actor. A call's context also flows into
// what it leaves behind (timers, listeners, servers it opened); those must not
// speak for it later, so the context goes stale the moment the call ends.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Actor } from '../protocol/identity.js';

interface CallScope {
  actor: Actor;
  active: boolean;
}

const storage = new AsyncLocalStorage<CallScope>();

export const callers = {
  async during<T>(actor: Actor, fn: () => Promise<T>): Promise<T> {
    const scope: CallScope = { actor, active: true };
    try {
      return await storage.run(scope, fn);
    } finally {
      scope.active = false;
    }
  },

  /** The actor of the call in progress, or undefined outside one (or after it ended). */
  current(): Actor | undefined {
    const scope = storage.getStore();
    return scope?.active ? scope.actor : undefined;
  },
};
