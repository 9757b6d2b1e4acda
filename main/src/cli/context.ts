// What every `grove` command shares: the program and its global options, one
// helper connection per command, and printing (human or --json).
import { Command } from 'commander';
import { HelperClient } from '../helper-client/client.js';

export interface Global {
  json?: boolean;
  socket?: string;
  agent?: boolean;
}

export const program = new Command('grove')
  .description('Supervise AI agents in live, forkable desktop workspaces')
  .option('--socket <path>', "the helper's socket (default $GROVE_SOCKET, else the person socket if you may use it, else the agent socket)")
  .option('--agent', 'use the agent socket even if you may use the person socket (act as an agent: what only a person may do becomes a request)')
  .option('--json', 'print machine-readable JSON (errors too: {"error": {"code", "message"}} on standard output)')
  .showHelpAfterError()
  // Usage errors are thrown, not exited on, so that grove reports them like every other error (grove.ts);
  // with --json the usage text stays off standard error, the JSON error says it.
  .exitOverride()
  .configureOutput({ writeErr: (text) => void (wantsJson() || process.stderr.write(text)) });

export const globals = (): Global => program.opts<Global>();

/** --json, also when the command line failed to parse before the option was read. */
export function wantsJson(): boolean {
  return globals().json ?? process.argv.slice(2).includes('--json');
}

export async function withClient<T>(fn: (client: HelperClient) => Promise<T>): Promise<T> {
  const g = globals();
  const client = await HelperClient.connect({ socketPath: g.socket, agent: g.agent ?? false, name: 'grove-cli', kind: 'cli' });
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

export function output(value: unknown, human: () => void): void {
  if (globals().json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else human();
}
