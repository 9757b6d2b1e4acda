// What each role may do, method by method, in one table: the connection checks
// every call against it before a handler runs. Persons may do everything.
// Agents work in branches, and only in the workspaces a person gave them
// (their scope: auth/scopes.ts; the rest does not exist for them); what leaves
// the sandbox or becomes the main line they must ask a person for
// (approval.create), unless a person granted that kind of request for the
// workspace beforehand. Approving or denying is never an agent's.
//
// Ownership moves with authority. An agent owns a branch it made (forked, or
// created with a person's leave) only while no person has acted on it: once a
// person promoted it, approved a request on it, merged into it, exported it or
// changed its limits, it is that person's (claimedBy), and the agent asks
// before it discards, stops, rolls back or merges into it, as for any other
// branch a person made. A main line is always a person's this way: only a
// promotion a person made or allowed makes one (or a person's own create).
import type { AgentRequestKind } from '../protocol/approvals.js';
import type { Actor } from '../protocol/identity.js';
import type { Maker } from '../protocol/identity.js';
import type { MethodName, VersionsFate } from '../protocol/methods.js';
import { GroveError } from '../protocol/wire.js';

/**
 * read:    observing; anyone.
 * allow:   agents may.
 * ask:     agents must ask a person (approval.create with this kind).
 * own-ask: agents may on branches they own (see agentOwner); on others they must ask.
 * person:  only persons, ever.
 */
export type AgentRule =
  | { rule: 'read' | 'allow' }
  /** `why`: what an agent is told, where "only a person may" does not say enough. */
  | { rule: 'person'; why?: string }
  | { rule: 'ask' | 'own-ask'; kind: AgentRequestKind };

export interface Authority {
  agent: AgentRule;
  /** Recorded in the audit log (it changes something, or acts on a desktop). */
  audit: boolean;
}

const read: Authority = { agent: { rule: 'read' }, audit: false };
const allow: Authority = { agent: { rule: 'allow' }, audit: true };
const allowQuietly: Authority = { agent: { rule: 'allow' }, audit: false };
const person: Authority = { agent: { rule: 'person' }, audit: true };
const personBecause = (why: string): Authority => ({ agent: { rule: 'person', why }, audit: true });
/** Only persons see it; a read, so not audited. */
const personReads = (why: string): Authority => ({ agent: { rule: 'person', why }, audit: false });
const ask = (kind: AgentRequestKind): Authority => ({ agent: { rule: 'ask', kind }, audit: true });
const ownOrAsk = (kind: AgentRequestKind): Authority => ({ agent: { rule: 'own-ask', kind }, audit: true });

export const AUTHORITY = {
  hello: read,
  'events.subscribe': read,
  'host.doctor': read,
  'image.list': read,
  'image.build': person,
  'image.pull': person,
  'image.push': person,
  'image.remove': person,
  // Only an agent a person let create workspaces (grove agents allow USER --create: auth/scopes.ts); they are its own.
  'workspace.create': allow,
  'workspace.list': read,
  'workspace.get': read,
  'workspace.start': person,
  'workspace.stop': ownOrAsk('workspace.stop'),
  // With the workspace's last branch its versions go too, unless kept: see versionsFate.
  'workspace.delete': ownOrAsk('branch.discard'),
  'workspace.limits': person,
  'branch.fork': allow,
  'branch.checkpoint': allow,
  // Rolling back throws away what the branch did since: the owner's to decide.
  'branch.rollback': ownOrAsk('branch.rollback'),
  'branch.promote': ask('branch.promote'),
  // Discards branches an agent may not have made, and makes a main line: a person's decision, as one.
  'branch.pick': personBecause("picking a race's winner promotes one branch and discards others: a person's decision; ask a person (grove promote)"),
  'branch.diff': read,
  // What agents did in a branch, with pictures of its screen: for the person who decides their requests.
  'branch.timeline': personReads('what agents did in a branch is for the person deciding their requests'),
  'file.copyIn': allow,
  'file.copyOut': personBecause("copying out of a branch onto the host is for persons only: what leaves the sandbox is a person's to decide"),
  'branch.export': ask('branch.export'),
  // Into a branch the agent forked itself it may; into the main line, or another's branch, it asks.
  'branch.merge': ownOrAsk('branch.merge'),
  'version.list': read,
  // A version's name is what a person goes back to it by: theirs to give.
  'version.label': person,
  'version.delete': person,
  'exec.run': allow,
  'exec.log': read,
  'exec.terminals': read,
  'exec.open': allow,
  // A terminal's keystrokes go to the connection's own sessions only.
  'exec.write': allowQuietly,
  'exec.resize': allowQuietly,
  'exec.close': allowQuietly,
  'egress.status': read,
  'egress.set': ask('egress.policy'),
  'egress.log': read,
  'perf.get': read,
  'space.get': read,
  'space.pool': read,
  // Its key serves every branch's stream: agents have the computer-use API instead.
  'stream.tls': { agent: { rule: 'person', why: "a branch's stream is for persons; an agent sees a desktop through the computer tool" }, audit: false },
  'approval.list': read,
  'approval.get': read,
  'approval.create': allow,
  'approval.wait': read,
  'approval.withdraw': allow,
  'approval.approve': person,
  'approval.deny': person,
  'grant.list': read,
  'grant.set': person,
  'grant.revoke': person,
  // An agent sees its own scope only (auth/scopes.ts).
  'scope.list': read,
  'scope.allow': person,
  'scope.revoke': person,
  'audit.list': read,
  'desktop.screenshot': read,
  'desktop.cursor': read,
  'desktop.wait': read,
  'desktop.move': allow,
  'desktop.click': allow,
  'desktop.button': allow,
  'desktop.drag': allow,
  'desktop.scroll': allow,
  'desktop.key': allow,
  'desktop.type': allow,
  'desktop.holdKey': allow,
  'desktop.zoom': read,
  'desktop.windows': read,
  'desktop.openUrl': allow,
  'desktop.launch': allow,
  'file.upload': allow,
  // What a branch holds is the agent's to read (as with exec and cat): the bytes come back to it, nothing is written on the host.
  'file.download': read,
} as const satisfies Record<MethodName, Authority>;

