// Objects of the helper's protocol as the app's tests (controller and
// renderer) use them: branches, images, identities, requests in the approvals
// queue, grants, desktop actions. Valid against the helper's schemas.
import type { Actor, Approval, ApprovalAction, Grant, Image, Workspace } from '../../src/api/contract.js';
import type { AuditEntry } from '../../../privileged-helper/src/protocol/approvals.js';
import type { DesktopAction } from '../../../privileged-helper/src/protocol/desktop.js';

/** This app's own connection, as the helper reports it in hello (the app knows itself by it, not by its own pid). */
export const APP: Actor = { role: 'person', uid: 0, user: 'root', pid: 3000, process: 'node', client: 'app:grove-app' };
export const ALICE: Actor = { role: 'agent', uid: 1001, user: 'alice', pid: 4242, process: 'grove', client: 'cli:grove-cli' };
export const BOB: Actor = { role: 'person', uid: 1002, user: 'bob', pid: 4343, process: 'grove', client: 'cli:grove-cli' };

export const branch = (id: string, name: string, over: Partial<Workspace> = {}): Workspace => ({
  id,
  name,
  image: 'desktop',
  state: 'running',
  hostname: name,
  machineId: 'f'.repeat(32),
  createdAt: '2026-01-01T00:00:00.000Z',
  address: '10.1.0.2',
  ports: [{ containerPort: 3000, hostPort: 43000, hostAddress: '127.0.0.1' }],
  vncSocket: `/run/grove/vnc/main-${id}.sock`,
  streamSocket: `/run/grove/stream/${id}.sock`,
  pid: 42,
  exitReason: null,
  parent: null,
  tree: id,
  version: null,
  main: true,
  madeBy: { role: 'person', uid: 0, user: 'root' },
  claimedBy: null,
  limits: { memoryBytes: 2 * 2 ** 30, pids: 2048, cpuWeight: 100, diskBytes: 10 * 2 ** 30 },
  project: null,
  sensitive: false,
  disk: null,
  retiredAt: null,
  merges: [],
  ...over,
});

/** A ready image built from a Containerfile FROM grove/desktop (a desktop: it lacks nothing). */
export const image = (name: string, over: Partial<Image> = {}): Image => ({
  name,
  state: 'ready',
  origin: 'containerfile',
  source: `/home/me/${name}/Containerfile`,
  reference: `localhost/grove/${name}:latest`,
  id: 'c0ffee'.padEnd(64, '0'),
  digest: `sha256:${'ab12'.repeat(16)}`,
  layers: 2,
  builtAt: '2026-01-01T00:10:00.000Z',
  sizeBytes: 1200 * 2 ** 20,
  sharedBytes: 1100 * 2 ** 20,
  missing: [],
  ...over,
});

export const PROMOTE: ApprovalAction = { kind: 'branch.promote' };
export const DISCARD: ApprovalAction = { kind: 'branch.discard' };
export const STOP: ApprovalAction = { kind: 'workspace.stop' };
export const POLICY: ApprovalAction = { kind: 'egress.policy', change: { mode: 'allow', allow: [{ host: 'pypi.org', port: 443 }] } };
export const CONNECTION: ApprovalAction = {
  kind: 'egress.connection',
  host: 'outside.test',
  port: 8080,
  method: 'GET',
  url: 'http://outside.test:8080/x',
  held: 'destination',
  address: null,
};

const EFFECT: Record<ApprovalAction['kind'], string> = {
  'branch.promote': 'one-1 becomes the main line and takes over its host ports; one is kept as a version',
  'branch.discard': 'one-1 is removed with its processes and files; its versions are kept',
  'workspace.stop': "one-1's processes end; its files are kept",
  'egress.policy': "one-1's outside access becomes: allow list only, with pypi.org:443",
  'egress.connection': 'the request goes through',
  'branch.merge': "what one-2 changed comes into one-1's project, file by file, while it runs; it is checkpointed first",
  'branch.rollback': 'one-1 returns to version 0000000a; what it did since is lost unless checkpointed',
  'branch.export': 'what one-1 changed in its project becomes one commit on a new branch from-grove of /home/p/app, written by the person who approves',
};

/** A request on branch one-1 (aaaaaaa2) of workspace one, pending since a second before `now`, expiring a minute after. */
export function approval(id: string, action: ApprovalAction, over: Partial<Approval> = {}, now = Date.now()): Approval {
  const connection = action.kind === 'egress.connection';
  return {
    id,
    action,
    workspace: 'aaaaaaa2',
    workspaceName: 'one-1',
    tree: 'aaaaaaa1',
    requestedBy: connection ? null : ALICE,
    reason: connection ? 'outside.test is not on the allow list' : 'the tests pass on this branch',
    effect: EFFECT[action.kind],
    preview: {
      thumbnail: connection ? null : 'data:image/png;base64,iVBORw0KGgo=',
      diff:
        action.kind === 'branch.promote' || action.kind === 'branch.discard'
          ? {
              against: { id: 'aaaaaaa1', name: 'one' },
              added: 2,
              changed: 1,
              removed: 1,
              paths: ['+/root/app/new.py', '+/root/app/b.py', '~/root/app/main.py', '-/root/app/old.py'],
            }
          : null,
      processes: action.kind === 'branch.discard' || action.kind === 'workspace.stop' ? { count: 17, names: ['chromium', 'xterm', 'Xvnc'] } : null,
      versions: action.kind === 'branch.discard' ? 2 : null,
      notes: [],
    },
    state: 'pending',
    at: new Date(now - 1000).toISOString(),
    expiresAt: new Date(now + 60_000).toISOString(),
    decision: null,
    outcome: null,
    ...over,
  };
}

/** The request as decided by `by` (approved: being carried out; or denied). */
export function decided(a: Approval, by: Actor, approve: boolean, note: string | null = null, always = false): Approval {
  return { ...a, state: approve ? 'running' : 'denied', decision: { by, grant: null, at: new Date().toISOString(), note, always } };
}

export function grant(id: string, kind: Grant['kind'], tree = 'aaaaaaa1', treeName = 'one'): Grant {
  return { id, tree, treeName, kind, grantedBy: APP, at: '2026-01-01T00:05:00.000Z' };
}

export function audit(
  seq: number,
  actor: Actor | null,
  action: string,
  target: string | null,
  outcome: 'ok' | 'error' = 'ok',
  detail: string | null = null,
): AuditEntry {
  return { seq, at: new Date().toISOString(), actor, action, target, outcome, detail };
}

export function desktopAction(
  action: DesktopAction['action'],
  summary: string,
  cursor: { x: number; y: number } | null,
  at = new Date().toISOString(),
): DesktopAction {
  return { workspace: 'aaaaaaa2', workspaceName: 'one-1', action, summary, cursor, screen: cursor ? { width: 1280, height: 800 } : null, ok: true, at };
}
