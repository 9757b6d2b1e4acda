// The client side of `grove mcp`, for programs that drive Grove the way an
// MCP-capable agent does (the reference agent, tests, the benchmark): spawn
// `grove mcp` with the SDK's stdio transport and call its tools.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { groveFile } from '../../../privileged-helper/src/protocol/grove-files.js';

const GROVE = groveFile('main/bin/grove');

export interface GroveMcpOptions {
  /** The helper socket `grove mcp` uses (default: the agent socket). */
  socketPath?: string;
  /** A command that runs `grove mcp` as someone else, e.g. ['setpriv', '--reuid', USER, …]. */
  runAs?: string[];
  /** What the client calls itself. */
  name: string;
  /** Where `grove mcp`'s log goes (default: this process's stderr). */
  stderr?: 'inherit' | 'pipe' | 'ignore';
}

export async function connectGroveMcp(opts: GroveMcpOptions): Promise<Client> {
  const argv = [...(opts.runAs ?? []), GROVE, 'mcp', ...(opts.socketPath ? ['--socket', opts.socketPath] : [])];
  const transport = new StdioClientTransport({
    command: argv[0]!,
    args: argv.slice(1),
    // The SDK's safe default environment, and Grove's own settings (e.g. GROVE_AGENT_SOCKET).
    env: { ...getDefaultEnvironment(), ...groveSettings() },
    stderr: opts.stderr ?? 'inherit',
  });
  const client = new Client({ name: opts.name, version: '1' });
  await client.connect(transport);
  return client;
}

/** Calls a tool; a result marked isError becomes an exception with the tool's words. */
export async function callTool(client: Client, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name}: ${textOf(result)}`);
  return result;
}

export function textOf(result: CallToolResult): string {
  return result.content.flatMap((c) => (c.type === 'text' ? [c.text] : [])).join('\n');
}

/** The PNG of a screenshot result. */
export function pngOf(result: CallToolResult): Buffer {
  const image = result.content.find((c) => c.type === 'image');
  if (!image) throw new Error(`no image in the result: ${textOf(result)}`);
  return Buffer.from(image.data, 'base64');
}

function groveSettings(): Record<string, string> {
  return Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => e[0].startsWith('GROVE_') && e[1] !== undefined));
}
