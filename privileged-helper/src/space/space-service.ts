// Disk space: the pool's free space, what each branch's, version's and fork
// point's files hold in it (space.get), and a watch that tells subscribers when the pool
// becomes low (the pool.space event), so a person learns it before forks and
// checkpoints are refused (host/space.ts), and when a branch fills its disk
// limit or has room again (its workspace.changed: writes in it fail meanwhile).
import { spaceAt } from '../host/space.js';
import { run } from '../host/run.js';
import type { PoolLayout } from '../host/pool.js';
import type { DiskUse, PoolSpace, SpaceReport } from '../protocol/entities.js';
import type { Registry } from '../registry/registry.js';
import path from 'node:path';

export const SPACE_WATCH_INTERVAL_MS = 10_000;

/** Low: under 1 GiB or 5 % of the pool, whichever is more (a fork wants 256 MiB per child, a checkpoint its branch's memory). */
export function isLow(freeBytes: number, totalBytes: number): boolean {
  return freeBytes < Math.max(2 ** 30, totalBytes * 0.05);
}

export class SpaceService {
  private timer: NodeJS.Timeout | null = null;
  private lastLow: boolean | null = null;
  /** Branches whose disk limit was full at the last look. */
  private readonly full = new Set<string>();

  constructor(
    private readonly pool: PoolLayout,
    private readonly registry: Registry,
    private readonly filesPath: (ws: { id: string }) => string,
    private readonly diskUse: (ws: { id: string }) => DiskUse | null,
  ) {}

  async poolSpace(): Promise<PoolSpace> {
    const { freeBytes, totalBytes } = await spaceAt(this.pool.root);
    return { freeBytes, totalBytes, low: isLow(freeBytes, totalBytes) };
  }

  async report(): Promise<SpaceReport> {
    // Data still in memory has no blocks yet: btrfs counts it once written.
    await run('btrfs', ['filesystem', 'sync', this.pool.root]);
    const branches: SpaceReport['branches'] = [];
    for (const w of this.registry.listWorkspaces()) {
      const held = await heldBy(this.filesPath(w));
      if (held) branches.push({ workspace: w.id, name: w.name, state: w.state, ...held });
    }
    const versions: SpaceReport['versions'] = [];
    for (const v of this.registry.listVersions()) {
      const held = await heldBy(path.join(this.pool.versions, v.id));
      if (held) versions.push({ version: v.id, workspace: v.orphanOf === null ? v.branchId : null, orphanOf: v.orphanOf, label: v.label, ...held });
    }
    const forkPoints: SpaceReport['forkPoints'] = [];
    for (const fp of this.registry.listForkPoints()) {
      const held = await heldBy(fp.path);
      if (held) forkPoints.push({ forkPoint: fp.id, source: fp.sourceId, ...held });
    }
    return { pool: await this.poolSpace(), branches, versions, forkPoints, at: new Date().toISOString() };
  }

  /**
   * Calls `changed` with the pool's space whenever it becomes low or stops
   * being low, and `branchChanged` with each branch whose disk limit becomes
   * full or has room again.
   */
  watch(changed: (space: PoolSpace) => void, branchChanged: (workspaceId: string) => void, intervalMs = SPACE_WATCH_INTERVAL_MS): void {
    const tick = async () => {
      this.fullBranchesChanged().forEach(branchChanged);
      // Looked at again at the next tick; space.get reports why it cannot be read.
      const space = await this.poolSpace().catch(() => null);
      if (!space || space.low === this.lastLow) return;
      this.lastLow = space.low;
      changed(space);
    };
    this.timer ??= setInterval(() => void tick(), intervalMs);
    this.timer.unref();
    void tick();
  }

  /** Branches whose disk limit became full, or has room again, since the last look. */
  private fullBranchesChanged(): string[] {
    const changed: string[] = [];
    const present = new Set<string>();
    for (const w of this.registry.listWorkspaces()) {
      present.add(w.id);
      const full = this.diskUse(w)?.full ?? false;
      if (full === this.full.has(w.id)) continue;
      if (full) this.full.add(w.id);
      else this.full.delete(w.id);
      changed.push(w.id);
    }
    for (const id of this.full) if (!present.has(id)) this.full.delete(id);
    return changed;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }
}

/** `btrfs filesystem du -s`: total and exclusive bytes under a path; null when it cannot be measured (gone meanwhile). */
async function heldBy(dir: string): Promise<{ exclusiveBytes: number; totalBytes: number } | null> {
  const res = await run('btrfs', ['filesystem', 'du', '-s', '--raw', dir], { allowFailure: true, timeoutMs: 60_000 });
  const line = res.stdout.trim().split('\n').at(-1)?.trim().split(/\s+/) ?? [];
  const [total, exclusive] = [Number(line[0]), Number(line[1])];
  if (res.exitCode !== 0 || !Number.isInteger(total) || !Number.isInteger(exclusive)) return null;
  return { exclusiveBytes: exclusive, totalBytes: total };
}
