// `grove exec -t`: the local terminal in raw mode, relayed to a PTY session in
// the workspace (a new one, or with --attach one already there: its
// scrollback first); window-size changes follow. Resolves with the exit code.
import type { HelperClient } from '../helper-client/client.js';

export async function runTerminal(client: HelperClient, workspace: string, argv: string[] | undefined, attach?: string): Promise<number> {
  const out = process.stdout;
  const { session } = await client.request('exec.open', {
    workspace,
    argv,
    attach,
    cols: out.columns || 80,
    rows: out.rows || 24,
  });
  const stdin = process.stdin;
  return new Promise<number>((resolve, reject) => {
    const restoreStdin = () => {
      if (stdin.isTTY) stdin.setRawMode(false);
      stdin.pause();
    };
    client.on('exec.output', (e) => {
      if (e.session === session) out.write(e.data);
    });
    client.on('exec.exit', (e) => {
      if (e.session !== session) return;
      restoreStdin();
      resolve(e.exitCode);
    });
    if (stdin.isTTY) stdin.setRawMode(true);
    // Typing that cannot reach the session (the helper went away) ends the terminal with why.
    stdin.on(
      'data',
      (chunk: Buffer) =>
        void client.request('exec.write', { session, data: chunk.toString('utf8') }).catch((err: unknown) => {
          restoreStdin();
          reject(err);
        }),
    );
    // A size that did not arrive does no harm: the next one replaces it, and typing says if the helper is gone.
    out.on('resize', () => void client.request('exec.resize', { session, cols: out.columns, rows: out.rows }).catch(() => undefined));
  });
}
