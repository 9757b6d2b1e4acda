// The MCP server's one connection to the helper: made on the first tool call,
// shared by every call after it, and made again on the next call once it
// drops (a restarted helper, a broken socket), so a long-lived MCP session
// survives the helper going away for a while.
import type { HelperClient } from '../helper-client/client.js';
import type { Actor } from '../../../privileged-helper/src/protocol/identity.js';
import type { MethodName, Params, Result } from '../../../privileged-helper/src/protocol/methods.js';
import { describeActor } from '../../../privileged-helper/src/protocol/identity.js';

/** What a tool sees of the helper: its typed calls, and who it takes us for. */
export interface Helper {
  request<M extends MethodName>(method: M, params: Params<M>): Promise<Result<M>>;
  readonly identity: Actor;
}

/** Lends a connected helper to one tool call. */
export interface HelperSource {
  use<T>(fn: (helper: Helper) => Promise<T>): Promise<T>;
}

export class HelperLink implements HelperSource {
  private current: Promise<HelperClient> | null = null;

  constructor(
    private readonly connect: () => Promise<HelperClient>,
    private readonly log: (message: string) => void,
  ) {}

  async use<T>(fn: (helper: Helper) => Promise<T>): Promise<T> {
    const client = await this.client();
    return fn({ request: (method, params) => client.request(method, params), identity: client.hello!.identity });
  }

  /** Closes the connection; a later call would make a new one. */
  async close(): Promise<void> {
    const pending = this.current;
    this.current = null;
    (await pending?.catch(() => null))?.close(); // one that never connected has nothing to close
  }

  private client(): Promise<HelperClient> {
    if (this.current) return this.current;
    const connecting = this.connect();
    this.current = connecting;
    connecting.then(
      (c) => {
        this.log(`connected to ${c.socketPath} as ${describeActor(c.hello!.identity)}`);
        c.onClose(() => {
          if (this.current !== connecting) return;
          this.current = null;
          this.log('the connection to the helper closed; the next call connects again');
        });
      },
      // A failed connect is reported to the call that made it; the next call tries again.
      () => {
        if (this.current === connecting) this.current = null;
      },
    );
    return connecting;
  }
}
