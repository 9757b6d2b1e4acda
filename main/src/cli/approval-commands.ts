// The approvals queue on the command line: persons list and decide requests
// and give standing approvals; agents ask (promote, discard, stop, outside
// access become requests when an agent runs them) and wait for the answer.
import { Option, type Command } from 'commander';
import { GroveError, type HelperClient } from '../helper-client/client.js';
import type { AgentRequestAction, AgentRequestKind, Approval, ApprovalState } from '../../../privileged-helper/src/protocol/approvals.js';
import { AgentRequestKind as Kinds, OPEN_STATES } from '../../../privileged-helper/src/protocol/approvals.js';
import { Role } from '../../../privileged-helper/src/protocol/identity.js';
import { closedVerdict } from '../helper-client/requests.js';
import { globals, output, withClient } from './context.js';
import { describeAction, printApproval, printApprovalLine, printApprovals, printAudit, printGrants, printIdentity } from './format-approvals.js';

/** How long one approval.wait call may block; the CLI asks again until the request closes. */
const WAIT_SLICE_MS = 60_000;

export interface AskOptions {
  reason?: string;
  wait?: boolean;
}

/** True when the helper takes this connection for an agent. */
export function isAgent(c: HelperClient): boolean {
  return c.hello?.identity.role === 'agent';
}

/**
 * An agent asks a person for `action` on `ref`, and (unless told not to) waits
 * for the decision: resolves when it was carried out, throws E_DENIED,
 * E_TIMEOUT or the failure otherwise.
 */
export async function askPerson(c: HelperClient, ref: string, action: AgentRequestAction, opts: AskOptions): Promise<Approval> {
  if (!opts.reason?.trim()) throw new GroveError('E_INVALID_PARAMS', 'an agent must say why: add --reason TEXT (the person deciding reads it)');
  let a = await c.request('approval.create', { workspace: ref, action, reason: opts.reason });
  if (a.state === 'pending') {
    process.stderr.write(
      `asked a person: request ${a.id} (${describeAction(a.action)} ${a.workspaceName}); waiting until ${a.expiresAt}${opts.wait === false ? '' : ' (Ctrl-C stops waiting; the request stays)'}\n`,
    );
  }
  if (opts.wait === false) return a;
  while (a.state === 'pending' || a.state === 'running') a = await c.request('approval.wait', { id: a.id, timeoutMs: WAIT_SLICE_MS });
  return settled(a);
}

/** How `grove request --wait` exits with the request in each state (scripts tell a denial from an expiry). */
export const WAIT_EXIT_CODE: Record<ApprovalState, number> = {
  done: 0,
  failed: 1,
  withdrawn: 1,
  abandoned: 1,
  denied: 3,
  expired: 4,
  pending: 5,
  running: 5,
};

/** The request once it closed, or as it is after `ms`: the helper answers each wait the moment it is decided. */
async function waitUntilDecided(c: HelperClient, id: string, ms: number): Promise<Approval> {
  if (!Number.isFinite(ms) || ms < 0) throw new GroveError('E_INVALID_PARAMS', '--wait takes a number of seconds');
  const deadline = Date.now() + ms;
  let a = await c.request('approval.get', { id });
  while (OPEN_STATES.has(a.state) && Date.now() < deadline) {
    a = await c.request('approval.wait', { id, timeoutMs: Math.min(WAIT_SLICE_MS, deadline - Date.now()) });
  }
  return a;
}

/** The closed request when it was carried out; otherwise the error that tells the agent why not. */
function settled(a: Approval): Approval {
  const verdict = closedVerdict(a);
  if (verdict.code) throw new GroveError(verdict.code, verdict.words);
  return a;
}

/** Prints the outcome of a request an agent made (or its id when it did not wait). */
export function printAsked(a: Approval): void {
  output(a, () =>
    console.log(a.state === 'pending' ? `request ${a.id} waits for a person (grove request ${a.id})` : `request ${a.id}: ${a.outcome ?? a.state}`),
  );
}

