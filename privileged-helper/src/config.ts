// The helper's configuration, read once at start from the environment.
// Several helpers may run on one host (the app's and a test run's): every host
// object a helper makes carries its instance tag, so none touches another's.
import path from 'node:path';
import { z } from 'zod';
import { cacheDirOf, groveSpawnPath } from './tool-paths.js';
import { builtModulePath, type KernelTierPaths } from './host/kernel-tier.js';
import { groveFile } from './protocol/grove-files.js';
import type { StreamConfig } from './stream/branch-streams.js';
import { DEFAULT_RUN_DIR, helperSockets } from './protocol/sockets.js';
import { AUDIT_DAYS_KEPT, AUDIT_ROWS_KEPT, type AuditRetention } from './registry/registry.js';

const Instance = z.string().regex(/^[a-z0-9]{1,4}$/, 'GROVE_INSTANCE is 1-4 of a-z0-9');
const Subnet = z.string().regex(/^10\.\d{1,3}\.0\.0\/16$/, 'GROVE_SUBNET is a 10.X.0.0/16 range');

/**
 * How long a branch's streamer runs on after its last viewer left. A
 * streamer holds far more memory than the desktop it shows, so one per
 * running branch is too dear; a few minutes keep it through a reload, or a
 * person switching between branches and back, without paying its start again.
 */
export const STREAM_IDLE_MS = 180_000;

