// What every operation on running branches (fork, checkpoint, rollback) works with.
import type { Criu } from '../host/criu/criu.js';
import type { ExecService } from '../exec/exec-service.js';
import type { KernelTier } from '../host/kernel-tier.js';
import type { KsmPacer } from '../host/ksm.js';
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
  /** Runs what the helper does inside a running branch (its generation's announcement: workspaces/generation.ts). */
  exec: Pick<ExecService, 'run'>;
  /** Holds ksmd at its idle pace while CRIU works (host/ksm.ts). */
  ksm: Pick<KsmPacer, 'hold'>;
  /** Says how children get their memory (host/kernel-tier.ts). */
  kernelTier: Pick<KernelTier, 'current' | 'tool'>;
}
