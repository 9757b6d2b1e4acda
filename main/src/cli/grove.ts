// `grove`: the command line for agents and scripts. A client of the helper's
// API like the app; every command that prints has --json for scripts.
import { Command, Option } from 'commander';
import { GroveError, HelperClient } from '../helper-client/client.js';
import { printDiff, printDoctor, printForkReport, printImage, printTree, printWorkspace, printWorkspaces } from './format.js';
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
  .command('fork')
  .argument('<workspace>', 'the running branch to fork (id or name)')
  .option('-n, --copies <n>', 'how many sibling branches', Number, 1)
  .option('--name <name...>', 'names for the new branches (default NAME-1, NAME-2, …)')
  .description('fork a running branch into N live sibling branches')
  .action((ref: string, opts: { copies: number; name?: string[] }) =>
    withClient(async (c) => {
      await c.subscribe(['progress']);
      c.on('progress', (p) => {
        if (p.job.startsWith('fork-') && !globals().json) process.stderr.write(`[${p.stage}] ${p.message}\n`);
      });
      const report = await c.request('branch.fork', { workspace: ref, copies: opts.copies, names: opts.name });
      output(report, () => printForkReport(report));
    }),
  );

program
  .command('checkpoint')
  .argument('<workspace>', 'id or name')
  .option('-m, --label <text>', 'a note to remember this version by')
  .description("record a durable version of a branch's processes and files (it keeps running)")
  .action((ref: string, opts: { label?: string }) =>
    withClient(async (c) => {
      const v = await c.request('branch.checkpoint', { workspace: ref, label: opts.label });
      output(v, () => console.log(`version ${v.id} of ${v.branch}${v.label ? ` (${v.label})` : ''}`));
    }),
  );

program
  .command('rollback')
  .argument('<workspace>', 'id or name')
  .requiredOption('--to <version>', 'the version to return to')
  .description("return a branch to a version's processes and files")
  .action((ref: string, opts: { to: string }) =>
    withClient(async (c) => {
      const w = await c.request('branch.rollback', { workspace: ref, version: opts.to });
      output(w, () => printWorkspace(w));
    }),
  );

program
  .command('discard')
  .argument('<workspace>', 'id or name')
  .description('remove a branch and everything it has on the host')
  .action((ref: string) =>
    withClient(async (c) => {
      const res = await c.request('workspace.delete', { workspace: ref });
      output(res, () => console.log(`discarded ${res.deleted}`));
    }),
  );

program
  .command('promote')
  .argument('<workspace>', 'the branch to make the main line')
  .addOption(new Option('--old-main <fate>', 'what becomes of the old main line').choices(['version', 'discard', 'keep']).default('version'))
  .description("make a branch its workspace's main line; it takes over the stable host ports")
  .action((ref: string, opts: { oldMain: 'version' | 'discard' | 'keep' }) =>
    withClient(async (c) => {
      const w = await c.request('branch.promote', { workspace: ref, oldMain: opts.oldMain });
      output(w, () => printWorkspace(w));
    }),
  );

program
  .command('diff')
  .argument('<workspace>', 'the branch to look at')
  .argument('[other]', 'the branch to compare with (default: its parent)')
  .option('--stat', 'list the paths only')
  .description('files added, changed and removed between two branches, with text diffs')
  .action((ref: string, other: string | undefined, opts: { stat?: boolean }) =>
    withClient(async (c) => {
      const d = await c.request('branch.diff', { workspace: ref, other });
      output(d, () => printDiff(d, opts.stat ?? false));
    }),
  );

program
  .command('tree')
  .description('every workspace as a tree of branches, with its versions')
  .action(() =>
    withClient(async (c) => {
      const [branches, versions] = await Promise.all([c.request('workspace.list', {}), c.request('version.list', {})]);
      output({ branches, versions }, () => printTree(branches, versions));
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
