// `grove bench`: runs the benchmark (privileged-helper/bench/main.ts, compiled
// like the CLI by build/compile.sh) as a program of its own, so that nothing
// of the bench, nor the test harness it starts helpers with, is part of the CLI. Its output streams through as it
// is, and its exit code becomes grove's.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { constants } from 'node:os';
import type { Command } from 'commander';
import { compiledProgram } from '../../../privileged-helper/src/protocol/grove-files.js';
import { GroveError } from '../helper-client/client.js';
import { globals } from './context.js';

const BENCH_MAIN = compiledProgram('privileged-helper/bench/main.ts');
/** The bench removes what it made on each of these: grove passes them on and waits for it. */
const HANDED_ON = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

interface BenchOptions {
  quick?: boolean;
  only?: string;
  out?: string;
}

export function registerBenchCommand(program: Command): void {
  program
    .command('bench')
    .option('--quick', 'fewer repetitions, up to 8 copies and depth 10: a check in minutes')
    .option('--only <section>', 'measure one section: fork, fanout, read-latency, computer-use, cli, cage, profile, own-work, quota, agent-loop or merge')
    .option('--out <file>', 'where to write the JSON (the SVG goes next to it; default a new file in privileged-helper/bench/results/, which git ignores)')
    .description(
      'fork and computer-use benchmark, Grove against plain CRIU (as root, on its own helper instance); progress on stderr, --json puts the result on stdout',
    )
    .action(async (opts: BenchOptions) => {
      process.exitCode = await runBenchProgram(benchArgs(opts, globals().json ?? false));
    });
}

/** The bench program's own command line (main.ts's options) for these CLI options. */
function benchArgs(opts: BenchOptions, json: boolean): string[] {
  return [
    ...(opts.quick ? ['--quick'] : []),
    ...(json ? ['--json'] : []),
    ...(opts.only === undefined ? [] : ['--only', opts.only]),
    ...(opts.out === undefined ? [] : ['--out', opts.out]),
  ];
}

/**
 * Runs the bench with grove's stdio and resolves to its exit code. It gets a
 * process group of its own, so a Ctrl-C reaches it once (from grove) rather
 * than twice, and grove stays until its clean-up is over.
 */
function runBenchProgram(args: string[]): Promise<number> {
  if (!existsSync(BENCH_MAIN)) throw new GroveError('E_PRECONDITION', `${BENCH_MAIN} is missing: run npm run build`);
  // execArgv carries node's options (source maps) over to the bench.
  const child = spawn(process.execPath, [...process.execArgv, BENCH_MAIN, ...args], { stdio: 'inherit', detached: true });
  const handOn = (sig: NodeJS.Signals) => child.kill(sig);
  for (const sig of HANDED_ON) process.on(sig, handOn);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      for (const sig of HANDED_ON) process.off(sig, handOn);
      resolve(code ?? 128 + (signal ? constants.signals[signal] : 0));
    });
  });
}
