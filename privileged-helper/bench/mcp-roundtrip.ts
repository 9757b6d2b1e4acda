// The round trip of one MCP screenshot call, as an MCP-capable agent sees it:
// a client of `grove mcp` (the SDK's stdio transport) calls the computer tool's
// screenshot and gets the image back — JSON-RPC over the pipes, the tool, the
// helper's desktop.screenshot, and the base64 PNG back through both.
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { callTool, connectGroveMcp, pngOf } from '../../main/src/mcp/client.js';

/** Milliseconds per call of `samples` screenshot calls through an open client (after one untimed call that opens the helper connection and the VNC session). */
export async function mcpScreenshotSamples(client: Client, branch: string, samples: number): Promise<number[]> {
  await callTool(client, 'computer', { branch, action: 'screenshot' });
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    pngOf(await callTool(client, 'computer', { branch, action: 'screenshot' }));
    times.push(performance.now() - t0);
  }
  return times;
}

/** The same through a `grove mcp` of its own on `socketPath`, started and closed here. */
export async function measureMcpScreenshot(socketPath: string, branch: string, samples: number): Promise<number[]> {
  const client = await connectGroveMcp({ name: 'grove-bench', socketPath, stderr: 'ignore' });
  try {
    return await mcpScreenshotSamples(client, branch, samples);
  } finally {
    await client.close();
  }
}