export interface HelperConfig {
  instance: string;
  stateDir: string;
  runDir: string;
  /** The person socket (root and `group`). */
  socketPath: string;
  /** The agent socket (`agentGroup`), in a directory of its own. */
  agentSocketPath: string;
  /** Each running branch's desktop socket (root:`group` 0660), in a root:`group` 0750 directory. */
  vncDir: string;
  /** Each running branch's Selkies stream: its socket (root:`group` 0660) and its streamer's directory (the streamer's uid, 0700), in a root:`group` 0751 directory. */
  stream: StreamConfig;
  /**
   * Where branches' roots are mounted: root:root 0711, one 0700 directory per
   * branch owned by its tree's host root (a branch's root must reach its own
   * root from inside its user namespace; no one else may look in).
   */
  rootsDir: string;
  cacheDir: string;
  group: string;
  agentGroup: string;
  /** The unprivileged user the egress gate's process runs as (made on first start). */
  gateUser: string;
  /** native/peercred.c, built by build/host/setup.sh: peer credentials of each connection. */
  peercredAddon: string;
  /** How long an agent's request waits for a person by default. */
  approvalTimeoutMs: number;
  /** A branch's desktop (VNC) session is closed after this long without calls (GROVE_DESKTOP_IDLE_MS). */
  desktopIdleMs: number;
  pool: { device: string | null; loopFile: string; sizeGiB: number; mountPoint: string };
  /** /16 from which each workspace gets a /30 for its veth pair. */
  subnet: string;
  criu: string;
  /** Directory with the image recipes shipped with the helper. */
  recipesDir: string;
  /** native/grove-enter.c (built by build/host/setup.sh): starts what belongs to a branch inside its cage. */
  groveEnter: string;
  /**
   * False only in the benchmark's comparison instance (GROVE_BENCH_UNCAGED=1):
   * branches without the cage's user namespace, capability cuts, no_new_privs, seccomp and cgroups.
   */
  cage: boolean;
  /**
   * False only in the benchmark's comparison instance (GROVE_BENCH_NO_DISK_QUOTA=1):
   * its pool gets no quotas, its branches no disk limit.
   */
  diskQuota: boolean;
  /** native/grove-quota.c (built by build/host/setup.sh): simple quotas on the pool, each branch's disk limit. */
  groveQuota: string;
  /** native/grove-mount.c (built by build/host/setup.sh): idmapped mounts for branches in user namespaces. */
  groveMount: string;
  /** native/grove-netlock.c (built by build/host/setup.sh): the lock that keeps a netns silent while CRIU restores into it. */
  groveNetlock: string;
  /** native/grove-action.c (built by build/host/setup.sh): what CRIU runs at a dump's and a restore's actions. */
  groveAction: string;
  /** native/grove-spawn.c (built by build/host/setup.sh): starts the helper's programs (host/run.ts). */
  groveSpawn: string;
  /** The kernel tier's module and the files that say whether the host can load it (host/kernel-tier.ts). */
  kernelTier: KernelTierPaths;
  /** The memory (PSS) the standbys of versions may hold together, in MiB; 0: none are made (GROVE_STANDBY_BUDGET_MIB, branches/standby.ts). */
  standbyBudgetMib: number;
  /** Lets branch.fork take a faultAt stage (tests of the fork's rollback). */
  allowFaultInjection: boolean;
  /** How many entries, and how many days of them, the audit log keeps. */
  audit: AuditRetention;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): HelperConfig {
  const stateDir = env.GROVE_STATE_DIR ?? '/var/lib/grove';
  const runDir = env.GROVE_RUN_DIR ?? DEFAULT_RUN_DIR;
  const sockets = helperSockets(env, runDir);
  const cacheDir = cacheDirOf(env);
  const sizeGiB = Number(env.GROVE_POOL_SIZE_GIB ?? '40');
  if (!Number.isInteger(sizeGiB) || sizeGiB < 4) throw new Error('GROVE_POOL_SIZE_GIB must be an integer ≥ 4');
  const approvalTimeoutMs = Number(env.GROVE_APPROVAL_TIMEOUT_MS ?? 15 * 60_000);
  if (!Number.isInteger(approvalTimeoutMs) || approvalTimeoutMs < 1000) throw new Error('GROVE_APPROVAL_TIMEOUT_MS must be an integer ≥ 1000');
  const desktopIdleMs = Number(env.GROVE_DESKTOP_IDLE_MS ?? 60_000);
  if (!Number.isInteger(desktopIdleMs) || desktopIdleMs < 1000) throw new Error('GROVE_DESKTOP_IDLE_MS must be an integer ≥ 1000');
  const streamIdleMs = Number(env.GROVE_STREAM_IDLE_MS ?? STREAM_IDLE_MS);
  if (!Number.isInteger(streamIdleMs) || streamIdleMs < 1000) throw new Error('GROVE_STREAM_IDLE_MS must be an integer ≥ 1000');
  const standbyBudgetMib = Number(env.GROVE_STANDBY_BUDGET_MIB ?? 0);
  if (!Number.isInteger(standbyBudgetMib) || standbyBudgetMib < 0) throw new Error('GROVE_STANDBY_BUDGET_MIB must be an integer ≥ 0');
  return {
    instance: Instance.parse(env.GROVE_INSTANCE ?? 'g'),
    stateDir,
    runDir,
    socketPath: sockets.person,
    agentSocketPath: sockets.agent,
    vncDir: path.join(runDir, 'vnc'),
    stream: {
      // Beside runDir, not in it: each streamer runs as its branch's root and must pass every directory above its own.
      dir: `${runDir}-stream`,
      selkies: env.GROVE_SELKIES ?? path.join(cacheDir, 'selkies/venv/bin/selkies'),
      shmShim: path.join(cacheDir, 'lib/grove-shm-shared.so'),
      idleMs: streamIdleMs,
    },
    rootsDir: `${runDir}-roots`,
    cacheDir,
    group: env.GROVE_GROUP ?? 'grove',
    agentGroup: env.GROVE_AGENT_GROUP ?? 'grove-agent',
    gateUser: env.GROVE_GATE_USER ?? 'grove-gate',
    peercredAddon: env.GROVE_PEERCRED ?? path.join(cacheDir, 'lib/peercred.node'),
    approvalTimeoutMs,
    desktopIdleMs,
    pool: {
      device: env.GROVE_POOL_DEVICE ?? null,
      loopFile: path.join(stateDir, 'pool.img'),
      sizeGiB,
      mountPoint: path.join(stateDir, 'pool'),
    },
    subnet: Subnet.parse(env.GROVE_SUBNET ?? '10.213.0.0/16'),
    criu: env.GROVE_CRIU ?? path.join(cacheDir, 'criu/sbin/criu'),
    recipesDir: groveFile('privileged-helper/image'),
    groveEnter: env.GROVE_ENTER ?? path.join(cacheDir, 'bin/grove-enter'),
    diskQuota: env.GROVE_BENCH_NO_DISK_QUOTA !== '1',
    groveQuota: env.GROVE_QUOTA ?? path.join(cacheDir, 'bin/grove-quota'),
    groveMount: env.GROVE_MOUNT ?? path.join(cacheDir, 'bin/grove-mount'),
    groveNetlock: env.GROVE_NETLOCK ?? path.join(cacheDir, 'bin/grove-netlock'),
    groveAction: env.GROVE_ACTION ?? path.join(cacheDir, 'bin/grove-action'),
    groveSpawn: groveSpawnPath(env),
    kernelTier: {
      module: env.GROVE_KERNEL_MODULE ?? builtModulePath(cacheDir),
      tool: env.GROVE_SHARE ?? path.join(cacheDir, 'bin/grove-share'),
      proc: '/proc',
      sys: '/sys',
    },
    cage: env.GROVE_BENCH_UNCAGED !== '1',
    standbyBudgetMib,
    allowFaultInjection: env.GROVE_FAULT_INJECTION === '1',
    audit: auditRetention(env),
  };
}

/** GROVE_AUDIT_MAX_ROWS (default 100,000) and GROVE_AUDIT_MAX_DAYS (default 365). */
export function auditRetention(env: NodeJS.ProcessEnv): AuditRetention {
  const maxRows = Number(env.GROVE_AUDIT_MAX_ROWS ?? AUDIT_ROWS_KEPT);
  if (!Number.isInteger(maxRows) || maxRows < 100 || maxRows > 100_000_000) throw new Error('GROVE_AUDIT_MAX_ROWS must be an integer from 100 to 100000000');
  const maxDays = Number(env.GROVE_AUDIT_MAX_DAYS ?? AUDIT_DAYS_KEPT);
  if (!Number.isInteger(maxDays) || maxDays < 1 || maxDays > 36_500) throw new Error('GROVE_AUDIT_MAX_DAYS must be an integer from 1 to 36500');
  return { maxRows, maxDays };
}
