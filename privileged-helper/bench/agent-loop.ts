// The agent-loop section of the benchmark (issue 49): a scripted agent, no
// model, runs desktop tasks (agent-tasks.ts) whose 3 decision points each
// have 3 alternatives of which exactly one succeeds, under each strategy in
// turn on one machine:
//
//   grove-fork-and-pick     branch.fork into 3, one alternative in each at once, keep the winner
//   grove-try-and-rollback  branch.checkpoint, try, branch.rollback after each failure
//   criu-fork-and-pick      the same with plain CRIU (baseline.ts): one dump, 3 restores
//   criu-try-and-rollback   a plain dump, try, and after a failure a restore of it
//   cold-restart            after a failure, a new workspace from the image and a replay of
//                           the steps so far (setup and the winners), as a VM-per-attempt harness does
//
// Each task starts in a fresh workspace of the desktop image, made before the
// clock starts; a cold restart's new workspace is ready once its screen
// answers, Chromium runs and the screen has been still for READY_QUIET_MS. At each decision point the agent looks at the screen (a
// screenshot, or a first frame from a plain-CRIU copy's VNC server), thinks
// (a fixed pause), acts and checks. Per strategy: total task time; time
// spent waiting on the workspace (forks, checkpoints, rollbacks, restores,
// new workspaces and their replays); and the peak PSS of every workspace the
// strategy has alive, sampled every PEAK_SAMPLE_MS.
import { execa } from 'execa';
import type { HelperClient } from '../../main/src/helper-client/client.js';
import { pidNamespace } from '../src/host/proc.js';
import { firstFrame } from '../src/desktop/rfb-probe.js';
import type { Workspace } from '../src/protocol/entities.js';
import { VNC_PORT } from '../src/workspaces/runtime.js';
import { agentTasks, type AgentTask, type DecisionPoint } from './agent-tasks.js';
import { BaselineFork, type BaselineSetting, type BaselineSource } from './baseline.js';
import { pssOfPidNamespaces } from './memory.js';
import type { AgentLoop, AgentLoopStrategy } from './result-schema.js';
import { percentiles, round } from './stats.js';

export const STRATEGIES = ['grove-fork-and-pick', 'grove-try-and-rollback', 'criu-fork-and-pick', 'criu-try-and-rollback', 'cold-restart'] as const;
type Strategy = (typeof STRATEGIES)[number];

/** The agent's pause before each choice: what a model's turn costs, the same for every strategy. */
const THINK_MS = 300;
const PEAK_SAMPLE_MS = 500;
const ACTION_TIMEOUT_S = 30;
/** A new workspace is ready once its screen has not changed for this long (desktop.wait). */
const READY_QUIET_MS = 500;
/** A task's first workspace is given this long after Chromium started, before the clock starts: its start page is drawn. */
const START_SETTLE_MS = 5000;
/** Each strategy's part of its workspaces' names. */
const SHORT: Record<Strategy, string> = {
  'grove-fork-and-pick': 'gf',
  'grove-try-and-rollback': 'gt',
  'criu-fork-and-pick': 'cf',
  'criu-try-and-rollback': 'ct',
  'cold-restart': 'cr',
};

/** A workspace the agent drives: a Grove branch, or a plain-CRIU copy. */
interface Desk {
  /** Runs a shell script in it; true when it exits 0. */
  run(script: string): Promise<boolean>;
  /** Looks at its screen. */
  look(): Promise<void>;
}

export interface AgentLoopDeps {
  client: HelperClient;
  /** A plain-CRIU setting whose /30s are free from `netIndex` down (bench.ts). */
  baselineSetting: () => BaselineSetting;
  /** Where a Grove branch is on the host, for plain CRIU to dump it. */
  asBaselineSource: (ws: Workspace) => Promise<BaselineSource>;
  /** Every plain-CRIU fork alive, for the bench's removal on failure or Ctrl-C. */
  baselines: Set<BaselineFork>;
  proceed: () => void;
  log: (msg: string) => void;
}

export async function measureAgentLoop(d: AgentLoopDeps, taskCount: number): Promise<AgentLoop> {
  const tasks = agentTasks(taskCount);
  const strategies: AgentLoopStrategy[] = [];
  for (const strategy of STRATEGIES) strategies.push(await new StrategyRun(d, strategy).runAll(tasks));
  return { tasks: tasks.map((t) => t.name), decisionPoints: 3, alternatives: 3, thinkMs: THINK_MS, strategies };
}

