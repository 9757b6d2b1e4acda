// upload / download: a file's bytes into or out of a branch, through the MCP
// call itself (no host path): base64 or text in, an embedded resource out.
import { TextDecoder } from 'node:util';
import { z } from 'zod';
import { MAX_TRANSFER_BYTES } from '../../../../privileged-helper/src/protocol/desktop.js';
import { BranchPath } from '../../../../privileged-helper/src/protocol/names.js';
import { GroveError } from '../../helper-client/client.js';
import { Branch } from '../inputs.js';
import { defineTool, textResult } from '../tool.js';

const LIMIT = `at most ${MAX_TRANSFER_BYTES / (1 << 20)} MiB`;

export const uploadTool = defineTool({
  name: 'upload',
  title: 'Write a file into a branch',
  description: `Writes a file in a running branch (created with its folders, or replaced), from text or from base64 bytes (give one), ${LIMIT}. The path is resolved inside the branch.`,
  input: {
    branch: Branch,
    path: BranchPath.describe('an absolute path in the branch, e.g. /root/data.csv'),
    text: z.string().optional().describe('the content as text (UTF-8)'),
    base64: z.string().optional().describe('the content as base64 bytes'),
  },
  annotations: { destructiveHint: true },
  async run(args, h) {
    if ((args.text === undefined) === (args.base64 === undefined)) throw new GroveError('E_INVALID_PARAMS', 'give text or base64 (one of them)');
    const data = args.text === undefined ? args.base64! : Buffer.from(args.text, 'utf8').toString('base64');
    const written = await h.request('file.upload', { workspace: args.branch, path: args.path, data });
    return textResult(`wrote ${written.bytes} bytes to ${args.branch}:${written.path}`, written);
  },
});

export const downloadTool = defineTool({
  name: 'download',
  title: 'Read a file of a branch',
  description: `Returns a file of a running branch (${LIMIT}) as an embedded resource: as text when it is UTF-8, else as base64 bytes.`,
  input: { branch: Branch, path: BranchPath.describe('an absolute path in the branch') },
  annotations: { readOnlyHint: true },
  async run(args, h) {
    const file = await h.request('file.download', { workspace: args.branch, path: args.path });
    const uri = `grove://${encodeURIComponent(args.branch)}${file.path.split('/').map(encodeURIComponent).join('/')}`;
    const text = utf8(Buffer.from(file.data, 'base64'));
    const resource = text === null ? { uri, blob: file.data, mimeType: 'application/octet-stream' } : { uri, text, mimeType: 'text/plain' };
    return {
      content: [
        { type: 'text', text: `${args.branch}:${file.path}, ${file.bytes} bytes${text === null ? ' (binary: base64)' : ''}` },
        { type: 'resource', resource },
      ],
      structuredContent: { path: file.path, bytes: file.bytes },
    };
  },
});

/** The bytes as text if they are valid UTF-8, else null. */
function utf8(bytes: Buffer): string | null {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return null;
  }
}
