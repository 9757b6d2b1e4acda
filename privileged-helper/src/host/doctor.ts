// `grove doctor`: what this host supports and what is missing, checked for real.
import { access, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { HelperConfig } from '../config.js';
import type { DoctorCheck, DoctorReport } from '../protocol/entities.js';
import { CGROUP_ROOT, CONTROLLERS } from './cgroups.js';
import { starterTies } from './detach.js';
import type { DiskQuota, QuotaMode } from './disk-quota.js';
import type { KernelTier } from './kernel-tier.js';
import { inrootAddonPath } from '../tool-paths.js';
import { isMounted } from './mounts.js';
import { KDAT_CACHE } from './criu/kdat-cache.js';
import { run } from './run.js';

const CRIU_MIN = [4, 2] as const;

export class Doctor {
  constructor(
    private readonly config: HelperConfig,
    private readonly kernelTier: Pick<KernelTier, 'doctorCheck'>,
    private readonly quota: Pick<DiskQuota, 'mode'>,
  ) {}

  async report(): Promise<DoctorReport> {
    const criu = await this.criu();
    const checks: DoctorCheck[] = [
      { name: 'kernel', ok: true, detail: `Linux ${os.release()}` },
      await tool('btrfs', ['--version']),
      await tool('crun', ['--version']),
      await tool('nft', ['--version']),
      await tool('debootstrap', ['--version']),
      await tool('buildah', ['--version']),
      await tool('skopeo', ['--version']),
      await tool('igzip', ['--version']),
      await tool('bwrap', ['--version']),
      await filesystem('btrfs'),
      await filesystem('overlay'),
      await present('userfaultfd', '/proc/sys/vm/unprivileged_userfaultfd', 'userfaultfd (CRIU lazy pages)'),
      await present('ksm', '/sys/kernel/mm/ksm/run', 'KSM (memory sharing between branches)'),
      await present('netns', '/proc/self/ns/net', 'network namespaces'),
      await present('grove-enter', this.config.groveEnter, 'grove-enter (branch processes caged: cgroups, capabilities, seccomp; KSM-mergeable)'),
      await present('grove-mount', this.config.groveMount, 'grove-mount (idmapped mounts: branches in user namespaces)'),
      await present('grove-netlock', this.config.groveNetlock, "grove-netlock (a branch's network silent while CRIU restores it)"),
      await present('grove-spawn', this.config.groveSpawn, "grove-spawn (starts the helper's programs without stalling it)"),
      await present('grove-action', this.config.groveAction, "grove-action (what CRIU does at a fork's freeze, thaw and resume)"),
      await present('inroot', inrootAddonPath(process.env), "inroot.node (a branch's files opened inside its root, whatever links it plants)"),
      await limitsEnforced(),
      diskLimits(this.quota.mode, this.config.diskQuota),
      {
        name: 'criu',
        ok: criu.version !== null && versionAtLeast(criu.version, CRIU_MIN),
        detail: criu.version ? `CRIU ${criu.version} at ${this.config.criu} (need ≥ ${CRIU_MIN.join('.')})` : `no CRIU at ${this.config.criu}`,
      },
      { name: 'criu check', ok: criu.checkPassed, detail: criu.checkDetail },
      await kdatCache(),
      {
        name: 'pool',
        ok: await isMounted(this.config.pool.mountPoint),
        detail: `${this.config.pool.device ?? this.config.pool.loopFile} on ${this.config.pool.mountPoint}`,
      },
      await detached(this.config.instance),
      await this.kernelTier.doctorCheck(),
    ];
    return { ok: checks.every((c) => c.ok), checks, criu: { version: criu.version, checkPassed: criu.checkPassed } };
  }

  private async criu(): Promise<{ version: string | null; checkPassed: boolean; checkDetail: string }> {
    const v = await run(this.config.criu, ['--version'], { allowFailure: true }).catch(() => null); // as in tool()
    const version = v && v.exitCode === 0 ? (/Version:\s*(\S+)/.exec(v.stdout)?.[1] ?? null) : null;
    if (!version) return { version: null, checkPassed: false, checkDetail: 'criu is not installed (build/host/criu.sh builds it)' };
    const check = await run(this.config.criu, ['check'], { allowFailure: true, timeoutMs: 60_000 });
    const out = `${check.stdout}\n${check.stderr}`;
    const passed = check.exitCode === 0 && out.includes('Looks good');
    return { version, checkPassed: passed, checkDetail: passed ? 'Looks good' : out.trim().split('\n').slice(-3).join(' / ') };
  }
}

export function versionAtLeast(version: string, min: readonly number[]): boolean {
  const parts = version.split('.').map((n) => Number.parseInt(n, 10));
  for (let i = 0; i < min.length; i++) {
    const have = parts[i] ?? 0;
    const want = min[i] ?? 0;
    if (have !== want) return have > want;
  }
  return true;
}

/** CRIU's kernel-probe cache (criu/kdat-cache.ts): without it every dump and restore probes the kernel again. */
async function kdatCache(): Promise<DoctorCheck> {
  const ok = await access(KDAT_CACHE).then(
    () => true,
    () => false,
  );
  return {
    name: 'criu cache',
    ok,
    detail: ok
      ? `${KDAT_CACHE} (CRIU's kernel probe, saved)`
      : `no ${KDAT_CACHE}: every CRIU run probes the kernel again (~40 ms, more under load); the helper writes it at start`,
  };
}

/** The helper (this process) does not die with the terminal or login that started it. */
async function detached(instance: string): Promise<DoctorCheck> {
  const ties = await starterTies(instance);
  if (ties.length === 0) return { name: 'helper', ok: true, detail: 'runs in a session and cgroups of its own' };
  return { name: 'helper', ok: false, detail: `${ties.join('; ')}: it would end with it. Start it with ./start.sh or the systemd unit in build/` };
}

async function tool(name: string, args: string[]): Promise<DoctorCheck> {
  // run() rejects only when grove-spawn cannot start: the report goes on, and its own check says so.
  const res = await run(name, args, { allowFailure: true }).catch(() => null);
  const ok = res !== null && res.exitCode === 0;
  return { name, ok, detail: ok ? (res.stdout || res.stderr).split('\n')[0]! : `${name} is not installed` };
}

async function filesystem(fs: string): Promise<DoctorCheck> {
  const known = await readFile('/proc/filesystems', 'utf8');
  const ok = known.split('\n').some((l) => l.trim().endsWith(fs));
  return { name: `${fs} (kernel)`, ok, detail: ok ? `${fs} filesystem available` : `the kernel has no ${fs} support` };
}

async function present(name: string, file: string, what: string): Promise<DoctorCheck> {
  const ok = await access(file).then(
    () => true,
    () => false,
  );
  return { name, ok, detail: ok ? `${what}: available` : `${what}: missing (${file})` };
}

/** Whether branches' disk limits hold: the pool's quotas (disk-quota.ts). */
function diskLimits(mode: QuotaMode, wanted: boolean): DoctorCheck {
  const detail: Record<QuotaMode, string> = {
    simple: "each branch's disk limit holds: btrfs simple quotas on the pool",
    full: "each branch's disk limit holds: full btrfs qgroups on the pool (enabled before Grove; snapshots cost more than with simple quotas)",
    off: wanted
      ? 'no quotas on the pool: a branch can fill it (simple quotas need Linux ≥ 6.7 and grove-quota, built by build/host/setup.sh; the helper log says why)'
      : "no quotas on the pool (GROVE_BENCH_NO_DISK_QUOTA: the benchmark's comparison instance)",
  };
  return { name: 'disk limits', ok: mode !== 'off' || !wanted, detail: detail[mode] };
}

/** Which of a branch's limits this host enforces: one cgroup v1 controller each (cgroups.ts). */
async function limitsEnforced(): Promise<DoctorCheck> {
  const found = await Promise.all(
    CONTROLLERS.map((c) =>
      access(path.join(CGROUP_ROOT, c, 'cgroup.procs')).then(
        () => c,
        () => null,
      ),
    ),
  );
  const missing = CONTROLLERS.filter((_, i) => found[i] === null);
  const words: Record<(typeof CONTROLLERS)[number], string> = { memory: 'memory', pids: 'processes', cpu: 'CPU weight', devices: 'device allow list' };
  return {
    name: 'limits',
    ok: missing.length === 0,
    detail:
      missing.length === 0
        ? `enforced per branch with cgroup v1: ${CONTROLLERS.map((c) => words[c]).join(', ')}`
        : `no cgroup v1 ${missing.join(', ')} controller: those limits cannot be enforced`,
  };
}
