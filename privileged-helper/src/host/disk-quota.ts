// Each branch's disk limit: btrfs simple quotas (squota) on the pool, through
// native/grove-quota.c (btrfs-progs 6.2 cannot enable them). A simple quota
// charges an extent once, when it is written, to the subvolume that wrote it:
// a snapshot (a fork's child, a rollback's new files) starts at nothing and is
// charged only for what it writes after, so a fork's shared blocks are not
// counted twice; and nothing is walked at a snapshot or a delete, which kept
// full qgroups out of a fork's freeze (docs/disk-quotas.md). A limit is a
// subvolume's: a branch whose files are made anew (a fork, a rollback) gets
// its limit set on them before its processes run.
import { readFileSync } from 'node:fs';
import type { DiskUse } from '../protocol/entities.js';
import { run } from './run.js';

/** How the pool counts: simple quotas, full qgroups someone enabled before (limits hold, snapshots cost more), or not at all. */
export type QuotaMode = 'simple' | 'full' | 'off';

/** Left below the limit when a branch counts as full: a write reserves its whole size before it is charged. */
export function isFull(usedBytes: number, limitBytes: number): boolean {
  return limitBytes - usedBytes < Math.max(2 ** 20, limitBytes / 100);
}

export class DiskQuota {
  private current: QuotaMode = 'off';
  /** The pool's filesystem id: /sys/fs/btrfs/<fsid>/qgroups counts each subvolume. */
  private fsid = '';
  /** Each limited subvolume's id (its qgroup is 0/id), by path (a rollback's new files take a new id); a few bytes per branch made while the helper runs. */
  private readonly ids = new Map<string, number>();

  constructor(
    /** native/grove-quota.c. */
    private readonly tool: string,
    private readonly poolRoot: string,
  ) {}

  get mode(): QuotaMode {
    return this.current;
  }

  /** Turns simple quotas on for the pool (nothing if they are on); without them branches have no disk limit, and `why` is logged. */
  async enable(log: (why: string) => void): Promise<QuotaMode> {
    const res = await run(this.tool, ['enable', this.poolRoot], { allowFailure: true });
    const [mode, fsid] = res.stdout.trim().split(' ');
    if (res.exitCode !== 0 || (mode !== 'simple' && mode !== 'full') || !fsid) {
      log(`disk quotas unavailable, branches have no disk limit: ${(res.stderr || res.stdout).trim()} (simple quotas need Linux ≥ 6.7)`);
      return this.current;
    }
    if (mode === 'full') log('the pool has full btrfs qgroups on (enabled before Grove): disk limits hold, but snapshots cost more than with simple quotas');
    this.fsid = fsid;
    this.current = mode;
    return mode;
  }

  /** Sets each subvolume's limit, in one run; nothing while quotas are off. */
  async limit(limits: readonly { subvolume: string; bytes: number }[]): Promise<void> {
    if (this.current === 'off' || limits.length === 0) return;
    const res = await run(this.tool, ['limit', ...limits.flatMap((l) => [l.subvolume, String(l.bytes)])]);
    const ids = res.stdout.trim().split('\n').map(Number);
    limits.forEach((l, i) => this.ids.set(l.subvolume, ids[i]!));
  }

  /** What the subvolume's limit counts now (the kernel's own count); null while quotas are off or it was never limited. */
  use(subvolume: string, limitBytes: number): DiskUse | null {
    const id = this.ids.get(subvolume);
    if (this.current === 'off' || id === undefined) return null;
    try {
      const usedBytes = Number(readFileSync(`/sys/fs/btrfs/${this.fsid}/qgroups/0_${id}/referenced`, 'utf8'));
      return { usedBytes, full: isFull(usedBytes, limitBytes) };
    } catch {
      return null; // deleted meanwhile
    }
  }
}
