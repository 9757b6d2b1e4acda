// Notices branches whose processes ended on their own. The helper is not the
// parent of a branch's init (crun and CRIU start it detached), so no exit
// status reaches it: every couple of seconds it looks whether each running
// branch's init is still the same process (pid and start time), and hands one
// that is gone to WorkspaceService.noticeExit, which shows it as exited.
import { isSameProcess } from '../host/proc.js';
import type { Registry } from '../registry/registry.js';
import type { WorkspaceService } from './workspace-service.js';

export const EXIT_WATCH_INTERVAL_MS = 2000;

export class ExitWatch {
  private timer: NodeJS.Timeout | null = null;
  /** Branches being handed over: a branch held by a long operation is not queued again on every tick. */
  private readonly pending = new Set<string>();

  constructor(
    private readonly registry: Registry,
    private readonly workspaces: WorkspaceService,
    private readonly log: (line: string) => void,
  ) {}

  start(intervalMs = EXIT_WATCH_INTERVAL_MS): void {
    this.timer ??= setInterval(() => void this.tick(), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  private async tick(): Promise<void> {
    for (const ws of this.registry.listWorkspaces()) {
      if (ws.state !== 'running' || ws.pid === null || ws.pidStart === null || this.pending.has(ws.id)) continue;
      if (await isSameProcess(ws.pid, ws.pidStart)) continue;
      this.pending.add(ws.id);
      this.workspaces
        .noticeExit(ws.id)
        .then((exited) => exited && this.log(`branch ${ws.name} (${ws.id}) exited: ${this.registry.findWorkspace(ws.id)?.exitReason ?? ''}`))
        .catch((err: Error) => this.log(`branch ${ws.name} (${ws.id}): its processes are gone, and marking it exited failed: ${err.message}`))
        .finally(() => this.pending.delete(ws.id));
    }
  }
}
