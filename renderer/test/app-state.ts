// The controller's AppState as the renderer tests start from it: these
// branches, nothing else, and the helper connected or not.
import type { AppState, Workspace } from '../../main/src/api/contract.js';

export const appState = (branches: Workspace[], status: 'connected' | 'disconnected' = 'connected'): AppState => ({
  connection: { status, epoch: 'e1', error: status === 'connected' ? null : 'gone', since: '2026-01-01T00:00:00Z' },
  branches,
  versions: [],
  images: [],
  operations: [],
  activity: [],
  approvals: [],
});
