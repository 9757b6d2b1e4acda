// `grove`: the command line for agents and scripts. A client of the helper's
// API like the app; every command that prints has --json for scripts.
import { Command, Option } from 'commander';
import { GroveError, HelperClient } from '../helper-client/client.js';
import { printDoctor, printImage, printWorkspace, printWorkspaces } from './format.js';
import { runTerminal } from './terminal.js';

interface Global {
  json?: boolean;
  socket?: string;
}

const program = new Command('grove')
  .description('Supervise AI agents in live, forkable desktop workspaces')
  .option('--socket <path>', "the helper's socket (default $GROVE_SOCKET or /run/grove/helper.sock)")
  .option('--json', 'print machine-readable JSON')
  .showHelpAfterError();

const globals = (): Global => program.opts<Global>();

async function withClient<T>(fn: (client: HelperClient) => Promise<T>): Promise<T> {
  const client = await HelperClient.connect({ socketPath: globals().socket, name: 'grove-cli', kind: 'cli' });
  try {
    return await fn(client);
  } finally {
    client.close();
  }
}

function output(value: unknown, human: () => void): void {
  if (globals().json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else human();
}

program
  .command('doctor')
  .description('what this host supports and what is missing')
  .action(() =>
    withClient(async (c) => {
      const report = await c.request('host.doctor', {});
      output(report, () => printDoctor(report));
      if (!report.ok) process.exitCode = 1;
    }),
  );

const image = program.command('image').description('workspace images');
image
  .command('build')
  .argument('[name]', 'image to build', 'desktop')
  .option('--rebuild', 'build again even if an up-to-date image exists')
  .description('build an image (progress is shown as it goes)')
  .action((name: string, opts: { rebuild?: boolean }) =>
    withClient(async (c) => {
      await c.subscribe(['progress']);
      c.on('progress', (p) => {
        if (p.image === name) process.stderr.write(`[${p.stage}] ${p.message}\n`);
      });
      const img = await c.request('image.build', { name: name as 'desktop', rebuild: opts.rebuild ?? false });
      output(img, () => printImage(img));
    }),
  );
image
  .command('ls')
  .description('list images')
  .action(() =>
    withClient(async (c) => {
      const imgs = await c.request('image.list', {});
      output(imgs, () => imgs.forEach(printImage));
    }),
  );

const ws = program.command('ws').description('workspaces');
ws.command('create')
  .argument('<name>', 'a name: lower-case letters, digits, dashes')
  .option('--image <image>', 'image to start from', 'desktop')
  .addOption(new Option('-p, --port <port...>', 'extra container ports to map').argParser(collectPorts))
  .description('create and start a workspace; prints its id and host ports')
  .action((name: string, opts: { image: string; port?: number[] }) =>
    withClient(async (c) => {
      const w = await c.request('workspace.create', { name, image: opts.image as 'desktop', ports: opts.port });
      output(w, () => printWorkspace(w));
    }),
  );
for (const [verb, method, help] of [
  ['start', 'workspace.start', 'start a stopped workspace'],
  ['stop', 'workspace.stop', 'stop a workspace (its files are kept)'],
] as const) {
  ws.command(verb)
    .argument('<workspace>', 'id or name')
    .description(help)
    .action((ref: string) =>
      withClient(async (c) => {
        const w = await c.request(method, { workspace: ref });
        output(w, () => printWorkspace(w));
      }),
    );
}
ws.command('rm')
  .argument('<workspace>', 'id or name')
  .description('delete a workspace and everything it has on the host')
  .action((ref: string) =>
    withClient(async (c) => {
      const res = await c.request('workspace.delete', { workspace: ref });
      output(res, () => console.log(`deleted ${res.deleted}`));
    }),
  );

program
  .command('ls')
  .description('list workspaces')
  .action(() =>
    withClient(async (c) => {
      const list = await c.request('workspace.list', {});
      output(list, () => printWorkspaces(list));
    }),
  );

program
  .command('exec')
  .argument('<workspace>', 'id or name')
  .argument('[command...]', 'command and arguments (after --)')
  .option('-t, --tty', 'allocate a terminal (default when stdin is a terminal)')
  .option('-T, --no-tty', 'never allocate a terminal')
  .option('-i, --stdin', "pass grove's standard input to the command")
  .option('--timeout <seconds>', 'kill the command after this many seconds', Number)
  .description('run a command inside a workspace; its exit code becomes grove\'s')
  .action((ref: string, command: string[], opts: { tty?: boolean; stdin?: boolean; timeout?: number }) =>
    withClient(async (c) => {
      const tty = opts.tty ?? process.stdin.isTTY;
      if (tty) {
        process.exitCode = await runTerminal(c, ref, command.length ? command : undefined);
        return;
      }
      if (command.length === 0) throw new GroveError('E_INVALID_PARAMS', 'give a command after --, or use -t for a shell');
      const stdin = opts.stdin ? await readStdin() : undefined;
      const res = await c.request('exec.run', {
        workspace: ref,
        argv: command,
        stdin,
        timeoutMs: opts.timeout ? Math.round(opts.timeout * 1000) : undefined,
      });
      if (globals().json) output(res, () => undefined);
      else {
        process.stdout.write(res.stdout);
        process.stderr.write(res.stderr);
      }
      process.exitCode = res.exitCode;
    }),
  );

function collectPorts(value: string, previous: number[] | undefined): number[] {
  const port = Number(value);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new GroveError('E_INVALID_PARAMS', `not a port: ${value}`);
  return [...(previous ?? []), port];
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

program.parseAsync().catch((err: unknown) => {
  if (err instanceof GroveError) {
    if (globals().json) process.stderr.write(`${JSON.stringify({ error: { code: err.code, message: err.message } })}\n`);
    else process.stderr.write(`grove: ${err.message} (${err.code})\n`);
    process.exit(2);
  }
  process.stderr.write(`grove: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(2);
});
