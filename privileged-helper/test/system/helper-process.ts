// Starts and stops a real helper for the system tests: its own instance tag,
// state, run directory, pool and subnet, so it never touches the app's helper.
import { readdirSync, readFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import { compiledProgram, groveRoot } from '../../src/protocol/grove-files.js';
import { helperSockets } from '../../src/protocol/sockets.js';

export const REPO = groveRoot();
/** The helper as build/host/start-helper.sh runs it (compiled there first when its sources changed). */
const DAEMON = compiledProgram('privileged-helper/src/daemon.ts');
const START_HELPER = path.join(REPO, 'build/host/start-helper.sh');

export interface TestInstance {
  instance: string;
  env: Record<string, string>;
  socketPath: string;
  /** The agent socket (the helper's default next to its run directory). */
  agentSocketPath: string;
  stateDir: string;
  runDir: string;
  logFile: string;
  pidFile: string;
  /** Pid namespaces of the workspaces the tests made, one per line. */
  pidNsFile: string;
}

export function testInstance(instance: string): TestInstance {
  const stateDir = `/var/tmp/grove-test-${instance}`;
  const runDir = `/run/grove-test-${instance}`;
  const env = {
    GROVE_INSTANCE: instance,
    GROVE_STATE_DIR: stateDir,
    GROVE_RUN_DIR: runDir,
    // GROVE_TEST_SUBNET lets two runs share the machine (each needs its own range).
    GROVE_SUBNET: process.env.GROVE_TEST_SUBNET ?? '10.215.0.0/16',
    GROVE_POOL_SIZE_GIB: '16',
    GROVE_FAULT_INJECTION: '1',
    // Egress (egress.test.ts): held requests time out quickly, and the test's
    // "outside world" (its own netns) has a name the gate resolves without DNS.
    GROVE_GATE_TIMEOUT_MS: '15000',
    GROVE_GATE_HOSTS: 'outside.test=10.218.0.2,other.test=10.218.0.2',
    // A desktop's VNC session closes after 15 s without calls (60 s by default): desktop.test.ts waits for that.
    GROVE_DESKTOP_IDLE_MS: '15000',
    // A stream's streamer ends 10 s after its last viewer left (3 min by default): stream.test.ts waits for that.
    GROVE_STREAM_IDLE_MS: '10000',
  };
  const sockets = helperSockets({}, runDir);
  return {
    instance,
    env,
    socketPath: sockets.person,
    agentSocketPath: sockets.agent,
    stateDir,
    runDir,
    logFile: `/var/tmp/grove-test-${instance}.log`,
    pidFile: `/var/tmp/grove-test-${instance}.pid`,
    pidNsFile: `/var/tmp/grove-test-${instance}.pidns`,
  };
}

/** Starts the helper as ./start.sh does (build/host/start-helper.sh: detached, leading its own session) and waits for its sockets. */
export async function startHelper(t: TestInstance): Promise<number> {
  await execa(START_HELPER, [t.logFile, t.pidFile], { env: { ...process.env, ...t.env } });
  const pid = Number(readFileSync(t.pidFile, 'utf8'));
  const deadline = Date.now() + 120_000;
  while (Date.now() < deadline) {
    if (!helperAlive(pid)) throw new Error(`helper exited during start:\n${tail(t.logFile)}`);
    if ((await accepts(t.socketPath)) && (await accepts(t.agentSocketPath))) return pid;
    await sleep(100);
  }
  throw new Error(`helper did not listen within 120 s:\n${tail(t.logFile)}`);
}

/** SIGTERM (workspaces keep running), then waits for the process to end; SIGKILL ends it as a crash would. */
export async function stopHelper(t: TestInstance, signal: 'SIGTERM' | 'SIGKILL' = 'SIGTERM'): Promise<void> {
  let pid: number;
  try {
    pid = Number(readFileSync(t.pidFile, 'utf8'));
  } catch {
    return;
  }
  if (!helperAlive(pid)) return;
  process.kill(pid, signal);
  for (let i = 0; i < 200 && helperAlive(pid); i++) await sleep(50);
  if (helperAlive(pid)) process.kill(pid, 'SIGKILL');
}

/** Removes every host object of the instance (workspaces, netns, pool, state). */
export async function purge(t: TestInstance): Promise<void> {
  await stopHelper(t);
  const res = await execa(process.execPath, ['--enable-source-maps', DAEMON, '--purge'], {
    env: { ...process.env, ...t.env },
    reject: false,
    all: true,
  });
  if (res.exitCode !== 0) throw new Error(`purge failed: ${res.all}`);
}

/** The tail of the helper's log if it is no longer running (it died during the tests: its log says why), else null. */
export function tailIfDead(t: TestInstance): string | null {
  let pid: number;
  try {
    pid = Number(readFileSync(t.pidFile, 'utf8'));
  } catch {
    return null;
  }
  return helperAlive(pid) ? null : tail(t.logFile, 60);
}

/**
 * Whether any thread of the helper still runs. An exited helper may stay a
 * zombie (its starter script is gone, and not every init reaps orphans), and
 * a SIGKILLed one shows its leader as a zombie while its other threads still
 * end, holding its sockets open: it has ended only when no thread is left.
 */
export function helperAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const zombie = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
    return !zombie || readdirSync(`/proc/${pid}/task`).length > 1;
  } catch {
    return false;
  }
}

function accepts(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(socketPath, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}

export function tail(file: string, lines = 30): string {
  try {
    return readFileSync(file, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
