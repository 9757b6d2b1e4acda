// What every operation on running branches (fork, checkpoint, rollback) works with.
import type { Criu } from '../host/criu/criu.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry } from '../registry/registry.js';
import type { BranchStorage } from '../workspaces/branch-storage.js';
import type { HostLedger } from '../workspaces/ledger.js';
import type { BranchRuntime } from '../workspaces/runtime.js';
import type { WorkspaceService } from '../workspaces/workspace-service.js';

export interface BranchDeps {
  registry: Registry;
  ledger: HostLedger;
  runtime: BranchRuntime;
  storage: BranchStorage;
  workspaces: WorkspaceService;
  criu: Criu;
}

/** A test's faultAt switch: refused unless the helper was started to allow fault injection. */
export function refuseFaultsUnlessAllowed(allowFaultInjection: boolean, faultAt: string | undefined): void {
  if (faultAt && !allowFaultInjection) throw new GroveError('E_INVALID_PARAMS', 'fault injection is disabled (start the helper with GROVE_FAULT_INJECTION=1)');
}