class StrategyRun {
  private waitMs = 0;
  /** Each kind of wait's durations (waiting). */
  private readonly steps = new Map<string, number[]>();
  private peakPssMiB = 0;
  private readonly errors: string[] = [];
  /** Host pids of the inits of every workspace this strategy has alive. */
  private readonly alive = new Set<number>();
  /** Grove branches this strategy made and has not deleted. */
  private readonly branches = new Set<string>();
  private taskSerial = 0;
  private forkSerial = 0;
  /** Plain-CRIU forks this strategy made and has not removed. */
  private readonly forks = new Set<Held>();

  constructor(
    private readonly d: AgentLoopDeps,
    private readonly strategy: Strategy,
  ) {}

  async runAll(tasks: AgentTask[]): Promise<AgentLoopStrategy> {
    const taskMs: number[] = [];
    const sampler = this.sampleMemory();
    try {
      for (const task of tasks) {
        this.d.proceed();
        try {
          const ms = await this.runTask(task);
          taskMs.push(ms);
          this.d.log(`agent loop, ${this.strategy}: ${task.name} in ${Math.round(ms)} ms (waited ${Math.round(this.waitMs)} ms so far)`);
        } catch (err) {
          this.errors.push(`${task.name}: ${(err as Error).message}`);
          this.d.log(`agent loop, ${this.strategy}: ${task.name} FAILED: ${(err as Error).message}`);
        } finally {
          await this.removeAll();
        }
      }
    } finally {
      sampler.stop();
    }
    await sampler.done;
    return {
      strategy: this.strategy,
      tasksDone: taskMs.length,
      totalMs: round(taskMs.reduce((a, b) => a + b, 0)),
      waitMs: round(this.waitMs),
      peakPssMiB: round(this.peakPssMiB),
      taskMs: taskMs.map((x) => round(x)),
      stepMs: Object.fromEntries([...this.steps].map(([step, times]) => [step, percentiles(times)])),
      errors: this.errors,
    };
  }

  private async runTask(task: AgentTask): Promise<number> {
    const serial = this.taskSerial++;
    const start = await this.newWorkspace(`al-${SHORT[this.strategy]}-${serial}`);
    await new Promise((r) => setTimeout(r, START_SETTLE_MS));
    const t0 = performance.now();
    await this.must(grove(this.d.client, start), task.setup, 'setup');
    switch (this.strategy) {
      case 'grove-fork-and-pick':
        await this.groveForkAndPick(task, start);
        break;
      case 'grove-try-and-rollback':
        await this.groveTryAndRollback(task, start);
        break;
      case 'criu-fork-and-pick':
        await this.criuForkAndPick(task, start);
        break;
      case 'criu-try-and-rollback':
        await this.criuTryAndRollback(task, start);
        break;
      case 'cold-restart':
        await this.coldRestart(task, start, serial);
        break;
    }
    return performance.now() - t0;
  }

  private async groveForkAndPick(task: AgentTask, start: Workspace): Promise<void> {
    let current = start;
    for (const p of task.points) {
      const report = await this.waiting('fork into 3', () => this.d.client.request('branch.fork', { workspace: current.id, copies: 3 }));
      for (const child of report.children) this.track(child);
      const won = await this.pickWinner(
        p,
        report.children.map((c) => grove(this.d.client, c)),
      );
      const losers = report.children.filter((_, i) => i !== won);
      // The losers, and the parent (but the task's first workspace, the tree's main line), go while the agent works on.
      for (const ws of [...losers, ...(current === start ? [] : [current])]) void this.deleteBranch(ws);
      current = report.children[won]!;
    }
  }

  private async groveTryAndRollback(task: AgentTask, start: Workspace): Promise<void> {
    let current = start;
    const desk = () => grove(this.d.client, current);
    for (const p of task.points) {
      const version = await this.waiting('checkpoint', () => this.d.client.request('branch.checkpoint', { workspace: current.id, label: p.goal }));
      for (const [i, alternative] of p.alternatives.entries()) {
        if (await this.attempt(desk(), p, alternative)) break;
        if (i === 2) throw new Error(`no alternative reached '${p.goal}'`);
        const before = current;
        // Until its first frame, as a plain-CRIU restore is waited for.
        current = await this.waiting('rollback → first frame', async () => {
          const back = await this.d.client.request('branch.rollback', { workspace: current.id, version: version.id });
          await firstFrame({ path: back.vncSocket! }, { timeoutMs: 30_000 });
          return back;
        });
        if (before.pid !== null) this.alive.delete(before.pid);
        this.track(current);
      }
      void this.d.client.request('version.delete', { version: version.id }).catch(() => undefined); // saved meanwhile, or waited for
    }
  }

