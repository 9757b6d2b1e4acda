// The kernel tier's snapshot holder for one fork (native/grove-share.c). It is
// started before the dump; CRIU's action program asks it to capture the source
// at post-dump and to attach each child at pre-resume
// (native/grove-action.c); stopping it, when the fork is over, drops the
// snapshots. Its socket is a Unix socket only root can reach.
import { execa, type ResultPromise } from 'execa';
import { GroveError } from '../protocol/wire.js';

/** What CRIU's action program needs to reach a holder. */
export interface ShareSession {
  socket: string;
  tool: string;
}

export class ShareHolder {
  private constructor(
    private readonly child: ResultPromise<{ stdin: 'pipe'; stdout: 'pipe'; stderr: 'pipe'; reject: false }>,
    readonly session: ShareSession,
  ) {}

  static async start(tool: string, socket: string): Promise<ShareHolder> {
    const child = execa(tool, ['hold', socket], { stdin: 'pipe', stdout: 'pipe', stderr: 'pipe', reject: false });
    const ready = await new Promise<boolean>((resolve) => {
      child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().startsWith('ready')));
      void child.then(() => resolve(false));
    });
    if (!ready) {
      child.kill('SIGKILL');
      const result = await child;
      // Its own words, or why it could not run at all (a missing tool: spawn's error).
      const why = String(result.stderr).trim() || (result.failed ? result.shortMessage : '') || 'no output';
      throw new GroveError('E_HOST', `the kernel tier's snapshot holder did not start: ${why}`);
    }
    return new ShareHolder(child, { socket, tool });
  }

  /** Ends the holder; what only its snapshots still held is freed. */
  async stop(): Promise<void> {
    this.child.stdin.end();
    await this.child;
  }
}
