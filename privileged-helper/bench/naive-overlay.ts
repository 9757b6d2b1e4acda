// The layout Grove's is compared with for read latency: "naively stacked
// overlays", where every fork generation adds one overlay layer, so a branch
// at depth d reads through d+1 lowers (plus its private upper on top, as a
// running branch would have). Built on the host under the bench's own state
// directory: the bottom layer holds the inherited files (small ones and one
// big one), each generation's layer one small file of its own. The same read
// loop as inside Grove's branches (read-latency.ts) reads the bottom layer's
// files through the top mount.
import { randomBytes } from 'node:crypto';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { run } from '../src/host/run.js';
import { unmountWithRetry } from './host-retry.js';
import { measureReadLatency, type ScriptRunner } from './read-latency.js';
import type { ReadLatency } from './result-schema.js';

const SMALL_FILES = 64;
const BIG_FILE_MIB = 16;

/** python3 on the host, where the overlay is mounted. */
const onHost: ScriptRunner = async (argv) => {
  const res = await execa('python3', argv, { reject: false, timeout: 300_000 });
  return { exitCode: res.exitCode ?? 1, stdout: String(res.stdout), stderr: String(res.stderr) };
};

export class NaiveOverlay {
  private layers = 0;
  private readonly mounted = new Set<string>();
  /** The measurement in flight (settled), and whether cleanup() has begun. */
  private running: Promise<unknown> = Promise.resolve();
  private closed = false;

  /** dir: a directory of its own that cleanup() removes whole. */
  constructor(private readonly dir: string) {}

  /** Mounts depth+1 stacked layers (and a private upper), reads through them, unmounts. */
  measure(depth: number, rounds: number): Promise<ReadLatency> {
    if (this.closed) return Promise.reject(new Error('the naive overlays were removed (the run was stopped)'));
    const measuring = this.mountAndRead(depth, rounds);
    this.running = measuring.catch(() => undefined);
    return measuring;
  }

  private async mountAndRead(depth: number, rounds: number): Promise<ReadLatency> {
    await this.ensureLayers(depth + 1);
    const top = path.join(this.dir, `depth-${depth}`);
    const root = path.join(top, 'root');
    for (const d of ['upper', 'work', 'root']) await mkdir(path.join(top, d), { recursive: true });
    // lowerdir lists the top layer first: generation `depth` over … over the bottom layer.
    const lowers = Array.from({ length: depth + 1 }, (_, i) => this.layer(depth - i)).join(':');
    const options = `lowerdir=${lowers},upperdir=${path.join(top, 'upper')},workdir=${path.join(top, 'work')}`;
    this.mounted.add(root);
    await run('mount', ['-t', 'overlay', 'overlay', '-o', options, '--', root]);
    try {
      const files = { small: [path.join(root, 'small')], big: [path.join(root, 'big')] };
      return await measureReadLatency(onHost, { layout: 'naive-overlay', depth, files }, rounds);
    } finally {
      await unmountWithRetry(root);
      this.mounted.delete(root);
    }
  }

  /**
   * Waits for a measurement in flight (it unmounts what it mounted), unmounts
   * what is still mounted and removes the directory; returns what could not be removed.
   */
  async cleanup(): Promise<string[]> {
    this.closed = true;
    await this.running;
    const failed: string[] = [];
    for (const root of this.mounted) {
      try {
        await unmountWithRetry(root);
        this.mounted.delete(root);
      } catch (err) {
        failed.push(`naive overlay mount ${root}: ${(err as Error).message}`);
      }
    }
    if (this.mounted.size === 0) await rm(this.dir, { recursive: true, force: true });
    return failed;
  }

  private layer(generation: number): string {
    return path.join(this.dir, `layer-${generation}`);
  }

  /** Layer 0 holds the inherited files; layer g > 0 only a file of generation g. */
  private async ensureLayers(count: number): Promise<void> {
    for (; this.layers < count; this.layers++) {
      const g = this.layers;
      const dir = this.layer(g);
      await mkdir(dir, { recursive: true });
      if (g > 0) {
        await writeFile(path.join(dir, `generation-${g}`), `written by fork generation ${g}\n`);
        continue;
      }
      await mkdir(path.join(dir, 'small'));
      await mkdir(path.join(dir, 'big'));
      for (let i = 0; i < SMALL_FILES; i++) {
        await writeFile(path.join(dir, 'small', `file-${String(i).padStart(2, '0')}`), randomBytes(512 + ((i * 997) % 7680)));
      }
      await writeFile(path.join(dir, 'big', 'blob'), randomBytes(BIG_FILE_MIB << 20));
    }
  }
}
