// One Grove tool for MCP: its name, words, input schema and behaviour declared
// in one place (tools/*.ts), registered on the server with one shared helper
// connection. Whatever goes wrong in a call becomes an isError result carrying
// the helper's message and code, so the model reads why and the server lives on.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { RequestHandlerExtra } from '@modelcontextprotocol/sdk/shared/protocol.js';
import type { CallToolResult, ServerNotification, ServerRequest, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { GroveError } from '../helper-client/client.js';
import type { Helper, HelperSource } from './helper-link.js';

export interface ToolSpec<Shape extends z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  input: Shape;
  annotations: ToolAnnotations;
  run(args: z.infer<z.ZodObject<Shape>>, helper: Helper, call: ToolCall): Promise<CallToolResult>;
}

/** The MCP call being served: whether its client takes progress, and a way to tell it. */
export interface ToolCall {
  /** The client asked for progress notifications (it sent a progress token). */
  readonly takesProgress: boolean;
  /** Tells the client the call is still at work (a no-op when it did not ask). */
  progress(message: string): Promise<void>;
  /** Aborted when the client cancels the call. */
  readonly signal: AbortSignal;
}

export interface GroveTool {
  register(server: McpServer, helpers: HelperSource): void;
}

export function defineTool<Shape extends z.ZodRawShape>(spec: ToolSpec<Shape>): GroveTool {
  return {
    register(server, helpers) {
      // Registered as a plain shape: the SDK validates the arguments against it before the callback runs.
      const inputSchema: z.ZodRawShape = spec.input;
      const config = { title: spec.title, description: spec.description, inputSchema, annotations: { openWorldHint: false, ...spec.annotations } };
      server.registerTool(spec.name, config, (args, extra) =>
        runSafely(() => helpers.use((h) => spec.run(args as z.infer<z.ZodObject<Shape>>, h, toolCall(extra)))),
      );
    },
  };
}

function toolCall(extra: RequestHandlerExtra<ServerRequest, ServerNotification>): ToolCall {
  const token = extra._meta?.progressToken;
  let count = 0;
  return {
    takesProgress: token !== undefined,
    signal: extra.signal,
    async progress(message) {
      if (token === undefined) return;
      count += 1;
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: count, message } });
    },
  };
}

async function runSafely(call: () => Promise<CallToolResult>): Promise<CallToolResult> {
  try {
    return await call();
  } catch (err) {
    return errorResult(err);
  }
}

/** A failed call as the model reads it: the helper's own words and its stable code. */
function errorResult(err: unknown): CallToolResult {
  const text = err instanceof GroveError ? `${err.message} (${err.code})` : err instanceof Error ? err.message : String(err);
  return { content: [{ type: 'text', text }], isError: true };
}

/** A plain answer in words, with the same facts as data for programs when there are any. */
export function textResult(text: string, data?: Record<string, unknown>): CallToolResult {
  return data ? { content: [{ type: 'text', text }], structuredContent: data } : { content: [{ type: 'text', text }] };
}

/** Data a model reads best as JSON: the text is the JSON itself. */
export function jsonResult(data: Record<string, unknown>): CallToolResult {
  return textResult(JSON.stringify(data), data);
}
