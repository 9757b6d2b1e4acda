// One Grove tool for MCP: its name, words, input schema and behaviour declared
// in one place (tools/*.ts), registered on the server with one shared helper
// connection. Whatever goes wrong in a call becomes an isError result carrying
// the helper's message and code, so the model reads why and the server lives on.
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, ToolAnnotations } from '@modelcontextprotocol/sdk/types.js';
import type { z } from 'zod';
import { GroveError } from '../helper-client/client.js';
import type { Helper, HelperSource } from './helper-link.js';

export interface ToolSpec<Shape extends z.ZodRawShape> {
  name: string;
  title: string;
  description: string;
  input: Shape;
  annotations: ToolAnnotations;
  run(args: z.infer<z.ZodObject<Shape>>, helper: Helper): Promise<CallToolResult>;
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
      server.registerTool(spec.name, config, (args) => runSafely(() => helpers.use((h) => spec.run(args as z.infer<z.ZodObject<Shape>>, h))));
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
