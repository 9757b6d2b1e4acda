// The kernel tier's captures of versions. Where grove_share is loaded, a
// checkpoint also has its tree's anonymous memory captured at its instant
// (the images still hold all of it, so the version is whole without the
// capture), and a rollback to it attaches that memory instead of writing it
// afresh, as a fork's children do. A capture keeps the pages of its instant
// while the branch moves on, so only the latest version of each branch keeps
// one, and at most CAPTURES_KEPT in all; the helper's restart drops them (holders die
// with it), and rollbacks then copy, as on a host without the module.
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import type { KernelTier } from '../host/kernel-tier.js';
import { ShareHolder, type ShareSession } from '../host/share-holder.js';

/** Captures kept at once, across branches: each may hold up to its branch's memory. */
export const CAPTURES_KEPT = 4;

interface Held {
  branch: string;
  holder: ShareHolder;
  capturedFile: string;
  /** The dump made the capture (its action program created capturedFile). */
  kept: boolean;
}

export class VersionCaptures {
  private readonly held = new Map<string, Held>();

  constructor(
    private readonly o: {
      kernelTier: Pick<KernelTier, 'current' | 'tool'>;
      /** Where holders' sockets and the captured marks go (the helper's scratch space). */
      dir: string;
      log: (msg: string) => void;
    },
  ) {}

  /**
   * For a checkpoint of `branch` about to be dumped as version `versionId`:
   * what its dump captures into, or nothing (no kernel tier here, or its
   * holder did not start: the checkpoint goes on without).
   */
  async open(versionId: string, branch: string): Promise<{ session: ShareSession; capturedFile: string } | undefined> {
    if (!(await this.o.kernelTier.current()).sharing) return undefined;
    const capturedFile = path.join(this.o.dir, `version-${versionId}.captured`);
    try {
      const holder = await ShareHolder.start(this.o.kernelTier.tool, path.join(this.o.dir, `version-${versionId}.share`));
      this.held.set(versionId, { branch, holder, capturedFile, kept: false });
      return { session: holder.session, capturedFile };
    } catch (err) {
      this.o.log(`checkpoint ${versionId}: no capture for rollbacks to share (${(err as Error).message})`);
      return undefined;
    }
  }

  /**
   * The version's dump has fixed its instant: its capture is kept if the
   * dump made it, in place of its branch's earlier one (and of the oldest
   * beyond CAPTURES_KEPT); else its holder goes.
   */
  async settle(versionId: string): Promise<void> {
    const entry = this.held.get(versionId);
    if (!entry) return;
    if (!existsSync(entry.capturedFile)) return this.drop(versionId);
    entry.kept = true;
    for (const [id, other] of this.held) if (id !== versionId && other.kept && other.branch === entry.branch) await this.drop(id);
    const kept = this.keptVersions();
    for (const id of kept.slice(0, Math.max(0, kept.length - CAPTURES_KEPT))) await this.drop(id);
  }

  /** The holder a rollback to the version attaches its memory from, if its capture is kept. */
  session(versionId: string): ShareSession | undefined {
    const entry = this.held.get(versionId);
    return entry?.kept ? entry.holder.session : undefined;
  }

  /** Versions whose capture is kept, oldest first. */
  keptVersions(): string[] {
    return [...this.held].filter(([, e]) => e.kept).map(([id]) => id);
  }

  /** Drops the version's capture (the version is gone, or a newer one replaces it): its holder ends. */
  async drop(versionId: string): Promise<void> {
    const entry = this.held.get(versionId);
    if (!entry) return;
    this.held.delete(versionId);
    await entry.holder.stop().catch((err: Error) => this.o.log(`checkpoint ${versionId}: its capture's holder: ${err.message}`));
    await rm(entry.capturedFile, { force: true });
  }

  /** The helper stops: every capture goes. */
  async dropAll(): Promise<void> {
    for (const id of [...this.held.keys()]) await this.drop(id);
  }
}
