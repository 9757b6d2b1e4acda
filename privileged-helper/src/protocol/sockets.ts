// Where a helper listens, for the helper and its clients alike: the person
// socket in its run directory, and the agent socket in a directory of its own
// beside it (so each can have its own group). GROVE_SOCKET and
// GROVE_AGENT_SOCKET name either socket directly.

/** The helper's run directory unless GROVE_RUN_DIR says otherwise; clients assume it. */
export const DEFAULT_RUN_DIR = '/run/grove';

export interface HelperSockets {
  /** The person socket (root and the grove group). */
  person: string;
  /** The agent socket (the grove-agent group): the helper takes everyone on it for an agent. */
  agent: string;
}

/** The sockets of the helper whose run directory is `runDir`, as the environment may override them. */
export function helperSockets(env: { GROVE_SOCKET?: string; GROVE_AGENT_SOCKET?: string }, runDir = DEFAULT_RUN_DIR): HelperSockets {
  return {
    person: env.GROVE_SOCKET ?? `${runDir}/helper.sock`,
    agent: env.GROVE_AGENT_SOCKET ?? `${runDir}-agent/agent.sock`,
  };
}
