// `grove agents`: which workspaces each agent may see and act in (its scope).
// A person gives a user (or, with --group, every member of a group)
// workspaces by name, every workspace of an image, or leave to create its
// own; an agent lists its own scope.
import type { Command } from 'commander';
import type { Scope, ScopeWho } from '../../../privileged-helper/src/protocol/scopes.js';
import { scopeGivesWords, scopeWhoWords } from '../api/words.js';
import { output, withClient } from './context.js';

interface TargetOptions {
  group?: boolean;
  image?: string[];
  create?: boolean;
}

export function registerAgentCommands(program: Command): void {
  const agents = program.command('agents').description("agents' scopes: the workspaces each agent may see and act in (no scope, no workspace)");

  agents
    .command('ls')
    .option('--user <name>', 'only what was given to this user by name')
    .description('every scope (a person), or your own (an agent)')
    .action((opts: { user?: string }) =>
      withClient(async (c) => {
        const list = await c.request('scope.list', { user: opts.user });
        output(list, () => printScopes(list, c.hello!.identity.role === 'agent'));
      }),
    );

  withTargets(
    agents
      .command('allow')
      .argument('<who>', 'a user name (with --group, a group name)')
      .argument('[workspaces...]', 'workspaces (any branch of each: every branch of it is given)')
      .description('(persons) let an agent see and act in these workspaces, those of an image, or create its own (--create)'),
  ).action((who: string, workspaces: string[], opts: TargetOptions) =>
    withClient(async (c) => {
      const list = await c.request('scope.allow', { who: whoOf(who, opts), workspaces, images: opts.image, create: opts.create });
      output(list, () => printScopes(list, false));
    }),
  );

  withTargets(
    agents
      .command('revoke')
      .argument('<who>', 'a user name (with --group, a group name)')
      .argument('[workspaces...]', 'workspaces to take back (a gone one by its id); none named: everything it has')
      .description('(persons) take back what an agent was given; it holds at once, on connections already open too'),
  ).action((who: string, workspaces: string[], opts: TargetOptions) =>
    withClient(async (c) => {
      const gone = await c.request('scope.revoke', { who: whoOf(who, opts), workspaces, images: opts.image, create: opts.create });
      output(gone, () => console.log(`took back ${gone.length} scope(s): ${gone.map(describeScope).join('; ')}`));
    }),
  );
}

function withTargets(cmd: Command): Command {
  return cmd
    .option('--group', 'WHO is a group: every member of it')
    .option('--image <name...>', 'every workspace of these images')
    .option('--create', 'creating workspaces (each one it creates is its own)');
}

function whoOf(name: string, opts: TargetOptions): ScopeWho {
  return opts.group ? { group: name } : { user: name };
}

const describeScope = (s: Scope) => `${scopeWhoWords(s.subject)}: ${scopeGivesWords(s)}`;

function printScopes(list: Scope[], mine: boolean): void {
  if (list.length === 0) {
    console.log(
      mine
        ? 'No scope: no workspace is yours to see or act in. A person gives you some with grove agents allow YOUR-USER WORKSPACE…'
        : 'No agent has a scope: agents see no workspace. Give one some with grove agents allow USER WORKSPACE…',
    );
    return;
  }
  console.log(['SCOPE', 'FOR', 'GIVES', 'BY', 'AT'].join('\t'));
  for (const s of list) console.log([s.id, scopeWhoWords(s.subject), scopeGivesWords(s), s.grantedBy.user, s.at].join('\t'));
}
