// `grove mcp`: Grove as a Model Context Protocol server on stdin/stdout, with
// the caller's own identity towards the helper: on the agent socket (the
// default) an agent gets exactly the agent role, and what only a person may
// do becomes a request to a person. stdout carries MCP and nothing else.
import { readFileSync } from 'node:fs';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { groveFile } from '../../../privileged-helper/src/protocol/grove-files.js';
import { HelperClient } from '../helper-client/client.js';
import { HelperLink, type HelperSource } from './helper-link.js';
import { TOOLS } from './tools/index.js';

const VERSION = (JSON.parse(readFileSync(groveFile('package.json'), 'utf8')) as { version: string }).version;

const INSTRUCTIONS = [
  'Grove runs your work in live Linux desktop workspaces ("branches") that can be forked: each fork is an isolated copy of a running desktop, with its own processes, screen, files and network.',
  'Start with list_branches. See and drive a desktop with computer (screenshot first), run commands with exec, try ideas side by side with fork, save and restore states with checkpoint and rollback, compare with diff.',
  'A person supervises: promoting a branch to the main line, discarding branches you did not fork, and reaching anything outside this machine need their approval.',
  'Use request_promote, request_discard and request_outside_access with a reason they can judge: each answers as soon as the person decides (a denial is an error result); if it says "still waiting", carry on and check later with request_status or list_my_requests.',
  'You see only the workspaces a person put in your scope.',
].join(' ');

export function createGroveMcpServer(helpers: HelperSource): McpServer {
  const server = new McpServer({ name: 'grove', title: 'Grove', version: VERSION }, { instructions: INSTRUCTIONS });
  for (const tool of TOOLS) tool.register(server, helpers);
  return server;
}

/** Serves MCP on stdio until the client closes stdin; one helper connection (socketPath, else the agent socket) for every call. */
export async function serveStdio(opts: { socketPath?: string }): Promise<void> {
  keepStdoutForMcp();
  const log = (message: string) => process.stderr.write(`grove mcp: ${message}\n`);
  const link = new HelperLink(() => HelperClient.connect({ socketPath: opts.socketPath, agent: true, name: 'grove-mcp', kind: 'cli' }), log);
  const server = createGroveMcpServer(link);
  const closed = new Promise<void>((resolve) => {
    process.stdin.once('end', resolve);
    process.stdin.once('close', resolve);
  });
  await server.connect(new StdioServerTransport());
  log(`serving ${TOOLS.length} tools on stdio`);
  await closed;
  await server.close();
  await link.close();
}

/** Anything a module prints with console.log would corrupt the MCP stream: it goes to stderr instead. */
function keepStdoutForMcp(): void {
  console.log = console.error;
  console.info = console.error;
  console.debug = console.error;
}
