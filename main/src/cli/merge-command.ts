// `grove merge TARGET SOURCE…`: what branches changed, brought into a live
// branch file by file (the helper's branches/merge.ts), or with --dry-run what
// would be. Conflicts are printed with both sides; a merge that leaves any
// unsettled writes nothing and exits 1. An agent merging into a branch it did
// not fork (the main line) asks a person, with the merge's dry run to review.
import type { Command } from 'commander';
import { GroveError } from '../helper-client/client.js';
import type { MergeConflict, MergeResult } from '../../../privileged-helper/src/protocol/merge.js';
import { mergeSideText } from '../api/words.js';
import { mayActAtOnce } from '../helper-client/requests.js';
import { askPerson, isAgent, printAsked, type AskOptions } from './approval-commands.js';
import { output, program, withClient } from './context.js';

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** `PATH=SOURCE` or `PATH=target`; the last '=' splits, as a branch name has none. */
function parseTake(arg: string): { path: string; side: string } {
  const eq = arg.lastIndexOf('=');
  if (eq <= 0 || eq === arg.length - 1) throw new GroveError('E_INVALID_PARAMS', `--take takes PATH=SOURCE or PATH=target, not '${arg}'`);
  return { path: arg.slice(0, eq), side: arg.slice(eq + 1) };
}

function printConflict(c: MergeConflict, target: string): void {
  console.log(`CONFLICT (${c.kind}) ${c.path}`);
  console.log(`  ${target}: ${mergeSideText(c.target)}`);
  console.log(`  ${c.source}: ${mergeSideText(c.sourceSide)}`);
  if (c.hunks !== null) console.log(c.hunks.replace(/^/gm, '  | ').trimEnd());
}

function printMerge(r: MergeResult, target: string): void {
  for (const s of r.sources) console.log(`${s.name}: base ${s.base}`);
  const mark = { write: 'M', delete: 'D' } as const;
  for (const c of r.changes) console.log(`${mark[c.action]} ${c.path}\t(${c.source}${c.how === 'source' ? '' : `, ${c.how}`})`);
  for (const c of r.conflicts) printConflict(c, target);
  if (r.conflicts.length > 0)
    console.log(`\n${r.conflicts.length} conflict(s): nothing was written. Settle each with --take PATH=SOURCE or --take PATH=target, then merge again.`);
  else if (r.dryRun) console.log(`\ndry run: ${r.changes.length} file(s) would change under ${r.scope}`);
  else if (r.version)
    console.log(
      `\nmerged ${r.changes.length} file(s) under ${r.scope} in ${Math.round(r.ms)} ms; ${target} before the merge is version ${r.version} (grove rollback ${target} --to ${r.version} undoes it)`,
    );
  else console.log(`\nnothing to merge under ${r.scope}`);
}

export function registerMergeCommand(): Command {
  return program
    .command('merge')
    .argument('<target>', 'the live branch merged into')
    .argument('<sources...>', 'the branches whose changes come in')
    .option('--dry-run', 'say what would change, and what conflicts; write nothing')
    .option('--take <PATH=SOURCE|target>', "settle a conflicting file with one side's whole file (repeat for more)", collect)
    .option('--all', "merge every file of the branch, not only its project's")
    .option('--reason <text>', 'an agent merging into a branch it did not fork: why (the person deciding reads it)')
    .option('--no-wait', 'an agent: ask, print the request id and return')
    .description(
      'bring into TARGET what each SOURCE changed since their lines forked, file by file with git merge-file; ' +
        "TARGET's processes keep running. TARGET is checkpointed first. Conflicts are listed with both sides; with any left, nothing is written (exit 1). " +
        'An agent asks a person to merge into a branch it did not fork',
    )
    .action((target: string, sources: string[], opts: AskOptions & { dryRun?: boolean; take?: string[]; all?: boolean }) =>
      withClient(async (c) => {
        const take = opts.take?.map(parseTake);
        if (!opts.dryRun && isAgent(c) && !mayActAtOnce(c.hello!.identity, await c.request('workspace.get', { workspace: target }))) {
          return printAsked(await askPerson(c, target, { kind: 'branch.merge', sources, take, all: opts.all }, opts));
        }
        const r = await c.request('branch.merge', { workspace: target, sources, dryRun: opts.dryRun, all: opts.all, take });
        output(r, () => printMerge(r, target));
        if (r.conflicts.length > 0) process.exitCode = 1;
      }),
    );
}
