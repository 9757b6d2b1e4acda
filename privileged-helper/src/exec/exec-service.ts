// Commands inside a workspace, through `crun exec` so they get the container's
// namespaces, capabilities and root — never the helper's.
//  - run: no terminal; stdout, stderr and the exit code come back whole.
//  - open: a terminal session. crun allocates the PTY inside the container's own
//    devpts (so a later CRIU dump sees no host terminal); crun 1.8.1 does not pass
//    window-size changes through, so a resize sets the size on the inner PTY
//    directly (via /proc/PID/fd/0 of the session's first process), and the kernel
//    delivers SIGWINCH to the foreground job as a real terminal would.
import { execa } from 'execa';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import pty from 'node-pty';
import type { Crun } from '../host/crun.js';
import { run } from '../host/run.js';
import { BASE_ENV } from '../host/oci-spec.js';
import type { ExecResult } from '../protocol/entities.js';
import { GroveError } from '../protocol/wire.js';

const TIMEOUT_EXIT = 124; // coreutils timeout(1)
const MAX_OUTPUT = 16 << 20;

export interface SessionSink {
  output(session: string, data: string): void;
  exit(session: string, exitCode: number, signal: string | null): void;
}

interface Session {
  term: pty.IPty;
  pidFile: string;
  owner: object;
}

export class ExecService {
  private readonly sessions = new Map<string, Session>();
  private nextSession = 1;

  constructor(
    private readonly crun: Crun,
    private readonly runDir: string,
  ) {}

  async run(
    containerId: string,
    req: { argv: string[]; env?: Record<string, string>; cwd?: string; stdin?: string; timeoutMs?: number },
  ): Promise<ExecResult> {
    // The deadline is enforced inside the container, so the command itself dies
    // (killing crun exec from outside would leave it running in the workspace).
    const argv = req.timeoutMs ? ['timeout', '--kill-after=2', `${req.timeoutMs / 1000}`, ...req.argv] : req.argv;
    const [file, args] = this.crun.argv(['exec', ...execOptions(req.env, req.cwd), containerId, ...argv]);
    const started = Date.now();
    const res = await execa(file, args, {
      reject: false,
      input: req.stdin ?? '',
      maxBuffer: MAX_OUTPUT,
      timeout: req.timeoutMs ? req.timeoutMs + 10_000 : undefined,
      stripFinalNewline: false,
    });
    const exitCode = res.exitCode ?? -1;
    return {
      exitCode,
      signal: res.signal ?? null,
      stdout: String(res.stdout ?? ''),
      stderr: String(res.stderr ?? ''),
      timedOut: req.timeoutMs !== undefined && exitCode === TIMEOUT_EXIT && Date.now() - started >= req.timeoutMs,
    };
  }

  async open(
    containerId: string,
    req: { argv?: string[]; env?: Record<string, string>; cols: number; rows: number },
    owner: object,
    sink: SessionSink,
  ): Promise<string> {
    const session = `s${this.nextSession++}`;
    const dir = path.join(this.runDir, 'exec');
    await mkdir(dir, { recursive: true, mode: 0o700 });
    const pidFile = path.join(dir, `${session}.pid`);
    const argv = req.argv ?? ['/bin/bash', '-l'];
    const [file, args] = this.crun.argv(['exec', '--tty', '--pid-file', pidFile, ...execOptions(req.env, '/root'), containerId, ...argv]);
    const term = pty.spawn(file, args, { name: 'xterm-256color', cols: req.cols, rows: req.rows, env: { TERM: 'xterm-256color' } });
    this.sessions.set(session, { term, pidFile, owner });
    term.onData((data) => sink.output(session, data));
    term.onExit(({ exitCode, signal }) => {
      this.sessions.delete(session);
      void rm(pidFile, { force: true });
      sink.exit(session, exitCode, signal ? `signal ${signal}` : null);
    });
    return session;
  }

  write(session: string, owner: object, data: string): void {
    this.owned(session, owner).term.write(data);
  }

  async resize(session: string, owner: object, cols: number, rows: number): Promise<void> {
    const s = this.owned(session, owner);
    s.term.resize(cols, rows);
    const pid = Number((await readFile(s.pidFile, 'utf8').catch(() => '')).trim());
    if (!Number.isInteger(pid) || pid <= 0) throw new GroveError('E_CONFLICT', `session ${session} has not started yet`);
    await run('stty', ['-F', `/proc/${pid}/fd/0`, 'rows', String(rows), 'cols', String(cols)]);
  }

  close(session: string, owner: object): void {
    this.owned(session, owner).term.kill('SIGHUP');
  }

  /** Ends every session a connection opened (it went away). */
  closeAll(owner: object): void {
    for (const s of this.sessions.values()) if (s.owner === owner) s.term.kill('SIGHUP');
  }

  private owned(session: string, owner: object): Session {
    const s = this.sessions.get(session);
    if (!s || s.owner !== owner) throw new GroveError('E_NOT_FOUND', `no terminal session ${session} on this connection`);
    return s;
  }
}

function execOptions(env: Record<string, string> | undefined, cwd: string | undefined): string[] {
  const vars = [...BASE_ENV, 'TERM=xterm-256color', ...Object.entries(env ?? {}).map(([k, v]) => `${k}=${v}`)];
  return [...vars.flatMap((v) => ['--env', v]), ...(cwd ? ['--cwd', cwd] : [])];
}
