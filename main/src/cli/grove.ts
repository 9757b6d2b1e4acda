// `grove`: the command line for people, agents and scripts. A client of the
// helper's API like the app; every command that prints has --json for scripts.
// Who it acts as comes from the socket it uses (see context.ts): on the agent
// socket, what only a person may do becomes a request to a person.
import { writeFile } from 'node:fs/promises';
import { CommanderError, Option, type Command } from 'commander';
import { GroveError } from '../helper-client/client.js';
import { printDiff, printDoctor, printForkReport, printLimits, printSpace, printStats, printTree, printWorkspace, printWorkspaces } from './format.js';
import { printDetachedRuns, printEgressLog, printEgressStatus } from './format.js';
import { parseRule } from '../../../privileged-helper/src/protocol/egress-rules.js';
import type { EgressRule } from '../../../privileged-helper/src/protocol/entities.js';
import { parseSize } from './sizes.js';
import { runTerminal } from './terminal.js';
import { globals, output, program, wantsJson, withClient } from './context.js';
import { askPerson, isAgent, printAsked, registerApprovalCommands, type AskOptions } from './approval-commands.js';
import type { HelperClient } from '../helper-client/client.js';
import { mayActAtOnce, noWorkspaceWords, withAllowListOn } from '../helper-client/requests.js';
import { registerDesktopCommands } from './desktop-commands.js';
import { registerMcpCommand } from './mcp-command.js';
import { registerAgentCommands } from './agent-commands.js';
import { registerBenchCommand } from './bench-command.js';
import { absolute, followCopies, registerCopyCommand, registerExportCommand, registerImageCommands } from './image-commands.js';
import { registerMergeCommand } from './merge-command.js';
import { chooseVersionsFate, describeDeletion, registerVersionCommands, watchVersions, withVersionsChoice, type VersionsChoice } from './version-commands.js';

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

registerImageCommands();
registerCopyCommand();
registerExportCommand();
registerMergeCommand();

/** How long `grove stream`'s URL token is taken after it is printed (its cookie then stays good while the command runs). */
const STREAM_TOKEN_TTL_MS = 60_000;

const ws = program.command('ws').description('workspaces');
ws.command('create')
  .argument('<name>', 'a name: lower-case letters, digits, dashes')
  .option('--image <image>', 'image to start from (grove image ls)', 'desktop')
  .option('--project <HOSTPATH[:PATH]>', 'copy a host folder or git repository into it, at PATH (default /root/work); its origin is kept')
  .option('--sensitive', 'keep its memory out of KSM: no page-content side channel with other workspaces (its forks inherit it)')
  .addOption(new Option('-p, --port <port...>', 'extra container ports to map').argParser(collectPorts))
  .description('create and start a workspace; prints its id, desktop socket and host ports')
  .action((name: string, opts: { image: string; project?: string; sensitive?: boolean; port?: number[] }) =>
    withClient(async (c) => {
      const project = opts.project === undefined ? undefined : projectOption(opts.project);
      if (project) await followCopies(c, name);
      const w = await c.request('workspace.create', { name, image: opts.image, ports: opts.port, project, sensitive: opts.sensitive });
      output(w, () => printWorkspace(w));
    }),
  );
ws.command('show')
  .argument('<workspace>', 'id or name')
  .description('a branch: its state, desktop socket, host ports and the project it was made with')
  .action((ref: string) =>
    withClient(async (c) => {
      const w = await c.request('workspace.get', { workspace: ref });
      output(w, () => printWorkspace(w));
    }),
  );
ws.command('start')
  .argument('<workspace>', 'id or name')
  .description('start a stopped workspace')
  .action((ref: string) =>
    withClient(async (c) => {
      const w = await c.request('workspace.start', { workspace: ref });
      output(w, () => printWorkspace(w));
    }),
  );
