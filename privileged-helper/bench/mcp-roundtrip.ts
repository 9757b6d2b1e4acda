// Round trips of MCP calls, as an MCP-capable agent sees them: a client of
// `grove mcp` (the SDK's stdio transport) calls a tool and gets its answer —
// JSON-RPC over the pipes, the tool, the helper's method, and the answer back
// through both. Measured: the computer tool's screenshot (the whole screen as
// a base64 PNG), its zoom (a quarter of the screen at twice its resolution),
// and the windows tool (a program run inside the branch asks X).
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { callTool, connectGroveMcp, pngOf } from '../../main/src/mcp/client.js';
import { percentiles } from './stats.js';
import type { Percentiles } from './result-schema.js';

/** A quarter of the standard 1280x800 screen, zoomed to twice its size. */
const ZOOM = { region: { x: 0, y: 0, width: 640, height: 400 }, width: 1280 };

/** Milliseconds per call of `samples` calls through an open client, after one untimed call (which opens the helper connection and the VNC session). */
async function samplesOf(samples: number, call: () => Promise<unknown>): Promise<number[]> {
  await call();
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const t0 = performance.now();
    await call();
    times.push(performance.now() - t0);
  }
  return times;
}

export function mcpScreenshotSamples(client: Client, branch: string, samples: number): Promise<number[]> {
  return samplesOf(samples, async () => pngOf(await callTool(client, 'computer', { branch, action: 'screenshot' })));
}

export function mcpZoomSamples(client: Client, branch: string, samples: number): Promise<number[]> {
  return samplesOf(samples, async () => pngOf(await callTool(client, 'computer', { branch, action: 'zoom', ...ZOOM })));
}

export function mcpWindowsSamples(client: Client, branch: string, samples: number): Promise<number[]> {
  return samplesOf(samples, () => callTool(client, 'windows', { branch }));
}

export interface McpRoundTrips {
  screenshotMs: Percentiles;
  zoomMs: Percentiles;
  windowsMs: Percentiles;
}

/** The three through a `grove mcp` of its own on `socketPath`, started and closed here. */
export async function measureMcp(socketPath: string, branch: string, samples: number): Promise<McpRoundTrips> {
  const client = await connectGroveMcp({ name: 'grove-bench', socketPath, stderr: 'ignore' });
  try {
    return {
      screenshotMs: percentiles(await mcpScreenshotSamples(client, branch, samples)),
      zoomMs: percentiles(await mcpZoomSamples(client, branch, samples)),
      windowsMs: percentiles(await mcpWindowsSamples(client, branch, samples)),
    };
  } finally {
    await client.close();
  }
}
