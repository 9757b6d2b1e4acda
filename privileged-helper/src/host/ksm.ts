// Drives ksmd's pace. Workspaces are started (and branches restored) through
// grove-enter --ksm, so all their anonymous memory is mergeable; ksmd then folds the
// pages a fork duplicated back into shared copy-on-write pages. Scanning costs
// CPU, so it runs fast only for a while after something new appeared (a fork,
// a rollback, a new workspace) and slowly otherwise. The fast pace is one that merges a
// fork's copies within seconds (kernel.md).
//
// Fast scanning takes most of a core, and this machine has two: while CRIU
// dumps or restores a branch (a fork, a checkpoint, a rollback) ksmd is held
// at its idle pace, and the fast spell resumes after, or (a fork into more
// children than it restores at once) once the first are on screen
// (docs/fork-profile.md).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

const FAST = { pages_to_scan: 5000, sleep_millisecs: 10 };
const IDLE = { pages_to_scan: 200, sleep_millisecs: 200 };
const FAST_FOR_MS = 30_000;

export class KsmPacer {
  private timer: NodeJS.Timeout | null = null;
  private fastUntil = 0;
  private holds = 0;
  private applied: typeof FAST | typeof IDLE | null = null;

  constructor(private readonly sysfs = '/sys/kernel/mm/ksm') {}

  async start(): Promise<void> {
    await this.write({ ...IDLE, run: 1 });
    this.applied = IDLE;
  }

  /** Scan fast for a while (new copies of pages just appeared), then go back to idle. */
  boost(): void {
    this.fastUntil = Date.now() + FAST_FOR_MS;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.apply();
    }, FAST_FOR_MS);
    this.timer.unref();
    void this.apply();
  }

  /**
   * Runs `work` (CRIU's) with ksmd at its idle pace; the fast spell, if any,
   * goes on after, or once `work` calls release() (a fork whose first
   * children are on screen while the rest still restore).
   */
  async hold<T>(work: (release: () => Promise<void>) => Promise<T>): Promise<T> {
    this.holds++;
    let held = true;
    const release = async () => {
      if (!held) return;
      held = false;
      this.holds--;
      await this.apply();
    };
    await this.apply();
    try {
      return await work(release);
    } finally {
      await release();
    }
  }

  /** The pace now wanted: fast during a spell with nothing held. */
  pace(): 'fast' | 'idle' {
    return this.holds === 0 && Date.now() < this.fastUntil ? 'fast' : 'idle';
  }

  private async apply(): Promise<void> {
    const want = this.pace() === 'fast' ? FAST : IDLE;
    if (want === this.applied) return;
    this.applied = want;
    // The pace only tunes how fast shared pages are found: a failed write is tried again next time.
    await this.write(want).catch(() => {
      this.applied = null;
    });
  }

  private async write(values: Record<string, number>): Promise<void> {
    for (const [key, value] of Object.entries(values)) await writeFile(path.join(this.sysfs, key), String(value));
  }
}