withAsking(
  ws
    .command('stop')
    .argument('<workspace>', 'id or name')
    .description('stop a workspace (its files are kept); an agent asks a person unless it forked the branch'),
).action((ref: string, opts: AskOptions) =>
  withClient(async (c) => {
    if (!(await mayActOn(c, ref))) return printAsked(await askPerson(c, ref, { kind: 'workspace.stop' }, opts));
    const w = await c.request('workspace.stop', { workspace: ref });
    output(w, () => printWorkspace(w));
  }),
);
ws.command('limits')
  .argument('<workspace>', 'id or name')
  .option('--memory <size>', 'memory, e.g. 2G or 1536M (no swap beyond it)', parseSize)
  .option('--pids <n>', 'processes and threads', Number)
  .option('--cpu-weight <n>', 'share of CPU under contention (100 = an equal share)', Number)
  .option('--disk <size>', "what its own files may write in the pool, e.g. 10G (past it, writes in it fail: 'Disk quota exceeded')", parseSize)
  .description("(persons) show or change a branch's resource limits; applied at once while it runs, inherited by its forks")
  .action((ref: string, opts: { memory?: number; pids?: number; cpuWeight?: number; disk?: number }) =>
    withClient(async (c) => {
      const changing = opts.memory !== undefined || opts.pids !== undefined || opts.cpuWeight !== undefined || opts.disk !== undefined;
      const w = changing
        ? await c.request('workspace.limits', { workspace: ref, memoryBytes: opts.memory, pids: opts.pids, cpuWeight: opts.cpuWeight, diskBytes: opts.disk })
        : await c.request('workspace.get', { workspace: ref });
      output(w.limits, () => printLimits(w));
    }),
  );
withVersionsChoice(
  withAsking(
    ws
      .command('rm')
      .argument('<workspace>', 'id or name')
      .description("delete a workspace and everything it has on the host (like discard); on a terminal, asks about the versions of a workspace's last branch"),
  ),
).action((ref: string, opts: AskOptions & VersionsChoice) => discard(ref, opts, 'deleted'));

program
  .command('ls')
  .description('list workspaces')
  .option('--space', 'also measure what each holds on disk (what deleting it would free); takes a moment with many')
  .action((opts: { space?: boolean }) =>
    withClient(async (c) => {
      const list = await c.request('workspace.list', {});
      const space = opts.space ? await c.request('space.get', {}) : null;
      output(space ? { workspaces: list, space } : list, () =>
        list.length === 0 && isAgent(c) ? console.log(noWorkspaceWords(c.hello!.identity)) : printWorkspaces(list, space),
      );
    }),
  );

program
  .command('fork')
  .argument('<workspace>', 'the running branch to fork (id or name)')
  .option('-n, --copies <n>', 'how many sibling branches', Number, 1)
  .option('--name <name...>', 'names for the new branches (default NAME-1, NAME-2, …)')
  .option('--from <version>', "restore them from this version of the branch's workspace; the branch is not touched and need not run")
  .description('fork a running branch (or one of its versions) into N live sibling branches')
  .action((ref: string, opts: { copies: number; name?: string[]; from?: string }) =>
    withClient(async (c) => {
      await c.subscribe(['progress']);
      c.on('progress', (p) => {
        if (p.job.startsWith('fork-') && !globals().json) process.stderr.write(`[${p.stage}] ${p.message}\n`);
      });
      const report = await c.request('branch.fork', { workspace: ref, copies: opts.copies, names: opts.name, version: opts.from });
      output(report, () => printForkReport(report));
    }),
  );

program
  .command('checkpoint')
  .argument('<workspace>', 'id or name')
  .option('-m, --label <text>', 'a note to remember this version by')
  .option('-w, --wait', 'return once the version is saved into the pool, not once its point in time is fixed')
  .description("record a version of a branch's processes and files (it keeps running); it is saved in the background")
  .action((ref: string, opts: { label?: string; wait?: boolean }) =>
    withClient(async (c) => {
      const saved = opts.wait ? await watchVersions(c) : null;
      let v = await c.request('branch.checkpoint', { workspace: ref, label: opts.label });
      if (saved) v = await saved(v.id);
      output(v, () =>
        console.log(
          `version ${v.id} of ${v.branch}${v.label ? ` (${v.label})` : ''}${v.saved ? ', saved' : ', saving in the background (grove versions shows when it is saved)'}`,
        ),
      );
    }),
  );

withAsking(
  program
    .command('rollback')
    .argument('<workspace>', 'id or name')
    .requiredOption('--to <version>', 'the version to return to')
    .option('--keep', 'keep what the running branch was as a version (saved in the background)')
    .description("return a branch to a version's processes and files; an agent asks a person unless the branch is its own"),
).action((ref: string, opts: AskOptions & { to: string; keep?: boolean }) =>
  withClient(async (c) => {
    if (!(await mayActOn(c, ref))) return printAsked(await askPerson(c, ref, { kind: 'branch.rollback', version: opts.to }, opts));
    const w = await c.request('branch.rollback', { workspace: ref, version: opts.to, ...(opts.keep && { keep: true }) });
    output(w, () => printWorkspace(w));
  }),
);