  /** One dump of the current workspace, 3 restores of it, one alternative in each at once; the winner's fork holds the next current. */
  private async criuForkAndPick(task: AgentTask, start: Workspace): Promise<void> {
    let current = await this.d.asBaselineSource(start);
    let holder: Held | null = null;
    for (const p of task.points) {
      const fork = this.baselineFork(current, holder, 3);
      await this.waiting('fork into 3', async () => {
        await fork.b.checkpoint();
        await Promise.all([0, 1, 2].map((i) => fork.b.restoreOne(i)));
      });
      for (const pid of fork.b.restoredPids) this.alive.add(pid);
      const won = await this.pickWinner(
        p,
        [0, 1, 2].map((i) => plainCopy(fork.b, i)),
      );
      await this.retire(holder);
      holder = fork;
      current = fork.b.copyAsSource(won);
    }
  }

  /** A plain dump of the current workspace; after a failure, a restore of it (in a fresh netns: plain CRIU has no branch identity to keep). */
  private async criuTryAndRollback(task: AgentTask, start: Workspace): Promise<void> {
    const first = await this.d.asBaselineSource(start);
    let current: { source: BaselineSource; desk: Desk } = { source: first, desk: grove(this.d.client, start) };
    let holder: Held | null = null;
    for (const p of task.points) {
      const fork = this.baselineFork(current.source, holder, 2);
      await this.waiting('checkpoint', () => fork.b.checkpoint());
      let restored = 0;
      for (const [i, alternative] of p.alternatives.entries()) {
        if (await this.attempt(current.desk, p, alternative)) break;
        if (i === 2) throw new Error(`no alternative reached '${p.goal}'`);
        // Plain CRIU's rollback ends the failed tree first; the task's Grove workspace is stopped instead (a copy goes with its fork: retire).
        if (current.source === first) await this.stopBranch(start);
        await this.waiting('rollback → first frame', () => fork.b.restoreOne(restored));
        for (const pid of fork.b.restoredPids) this.alive.add(pid);
        current = { source: fork.b.copyAsSource(restored), desk: plainCopy(fork.b, restored) };
        restored++;
      }
      if (restored === 0) {
        await this.retire(fork);
      } else {
        await this.retire(holder);
        holder = fork;
      }
    }
  }

  /** After a failure, a new workspace from the image with the steps so far replayed; its making and the replay are the wait. */
  private async coldRestart(task: AgentTask, start: Workspace, serial: number): Promise<void> {
    let current = start;
    const done: string[] = [task.setup];
    let restarts = 0;
    for (const p of task.points) {
      for (const [i, alternative] of p.alternatives.entries()) {
        if (await this.attempt(grove(this.d.client, current), p, alternative)) {
          done.push(alternative);
          break;
        }
        if (i === 2) throw new Error(`no alternative reached '${p.goal}'`);
        const failed = current;
        current = await this.waiting('new workspace + replay', async () => {
          const fresh = await this.newWorkspace(`al-c${serial}-${++restarts}`);
          for (const step of done) await this.must(grove(this.d.client, fresh), step, 'replay');
          return fresh;
        });
        void this.deleteBranch(failed);
      }
    }
  }

  /** The one alternative that succeeded; its index (found by running all three, once each, in the three workspaces at once). */
  private async pickWinner(p: DecisionPoint, desks: Desk[]): Promise<number> {
    const results = await Promise.all(desks.map((desk, i) => this.attempt(desk, p, p.alternatives[i]!)));
    const winners = results.flatMap((ok, i) => (ok ? [i] : []));
    if (winners.length !== 1) throw new Error(`'${p.goal}': ${winners.length} alternatives succeeded, not exactly one`);
    return winners[0]!;
  }

  /** The agent looks, thinks, acts and checks. */
  private async attempt(desk: Desk, p: DecisionPoint, alternative: string): Promise<boolean> {
    await desk.look();
    await new Promise((r) => setTimeout(r, THINK_MS));
    await desk.run(alternative);
    return desk.run(p.check);
  }

  private async must(desk: Desk, script: string, what: string): Promise<void> {
    if (!(await desk.run(script))) throw new Error(`the task's ${what} failed`);
  }

  /** Waits on the workspace for `step` (a name the result keeps its times under). */
  private async waiting<T>(step: string, work: () => Promise<T>): Promise<T> {
    const t0 = performance.now();
    const out = await work();
    const ms = performance.now() - t0;
    this.waitMs += ms;
    this.steps.set(step, [...(this.steps.get(step) ?? []), ms]);
    return out;
  }

