// Input fields several tools share, described once for the model.
import { z } from 'zod';
import { WorkspaceRef } from '../../../privileged-helper/src/protocol/names.js';

export const Branch = WorkspaceRef.describe('the branch: its id (8 hex digits) or its name (see list_branches)');

export const Reason = z.string().trim().min(1).max(2000).describe('why you ask: the person deciding reads it');

/** Long enough for a person to look, short enough that MCP clients' usual 60 s request timeout is not hit. */
export const DEFAULT_WAIT_SECONDS = 50;

/** How often a call that waits for a person tells its client it is still at work (asking.ts). */
export const PROGRESS_EVERY_S = 10;

/** The longest a request may wait for a decision (approval.create's timeoutS). */
const MAX_WAIT_SECONDS = 86_400;

/** `until: 'decision'`: by default the call waits for the decision (see asking.ts); else this many seconds. */
export function waitSeconds(byDefault: number | 'decision') {
  return z
    .number()
    .min(0)
    .max(MAX_WAIT_SECONDS)
    .optional()
    .describe(
      byDefault === 'decision'
        ? `how long to wait for a person's decision before answering "still waiting" (default: until it is decided, with a progress notification every ${PROGRESS_EVERY_S} s, when your client takes progress; else ${DEFAULT_WAIT_SECONDS} s, under MCP clients' usual 60 s timeout); 0 answers at once`
        : `how long to wait for a person's decision (default ${byDefault}: answer at once; progress notifications every ${PROGRESS_EVERY_S} s meanwhile)`,
    );
}