/**
 * What becomes of a workspace's versions when `actor` deletes its last branch.
 * A person's default is to delete them; deleting versions is a person's
 * (version.delete), so an agent's deletions keep them as orphans, and an agent
 * asking for them to go is refused before anything is deleted.
 */
export function versionsFate(actor: Actor, asked: VersionsFate | undefined): VersionsFate {
  if (actor.role === 'person') return asked ?? 'delete';
  if (asked === 'delete')
    throw new GroveError('E_FORBIDDEN', `only a person may delete versions; ${actor.user} connected as an agent (its deletions keep a workspace's versions)`);
  return 'keep';
}

/** The uid of the agent that owns a branch: the one that made it, while no person has acted on it; else null. */
export function agentOwner(branch: { madeBy: Maker | null; claimedBy: Maker | null }): number | null {
  return branch.madeBy?.role === 'agent' && branch.claimedBy === null ? branch.madeBy.uid : null;
}

/**
 * Calls by which a person takes over the branch they name (`workspace`), when
 * they succeed: by a person, or by an agent under a person's standing
 * approval (then the branch is that person's). An approved request claims its
 * branch too (approvals/approval-service.ts).
 */
export const CLAIMING: ReadonlySet<MethodName> = new Set(['branch.promote', 'branch.merge', 'branch.export', 'workspace.limits']);

/** What the check needs to know about the branch a call names. */
export interface BranchFacts {
  name: string;
  treeId: string;
  /** The agent that owns it (agentOwner); null when it is a person's. */
  ownedByAgentUid: number | null;
}

export interface AuthorityLookup {
  /** The branch a call names (null when it names none or it does not exist: the handler then says so). */
  branch(ref: string): BranchFacts | null;
  /** The grant that lets agents do `kind` in the tree, if a person gave one. */
  grant(treeId: string, kind: AgentRequestKind): { id: string } | null;
}

/** How the agent CLI asks for each kind, for the error message. */
const HOW_TO_ASK: Record<AgentRequestKind, (ref: string) => string> = {
  'branch.promote': (ref) => `grove promote ${ref} --reason "…"`,
  'branch.discard': (ref) => `grove discard ${ref} --reason "…"`,
  'workspace.stop': (ref) => `grove ws stop ${ref} --reason "…"`,
  'egress.policy': (ref) => `grove egress ${ref} --allow HOST --reason "…"`,
  'branch.merge': (ref) => `grove merge ${ref} SOURCE… --reason "…"`,
  'branch.rollback': (ref) => `grove rollback ${ref} --to VERSION --reason "…"`,
  'branch.export': (ref) => `grove export ${ref} --git REPO --branch NAME --reason "…"`,
};

const VERB: Record<AgentRequestKind, string> = {
  'branch.promote': 'promote a branch',
  'branch.discard': 'discard a branch it does not own',
  'workspace.stop': 'stop a branch it does not own',
  'egress.policy': "change a branch's outside access",
  'branch.merge': 'merge into a branch it does not own',
  'branch.rollback': 'roll back a branch it does not own',
  'branch.export': "write a branch's work into a repository on the host",
};

/**
 * Throws E_FORBIDDEN unless `actor` may call `method` with `params` right now.
 * Resolves with the grant that allowed it, if one did (for the audit log).
 */
export function authorize(actor: Actor, method: MethodName, params: { workspace?: unknown }, lookup: AuthorityLookup): { grant: string | null } {
  if (actor.role === 'person') return { grant: null };
  const rule = AUTHORITY[method].agent;
  switch (rule.rule) {
    case 'read':
    case 'allow':
      return { grant: null };
    case 'person': {
      const why = rule.why ?? `only a person may call ${method}${method.startsWith('approval.') ? " (approving and denying is never an agent's)" : ''}`;
      throw new GroveError('E_FORBIDDEN', `${why}; ${actor.user} connected as an agent`);
    }
    case 'ask':
    case 'own-ask': {
      const ref = typeof params.workspace === 'string' ? params.workspace : '';
      const branch = lookup.branch(ref);
      if (!branch) return { grant: null }; // the handler reports the missing branch
      if (rule.rule === 'own-ask' && branch.ownedByAgentUid === actor.uid) return { grant: null };
      const grant = lookup.grant(branch.treeId, rule.kind);
      if (grant) return { grant: grant.id };
      throw new GroveError(
        'E_FORBIDDEN',
        `an agent may not ${VERB[rule.kind]} itself: ask a person (approval.create, kind ${rule.kind}; on the command line: ${HOW_TO_ASK[rule.kind](branch.name)})`,
      );
    }
  }
}
