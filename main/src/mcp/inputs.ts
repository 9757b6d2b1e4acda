// Input fields several tools share, described once for the model.
import { z } from 'zod';
import { WorkspaceRef } from '../../../privileged-helper/src/protocol/names.js';

export const Branch = WorkspaceRef.describe('the branch: its id (8 hex digits) or its name (see list_branches)');

export const Reason = z.string().trim().min(1).max(2000).describe('why you ask: the person deciding reads it');

/** Long enough for a person to look, short enough that MCP clients' usual 60 s request timeout is not hit. */
export const DEFAULT_WAIT_SECONDS = 50;

export function waitSeconds(byDefault: number) {
  return z
    .number()
    .min(0)
    .max(300)
    .optional()
    .describe(
      `how long to wait for a person's decision before answering "still waiting" (default ${byDefault}; 0 answers at once; past ~55 s your MCP client may give up on the call first)`,
    );
}
