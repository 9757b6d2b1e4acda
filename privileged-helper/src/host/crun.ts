// crun, the OCI runtime. Debian bookworm's crun 1.8.1 refuses this host's hybrid
// cgroup layout even with cgroups disabled, but runs when /sys/fs/cgroup/unified
// is unmounted in a private mount namespace of its own (gui-stack.md); the
// container's own mount namespace is a copy of that private one, so nothing
// it mounts propagates to the host.
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Launcher } from './launcher.js';
import { run, type RunOptions, type RunResult } from './run.js';

const HYBRID_WORKAROUND = 'umount /sys/fs/cgroup/unified 2>/dev/null; exec "$@"';

export class Crun {
  constructor(
    private readonly stateRoot: string,
    private readonly launcher: Launcher,
  ) {}

  /** Command line that runs crun with this state root (also used to spawn PTY sessions). */
  argv(args: readonly string[]): [string, string[]] {
    const crun = ['crun', '--root', this.stateRoot, '--cgroup-manager=disabled', ...args];
    return ['unshare', ['--mount', '--propagation', 'private', '--', 'sh', '-c', HYBRID_WORKAROUND, 'crun', ...crun]];
  }

  private crun(args: readonly string[], opts?: RunOptions): Promise<RunResult> {
    const [file, argv] = this.argv(args);
    return run(file, argv, opts);
  }

  async writeBundle(bundleDir: string, spec: object): Promise<void> {
    await mkdir(bundleDir, { recursive: true, mode: 0o700 });
    await writeFile(path.join(bundleDir, 'config.json'), JSON.stringify(spec, null, 2), { mode: 0o600 });
  }

  /** Starts the container; its init is forked by crun inside `cgroups` (and KSM-mergeable), so it inherits both. */
  async start(containerId: string, bundleDir: string, cgroups: readonly string[], mergeable: boolean): Promise<number> {
    const pidFile = path.join(bundleDir, 'init.pid'); // absolute: crun resolves relative paths against the bundle
    const [file, args] = this.launcher.onHost(
      cgroups,
      mergeable,
      this.argv(['run', '--detach', '--bundle', bundleDir, '--pid-file', pidFile, containerId]).flat(),
    );
    // stdin a pipe, never /dev/null: in a user namespace crun hands its stdio to the container's root (fchown).
    await run(file, args, { timeoutMs: 30_000, input: '' });
    const state = await this.state(containerId);
    if (!state || state.pid <= 0) throw new Error(`container ${containerId} did not start`);
    return state.pid;
  }

  async state(containerId: string): Promise<{ status: string; pid: number } | null> {
    const res = await this.crun(['state', containerId], { allowFailure: true });
    if (res.exitCode !== 0) return null;
    const parsed = JSON.parse(res.stdout) as { status: string; pid: number };
    return { status: parsed.status, pid: parsed.pid };
  }

  async list(): Promise<string[]> {
    const res = await this.crun(['list', '--quiet'], { allowFailure: true });
    return res.stdout
      .split('\n')
      .map((s) => s.trim())
      .filter(Boolean);
  }

  /** Forgets the container (and kills what is left of it). Missing is fine. */
  async delete(containerId: string): Promise<void> {
    await this.crun(['delete', '--force', containerId], { allowFailure: true });
  }
}
