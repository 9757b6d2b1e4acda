// `grove mcp`: Grove's tools for MCP-capable agents, on stdin/stdout (see main/src/mcp/).
import type { Command } from 'commander';
import { globals } from './context.js';

export function registerMcpCommand(program: Command): void {
  program
    .command('mcp')
    .description("serve Grove's tools to an MCP client on stdin/stdout, as you (on the agent socket unless --socket says otherwise)")
    .action(async () => {
      // A long-running command's stack traces lead back to the TypeScript (for the modules loaded from here on).
      process.setSourceMapsEnabled(true);
      const { serveStdio } = await import('../mcp/server.js');
      await serveStdio({ socketPath: globals().socket });
    });
}
