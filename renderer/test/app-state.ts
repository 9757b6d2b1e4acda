// The controller's AppState as the renderer tests start from it: these
// branches, the helper connected or not (this app known as APP), and whatever
// else a test sets.
import type { AppState, Workspace } from '../../main/src/api/contract.js';
import { APP } from '../../main/test/unit/app-fixtures.js';

export const appState = (branches: Workspace[], status: 'connected' | 'disconnected' = 'connected', over: Partial<AppState> = {}): AppState => ({
  connection: { status, epoch: 'e1', error: status === 'connected' ? null : 'gone', since: '2026-01-01T00:00:00Z', identity: APP },
  branches,
  versions: [],
  images: [],
  operations: [],
  activity: [],
  approvals: [],
  decided: [],
  grants: [],
  agents: {},
  pool: null,
  desktopView: 'vnc',
  ...over,
});
