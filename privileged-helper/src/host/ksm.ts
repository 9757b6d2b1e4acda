// Drives ksmd's pace. Workspaces are started (and branches restored) through
// grove-enter --ksm, so all their anonymous memory is mergeable; ksmd then folds the
// pages a fork duplicated back into shared copy-on-write pages. Scanning costs
// CPU, so it runs fast only for a while after something new appeared (a fork,
// a rollback, a new workspace) and slowly otherwise. Numbers from kernel.md:
// 5000 pages every 10 ms merged four 200 MiB copies within ~3 s.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';

const FAST = { pages_to_scan: 5000, sleep_millisecs: 10 };
const IDLE = { pages_to_scan: 200, sleep_millisecs: 200 };
const FAST_FOR_MS = 30_000;

export class KsmPacer {
  private timer: NodeJS.Timeout | null = null;

  constructor(private readonly sysfs = '/sys/kernel/mm/ksm') {}

  async start(): Promise<void> {
    await this.set({ ...IDLE, run: 1 });
  }

  /** Scan fast for a while (new copies of pages just appeared), then go back to idle. */
  boost(): void {
    if (this.timer) clearTimeout(this.timer);
    void this.set(FAST).catch(() => undefined);
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.set(IDLE).catch(() => undefined);
    }, FAST_FOR_MS);
    this.timer.unref();
  }

  private async set(values: Record<string, number>): Promise<void> {
    for (const [key, value] of Object.entries(values)) await writeFile(path.join(this.sysfs, key), String(value));
  }
}