  /**
   * A new workspace of the desktop image, ready for the agent: its screen
   * answers, Chromium runs and the screen is still (a task's first one is also given
   * START_SETTLE_MS, untimed, so every strategy starts from the whole desktop).
   */
  private async newWorkspace(name: string): Promise<Workspace> {
    const ws = await this.d.client.request('workspace.create', { name });
    this.track(ws);
    await firstFrame({ path: ws.vncSocket! }, { timeoutMs: 120_000 });
    const deadline = Date.now() + 120_000;
    while (!(await grove(this.d.client, ws).run('pgrep -x chromium >/dev/null || pgrep -f /usr/lib/chromium/chromium >/dev/null'))) {
      if (Date.now() > deadline) throw new Error(`Chromium did not start in ${name} within 120 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
    // As an agent waits for an app it started: until the screen has been still a moment.
    await this.d.client.request('desktop.wait', { workspace: ws.id, until: 'still', quietMs: READY_QUIET_MS, timeoutMs: 60_000 });
    return ws;
  }

  private track(ws: Workspace): void {
    this.branches.add(ws.id);
    if (ws.pid !== null) this.alive.add(ws.pid);
  }

  private async stopBranch(ws: Workspace): Promise<void> {
    if (ws.pid !== null) this.alive.delete(ws.pid);
    await this.d.client.request('workspace.stop', { workspace: ws.id });
  }

  private async deleteBranch(ws: Workspace): Promise<void> {
    if (!this.branches.delete(ws.id)) return;
    if (ws.pid !== null) this.alive.delete(ws.pid);
    await this.d.client.request('workspace.delete', { workspace: ws.id, versions: 'delete' }).catch((err: Error) => {
      this.errors.push(`removing ${ws.name}: ${err.message}`);
    });
  }

  /** A plain-CRIU fork of `source` whose /30s are not those of the fork holding it (`holder`). */
  private baselineFork(source: BaselineSource, holder: Held | null, copies: number): Held {
    const top = this.d.baselineSetting().netIndex;
    const netIndex = holder?.netIndex === top ? top - 4 : top;
    const b = new BaselineFork({ ...this.d.baselineSetting(), netIndex }, source, `a${(this.forkSerial++).toString(36)}`, copies);
    this.d.baselines.add(b);
    const held = { b, netIndex };
    this.forks.add(held);
    return held;
  }

  /** A plain-CRIU fork no workspace of the agent's is in any more: its copies and dump go. */
  private async retire(held: Held | null): Promise<void> {
    if (!held) return;
    for (const pid of held.b.restoredPids) this.alive.delete(pid);
    this.forks.delete(held);
    this.d.baselines.delete(held.b);
    const left = await held.b.cleanup();
    if (left.length > 0) throw new Error(`plain-CRIU fork ${held.b.tag} left objects behind: ${left.join('; ')}`);
  }

  /** Everything of the task's: its branches (the tree with them) and its plain-CRIU forks. */
  private async removeAll(): Promise<void> {
    for (const held of [...this.forks]) await this.retire(held);
    const list = await this.d.client.request('workspace.list', {});
    for (const ws of list.filter((w) => this.branches.has(w.id)).reverse()) await this.deleteBranch(ws);
    this.alive.clear();
  }

  /** Samples the PSS of every workspace alive until stopped, keeping the peak. */
  private sampleMemory(): { stop: () => void; done: Promise<void> } {
    let running = true;
    const done = (async () => {
      while (running) {
        const namespaces = (await Promise.all([...this.alive].map(pidNamespace))).filter((n) => n !== null);
        if (namespaces.length > 0) this.peakPssMiB = Math.max(this.peakPssMiB, (await pssOfPidNamespaces(new Set(namespaces))).pssMiB);
        await new Promise((r) => setTimeout(r, PEAK_SAMPLE_MS));
      }
    })();
    return { stop: () => (running = false), done };
  }
}

interface Held {
  b: BaselineFork;
  netIndex: number;
}

function grove(c: HelperClient, ws: Workspace): Desk {
  return {
    run: async (script) => (await c.request('exec.run', { workspace: ws.id, argv: ['sh', '-c', script], timeoutMs: ACTION_TIMEOUT_S * 1000 })).exitCode === 0,
    look: async () => void (await c.request('desktop.screenshot', { workspace: ws.id })),
  };
}

/** A restored plain-CRIU copy: commands through nsenter into all its namespaces and its root, the screen from its VNC server. */
function plainCopy(b: BaselineFork, index: number): Desk {
  const pid = b.copyAsSource(index).pid;
  return {
    run: async (script) =>
      (await execa('nsenter', ['-t', String(pid), '-a', '-r', '-w', '--', 'sh', '-c', script], { reject: false, timeout: ACTION_TIMEOUT_S * 1000 }))
        .exitCode === 0,
    look: () => firstFrame({ host: b.copyAddress(index), port: VNC_PORT }, { timeoutMs: 10_000 }).then(() => undefined),
  };
}