export function registerApprovalCommands(program: Command): void {
  program
    .command('whoami')
    .description('who the helper takes you for (from your process credentials), and what that role may do')
    .action(() =>
      withClient(async (c) => {
        const me = c.hello!.identity;
        output(me, () => printIdentity(me, c.socketPath));
      }),
    );

  program
    .command('approvals')
    .argument('[workspace]', 'only requests about this branch')
    .option('-a, --all', 'recently closed requests too')
    .option('-w, --watch', 'keep running and print requests as they open and close')
    .description('requests waiting for a person: agents asking to promote, discard, stop or change outside access, and connections the egress gate holds')
    .action((ref: string | undefined, opts: { all?: boolean; watch?: boolean }) =>
      withClient(async (c) => {
        if (opts.watch) await c.subscribe(['approval.opened', 'approval.changed']);
        const list = await c.request('approval.list', { workspace: ref, all: opts.all ?? false });
        output(list, () => printApprovals(list));
        if (!opts.watch) return;
        const mine = (a: Approval) => !ref || a.workspace === ref || a.workspaceName === ref;
        c.on('approval.opened', (a) => mine(a) && (globals().json ? console.log(JSON.stringify(a)) : printApprovalLine(a)));
        c.on('approval.changed', (a) => mine(a) && a.state !== 'pending' && (globals().json ? console.log(JSON.stringify(a)) : printApprovalLine(a)));
        await new Promise<void>((resolve) => c.onClose(() => resolve()));
      }),
    );

  program
    .command('request')
    .argument('<request>', 'a request id (q…)')
    .option(
      '--wait <seconds>',
      'wait up to this long for it to be decided; then exit 0 when it was approved and carried out, 3 denied, 4 expired, 5 still undecided, 1 failed, withdrawn or abandoned',
      Number,
    )
    .description('one request: what it would do, its preview, and how it was decided')
    .action((id: string, opts: { wait?: number }) =>
      withClient(async (c) => {
        const a = opts.wait === undefined ? await c.request('approval.get', { id }) : await waitUntilDecided(c, id, opts.wait * 1000);
        output(a, () => printApproval(a));
        if (opts.wait !== undefined) process.exitCode = WAIT_EXIT_CODE[a.state];
      }),
    );

  program
    .command('withdraw')
    .argument('<request>', 'a request you made')
    .description('take back a request you made that is still waiting')
    .action((id: string) =>
      withClient(async (c) => {
        const a = await c.request('approval.withdraw', { id });
        output(a, () => console.log(`withdrew ${a.id}`));
      }),
    );

  program
    .command('approve')
    .argument('<request>', 'the request (see grove approvals)')
    .option('--always', "a held connection: also add its destination to the branch's allow list")
    .option('--note <text>', 'a note for the agent and the audit log')
    .description('(persons) let a request happen: it is carried out now')
    .action((id: string, opts: { always?: boolean; note?: string }) =>
      withClient(async (c) => {
        const a = await c.request('approval.approve', { id, always: opts.always ?? false, note: opts.note });
        output(a, () =>
          console.log(
            `${a.state === 'done' ? 'approved' : a.state} ${a.id}: ${describeAction(a.action)} ${a.workspaceName}${a.outcome ? ` — ${a.outcome}` : ''}`,
          ),
        );
        if (a.state === 'failed') process.exitCode = 1;
      }),
    );

  program
    .command('deny')
    .argument('<request>', 'the request (see grove approvals)')
    .option('--note <text>', 'why, for the agent and the audit log')
    .description('(persons) refuse a request')
    .action((id: string, opts: { note?: string }) =>
      withClient(async (c) => {
        const a = await c.request('approval.deny', { id, note: opts.note });
        output(a, () => console.log(`denied ${a.id}: ${describeAction(a.action)} ${a.workspaceName}`));
      }),
    );

  program
    .command('grants')
    .argument('[workspace]', "only this branch's workspace")
    .description('standing approvals: what agents may do without asking, per workspace')
    .action((ref: string | undefined) =>
      withClient(async (c) => {
        const list = await c.request('grant.list', { workspace: ref });
        output(list, () => printGrants(list));
      }),
    );

  program
    .command('grant')
    .argument('<workspace>', 'any branch of the workspace')
    .argument('<kind>', `what agents may then do without asking: ${Kinds.options.join(', ')}`)
    .description('(persons) let agents do one kind of request in a workspace without asking (waiting ones are approved too)')
    .action((ref: string, kind: string) =>
      withClient(async (c) => {
        const parsed = Kinds.safeParse(kind);
        if (!parsed.success) throw new GroveError('E_INVALID_PARAMS', `no such kind '${kind}': one of ${Kinds.options.join(', ')}`);
        const g = await c.request('grant.set', { workspace: ref, kind: parsed.data as AgentRequestKind });
        output(g, () => console.log(`${g.id}: agents may ${g.kind} in ${g.treeName} without asking (grove revoke ${g.id})`));
      }),
    );

  program
    .command('revoke')
    .argument('<grant>', 'a grant id (g…)')
    .description('(persons) take a standing approval back')
    .action((id: string) =>
      withClient(async (c) => {
        const g = await c.request('grant.revoke', { grant: id });
        output(g, () => console.log(`revoked ${g.id}: agents ask again before ${g.kind} in ${g.treeName}`));
      }),
    );

  program
    .command('audit')
    .argument('[workspace]', 'only calls about this branch (a removed one by the id or name its calls used)')
    .option('-n, --limit <n>', 'how many of the newest entries', Number, 100)
    .option('--user <name|uid>', 'only calls by this user (a name, or a uid)')
    .addOption(new Option('--role <role>', 'only calls by persons, or by agents').choices(Role.options))
    .option('--since <time>', 'only calls at or after it: an ISO date or time (2026-01-31, 2026-01-31T09:00:00Z) or a time ago (90s, 30m, 2h, 7d)', parseTime)
    .option('--until <time>', 'only calls before it (the same forms)', parseTime)
    .description('who did what: every call that changed something, with the caller as the kernel identified it')
    .action((ref: string | undefined, opts: { limit: number; user?: string; role?: Role; since?: string; until?: string }) =>
      withClient(async (c) => {
        const byUid = opts.user !== undefined && /^\d+$/.test(opts.user);
        const entries = await c.request('audit.list', {
          workspace: ref,
          limit: opts.limit,
          user: byUid ? undefined : opts.user,
          uid: byUid ? Number(opts.user) : undefined,
          role: opts.role,
          since: opts.since,
          until: opts.until,
        });
        output(entries, () => printAudit(entries));
      }),
    );
}

const UNIT_MS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;

/** An ISO date or time, or a duration before now ('2h': two hours ago), as the ISO time the helper takes. */
function parseTime(text: string): string {
  const ago = /^(\d+)([smhd])$/.exec(text.trim());
  const ms = ago ? Date.now() - Number(ago[1]) * UNIT_MS[ago[2] as keyof typeof UNIT_MS] : Date.parse(text);
  if (!Number.isFinite(ms)) throw new GroveError('E_INVALID_PARAMS', `not a time: '${text}' (e.g. 2026-01-31, 2026-01-31T09:00:00Z, 30m, 7d)`);
  return new Date(ms).toISOString();
}
