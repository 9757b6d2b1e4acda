// Every tool `grove mcp` offers, in the order a client lists them.
import type { GroveTool } from '../tool.js';
import { checkpointTool } from './checkpoint.js';
import { computerTool } from './computer.js';
import { copyInTool } from './copy-in.js';
import { diffTool } from './diff.js';
import { discardTool } from './discard.js';
import { execTool } from './exec.js';
import { forkTool } from './fork.js';
import { launchTool } from './launch.js';
import { listBranchesTool } from './list-branches.js';
import { listMyRequestsTool } from './list-my-requests.js';
import { openUrlTool } from './open-url.js';
import { requestDiscardTool } from './request-discard.js';
import { requestOutsideAccessTool } from './request-outside-access.js';
import { requestPromoteTool } from './request-promote.js';
import { requestStatusTool } from './request-status.js';
import { rollbackTool } from './rollback.js';
import { downloadTool, uploadTool } from './transfer.js';
import { windowsTool } from './windows.js';

export const TOOLS: readonly GroveTool[] = [
  listBranchesTool,
  computerTool,
  windowsTool,
  openUrlTool,
  launchTool,
  execTool,
  uploadTool,
  downloadTool,
  copyInTool,
  forkTool,
  checkpointTool,
  rollbackTool,
  diffTool,
  discardTool,
  requestPromoteTool,
  requestDiscardTool,
  requestOutsideAccessTool,
  requestStatusTool,
  listMyRequestsTool,
];