withVersionsChoice(
  withAsking(
    program
      .command('discard')
      .argument('<workspace>', 'id or name')
      .description('remove a branch and everything it has on the host; an agent asks a person unless it forked the branch'),
  ),
).action((ref: string, opts: AskOptions & VersionsChoice) => discard(ref, opts, 'discarded'));

withAsking(
  program
    .command('promote')
    .argument('<workspace>', 'the branch to make the main line')
    .addOption(
      new Option('--old-main <fate>', 'what becomes of the old main line: version retires it (stopped, with a version of it), discard, keep (running)')
        .choices(['version', 'discard', 'keep'])
        .default('version'),
    )
    .description("make a branch its workspace's main line; it takes over the stable host ports and desktop socket (an agent asks a person)"),
).action((ref: string, opts: AskOptions & { oldMain: 'version' | 'discard' | 'keep' }) =>
  withClient(async (c) => {
    if (isAgent(c)) return printAsked(await askPerson(c, ref, { kind: 'branch.promote', oldMain: opts.oldMain }, opts));
    const w = await c.request('branch.promote', { workspace: ref, oldMain: opts.oldMain });
    output(w, () => printWorkspace(w));
  }),
);

program
  .command('diff')
  .argument('<workspace>', 'the branch to look at')
  .argument('[other]', 'the branch to compare with (default: its parent)')
  .option('--stat', 'list the paths only')
  .option('--all', "noise too: Grove's own files (/etc/hostname, /etc/hosts, /etc/machine-id), .git, and what the project's .gitignore files match")
  .description('files added, changed and removed between two branches, with text diffs')
  .action((ref: string, other: string | undefined, opts: { stat?: boolean; all?: boolean }) =>
    withClient(async (c) => {
      const d = await c.request('branch.diff', { workspace: ref, other, all: opts.all });
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
  .command('stats')
  .description("memory of each running branch (PSS, shared through KSM, processes), the host's, and the last forks' stage timings")
  .action(() =>
    withClient(async (c) => {
      const perf = await c.request('perf.get', {});
      output(perf, () => printStats(perf));
    }),
  );

program
  .command('space')
  .description("the pool's free space, and what each branch and version holds in it (what deleting it would free)")
  .action(() =>
    withClient(async (c) => {
      const report = await c.request('space.get', {});
      output(report, () => printSpace(report));
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
  .option('--attach <terminal>', "with -t: attach to a terminal already in the workspace (a fork's report names each child's copy)")
  .option('--log [run]', "the runs a fork or rollback carried into the workspace, detached; with a run's id, its output's newest part")
  .description("run a command inside a workspace; its exit code becomes grove's")
  .action((ref: string, command: string[], opts: { tty?: boolean; stdin?: boolean; timeout?: number; attach?: string; log?: string | true }) =>
    withClient(async (c) => {
      if (opts.log !== undefined) {
        if (command.length > 0) throw new GroveError('E_INVALID_PARAMS', '--log takes no command');
        const log = await c.request('exec.log', { workspace: ref, run: opts.log === true ? undefined : opts.log });
        output(log, () => printDetachedRuns(log));
        return;
      }
      const tty = opts.tty ?? process.stdin.isTTY;
      if (opts.attach !== undefined && (!tty || command.length > 0)) throw new GroveError('E_INVALID_PARAMS', '--attach takes -t and no command');
      if (tty) {
        process.exitCode = await runTerminal(c, ref, command.length ? command : undefined, opts.attach);
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

program
  .command('app')
  .description('run the supervisor app: --web serves it on 127.0.0.1 for a browser')
  .option('--web', 'serve the app over HTTP + WebSocket (the URL, secret included, is printed)')
  .option('--port <port>', 'port to listen on (default: a free one)', Number)
  .option('--host <address>', 'address to listen on; beyond loopback only with --tls-cert and --tls-key', '127.0.0.1')
  .option('--tls-cert <file>', "PEM certificate for HTTPS (default: Grove's own, from its local CA)")
  .option('--tls-key <file>', 'PEM private key for HTTPS')
  .addOption(
    new Option('--stream <view>', "how desktops are shown: each branch's Selkies stream over HTTPS, or noVNC (served over plain HTTP unless --tls-cert)")
      .choices(['selkies', 'vnc'])
      .default('selkies'),
  )
  .option('--ca <file>', "write Grove's local CA certificate (PEM) here, for a browser to trust")
  .action(async (opts: { web?: boolean; port?: number; host: string; tlsCert?: string; tlsKey?: string; stream: 'selkies' | 'vnc'; ca?: string }) => {
    if (!opts.web) throw new GroveError('E_PRECONDITION', 'the desktop app is started by the Electron shell; use `grove app --web` here');
    if (Boolean(opts.tlsCert) !== Boolean(opts.tlsKey)) throw new GroveError('E_INVALID_PARAMS', 'give both --tls-cert and --tls-key');
    // A long-running command's stack traces lead back to the TypeScript (for the modules loaded from here on).
    process.setSourceMapsEnabled(true);
    const files = opts.tlsCert && opts.tlsKey ? { cert: opts.tlsCert, key: opts.tlsKey } : undefined;
    // Streams are framed only over HTTPS: without certificate files, Grove's own (a person's: an agent is refused here).
    const own = (opts.stream === 'selkies' && !files) || opts.ca ? await withClient((c) => c.request('stream.tls', {})) : null;
    if (opts.ca && own) await writeFile(opts.ca, own.ca);
    const { startApp } = await import('../app/start.js');
    const app = await startApp({
      socketPath: globals().socket,
      host: opts.host,
      port: opts.port,
      tls: files,
      tlsPem: opts.stream === 'selkies' && !files && own ? { cert: own.cert, key: own.key } : undefined,
      desktopView: opts.stream === 'selkies' ? 'stream' : 'vnc',
    });
    const web = app.web;
    process.stderr.write('Grove app: open this URL (it carries the secret for this launch):\n');
    process.stdout.write(`${web.launchUrl}\n`);
    const shutdown = () => void app.stop().then(() => process.exit(0));
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
    await new Promise<never>(() => undefined);
  });

program
  .command('stream')
  .argument('<workspace>', 'id or name of a running branch')
  .option('--port <n>', 'port on 127.0.0.1 (default: any free one)', (v) => Number(v))
  .option('--ca <file>', "write Grove's local CA certificate (PEM) here, for a browser to trust")
  .description(
    "serve a running branch's desktop as its Selkies stream over HTTPS on 127.0.0.1, printing its URL with a token taken for a minute (persons only)",
  )
  .action(async (ref: string, opts: { port?: number; ca?: string }) => {
    // Both are a person's: an agent is refused here, before anything listens.
    const { tls, branch } = await withClient(async (c) => ({
      tls: await c.request('stream.tls', {}),
      branch: await c.request('workspace.get', { workspace: ref }),
    }));
    if (branch.streamSocket === null) throw new GroveError('E_CONFLICT', `workspace '${branch.name}' is ${branch.state}: only a running branch has a stream`);
    if (opts.ca) await writeFile(opts.ca, tls.ca);
    const { startApp } = await import('../app/start.js');
    const app = await startApp({ socketPath: globals().socket, port: opts.port, tlsPem: { cert: tls.cert, key: tls.key }, tokenTtlMs: STREAM_TOKEN_TTL_MS });
    process.stderr.write(`Grove: ${branch.name}'s desktop; the token in this URL is taken for ${STREAM_TOKEN_TTL_MS / 1000} s:\n`);
    process.stdout.write(`${app.web.url}stream/${branch.id}/?token=${app.web.secret}\n`);
    const shutdown = () => void app.stop().then(() => process.exit(0));
    process.once('SIGINT', shutdown);
    process.once('SIGTERM', shutdown);
    await new Promise<never>(() => undefined);
  });

program
  .command('egress')
  .argument('<workspace>', 'id or name of the branch')
  .option('--deny', 'nothing leaves the branch (the default)')
  .option('--allow <host[:port]...>', 'let these destinations through without asking (a deny policy becomes allow-list only)', collectRules)
  .option('--remove <host[:port]...>', 'take destinations off the allow list', collectRules)
  .option('--gate', 'hold every destination not on the allow list until a person approves it')
  .option('--hold-mutating', 'also hold plain-HTTP requests other than GET/HEAD/OPTIONS to allowed destinations')
  .option('--no-hold-mutating', 'stop holding mutating requests to allowed destinations')
  .option('--log', "show the branch's egress log instead")
  .option('--reason <text>', 'an agent: why it asks for the change (a person decides)')
  .option('--no-wait', 'an agent: do not wait for the decision')
  .description("show or change a branch's egress policy (with no option: policy and drop counters); an agent asks a person for changes")
  .action(
    (ref: string, opts: AskOptions & { deny?: boolean; allow?: EgressRule[]; remove?: EgressRule[]; gate?: boolean; holdMutating?: boolean; log?: boolean }) =>
      withClient(async (c) => {
        if (opts.deny && opts.gate) throw new GroveError('E_INVALID_PARAMS', 'give --deny or --gate, not both');
        if (opts.log) {
          const entries = await c.request('egress.log', { workspace: ref });
          return output(entries, () => printEgressLog(entries));
        }
        const changing = opts.deny || opts.gate || opts.allow || opts.remove || opts.holdMutating !== undefined;
        if (changing) {
          const { policy } = await c.request('egress.status', { workspace: ref });
          const mode = opts.deny ? 'deny' : opts.gate ? 'gate' : undefined;
          const change = withAllowListOn(policy.mode, { mode, holdMutating: opts.holdMutating, allow: opts.allow, remove: opts.remove });
          if (isAgent(c)) return printAsked(await askPerson(c, ref, { kind: 'egress.policy', change }, opts));
          await c.request('egress.set', { workspace: ref, ...change });
        }
        const status = await c.request('egress.status', { workspace: ref });
        output(status, () => printEgressStatus(status));
      }),
  );

/** The options of a command an agent may have to ask a person for. */
function withAsking(cmd: Command): Command {
  return cmd.option('--reason <text>', 'an agent: why (the person deciding reads it)').option('--no-wait', 'an agent: ask, print the request id and return');
}

/** Whether the caller may discard or stop the branch without asking (a person, or the agent that forked it). */
async function mayActOn(c: HelperClient, ref: string): Promise<boolean> {
  return mayActAtOnce(c.hello!.identity, await c.request('workspace.get', { workspace: ref }));
}

function discard(ref: string, opts: AskOptions & VersionsChoice, verb: string): Promise<void> {
  return withClient(async (c) => {
    const versions = await chooseVersionsFate(c, ref, opts);
    if (!(await mayActOn(c, ref))) return printAsked(await askPerson(c, ref, { kind: 'branch.discard' }, opts));
    const res = await c.request('workspace.delete', { workspace: ref, versions });
    output(res, () => console.log(describeDeletion(verb, res)));
  });
}

/** '2G', '1536M', '512m', or a number of bytes. */
function collectRules(value: string, previous: EgressRule[] | undefined): EgressRule[] {
  try {
    return [...(previous ?? []), parseRule(value)];
  } catch (err) {
    throw new GroveError('E_INVALID_PARAMS', (err as Error).message);
  }
}

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

registerApprovalCommands(program);
registerAgentCommands(program);
registerDesktopCommands(program);
registerVersionCommands(program);
registerMcpCommand(program);
registerBenchCommand(program);

// A reader that stopped reading (`grove space | head -1`) is not a failure of grove's.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

program.parseAsync().catch(failed);

/**
 * Every failure exits 2; with --json it is {"error": {code, message}} on
 * standard output, where a script reads the answer. Usage errors (commander's)
 * are E_INVALID_PARAMS; help and --version are no failure.
 */
function failed(err: unknown): never {
  if (err instanceof CommanderError && err.exitCode === 0) process.exit(0);
  const usage = err instanceof CommanderError;
  const error =
    err instanceof GroveError
      ? { code: err.code, message: err.message }
      : { code: usage ? 'E_INVALID_PARAMS' : 'E_INTERNAL', message: ((err as Error)?.message ?? String(err)).replace(/^error: /, '') };
  if (wantsJson()) process.stdout.write(`${JSON.stringify({ error })}\n`);
  else if (err instanceof GroveError) process.stderr.write(`grove: ${err.message} (${err.code})\n`);
  // commander has said what was wrong, with the usage.
  else if (!usage) process.stderr.write(`grove: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(2);
}

/** --project HOSTPATH[:PATH]: the host folder (absolute) and where it goes in the workspace. */
function projectOption(value: string): { hostPath: string; path?: string } {
  const colon = value.lastIndexOf(':/');
  return colon > 0 ? { hostPath: absolute(value.slice(0, colon)), path: value.slice(colon + 1) } : { hostPath: absolute(value) };
}
