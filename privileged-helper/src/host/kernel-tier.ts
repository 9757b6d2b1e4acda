// The kernel tier (kernel/, docs/kernel-tier.md): the grove_share module shares
// a frozen source's anonymous memory copy-on-write with its forks, as fork()
// does. The helper loads it once, where the host allows, and this is the one
// place that says how a fork's children get their memory and why: the answer
// goes into every fork's report and into `grove doctor`.
import { access, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { DoctorCheck } from '../protocol/entities.js';
import { run } from './run.js';

export const MODULE = 'grove_share';

/** The files the decision reads; tests point them at a directory of their own. */
export interface KernelTierPaths {
  /** grove_share.ko built for the running kernel (build/host/setup.sh). */
  module: string;
  /** native/grove-share.c: the holder of a fork's snapshots. */
  tool: string;
  proc: string;
  sys: string;
}

export interface KernelTierState {
  loaded: boolean;
  /** Forks share memory through the module (host/share-holder.ts). */
  sharing: boolean;
  /** How a fork's children get their memory, with the reason, in words. */
  memory: string;
}

const COPIED = 'copied by CRIU from the dump (KSM merges the copies later)';

/** A fork's memory, copied, and why. */
export function copiedBecause(reason: string): string {
  return `${COPIED}: ${reason}`;
}
const SHARED = `shared copy-on-write from a capture of the source (${MODULE}); CRIU copies only what is not plain anonymous memory`;

export class KernelTier {
  private state: Promise<KernelTierState> | null = null;

  constructor(private readonly paths: KernelTierPaths) {}

  /** The holder of a fork's snapshots (native/grove-share.c). */
  get tool(): string {
    return this.paths.tool;
  }

  /** Loads the module if it can (once, at the first question) and says what forks do. */
  current(): Promise<KernelTierState> {
    this.state ??= this.decide();
    return this.state;
  }

  async doctorCheck(): Promise<DoctorCheck> {
    const { loaded, memory } = await this.current();
    // Optional: a host without it forks as before, so this never fails the doctor.
    return { name: 'kernel tier', ok: true, detail: `${MODULE} ${loaded ? 'loaded' : 'not loaded'}; fork memory ${memory}` };
  }

  private async decide(): Promise<KernelTierState> {
    const refusal = await this.whyNotLoadable();
    if (refusal) return { loaded: false, sharing: false, memory: copiedBecause(refusal) };
    if (!(await exists(path.join(this.paths.sys, 'module', MODULE)))) {
      const failure = await this.load();
      if (failure) return { loaded: false, sharing: false, memory: copiedBecause(failure) };
    }
    if (!(await exists(this.paths.tool))) {
      return {
        loaded: true,
        sharing: false,
        memory: copiedBecause(`${MODULE} is loaded but its holder ${this.paths.tool} is not built (build/host/setup.sh)`),
      };
    }
    return { loaded: true, sharing: true, memory: SHARED };
  }

  private async whyNotLoadable(): Promise<string | null> {
    if (!(await exists(path.join(this.paths.proc, 'modules')))) return `this kernel (${os.release()}) was built without module support`;
    // A kernel without the switch cannot turn module loading off.
    const disabled = await readFile(path.join(this.paths.proc, 'sys/kernel/modules_disabled'), 'utf8').catch(() => '0');
    if (disabled.trim() === '1') return 'module loading is switched off on this host (kernel.modules_disabled = 1)';
    return null;
  }

  private async load(): Promise<string | null> {
    if (!(await exists(this.paths.module))) {
      return `no ${MODULE}.ko built for ${os.release()} at ${this.paths.module} (build/host/setup.sh builds it for a 6.1 or 6.12 kernel whose headers are in /lib/modules/${os.release()}/build)`;
    }
    return loadWithInsmod(this.paths.module);
  }
}

/** null when loaded; else why not, in the kernel's words (grove_share says why it refuses). */
async function loadWithInsmod(module: string): Promise<string | null> {
  const result = await run('insmod', [module], { allowFailure: true, timeoutMs: 30_000 }).catch((err: Error) => ({
    exitCode: 1,
    stdout: '',
    stderr: err.message,
  }));
  if (result.exitCode === 0) return null;
  return `insmod ${module} failed: ${(result.stderr || result.stdout).trim().split('\n').pop() ?? 'no output'} (the kernel log says more)`;
}

function exists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** Where setup puts the module built for the running kernel. */
export function builtModulePath(cacheDir: string): string {
  return path.join(cacheDir, 'kernel/module', os.release(), `${MODULE}.ko`);
}
