// Agents' scopes: which workspaces each agent may see and act in. A person
// gives a user (or every member of a group) workspaces one by one (every
// branch of each), or all workspaces of an image, and may let it create
// workspaces (each one it creates joins its scope). No scope, no workspace.
// The scopes live in the registry (the helper's state dir); each row is
// validated when the helper loads it, and one it cannot read gives nothing.
// Every agent call consults them as they stand at that call (scope-guard.ts),
// so a revocation holds at once, on connections already open too.
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { run } from '../host/run.js';
import { Actor } from '../protocol/identity.js';
import { ID_PATTERN } from '../protocol/names.js';
import { Scope, ScopeSubject, ScopeTarget, type ScopeChange, type ScopeWho } from '../protocol/scopes.js';
import { GroveError } from '../protocol/wire.js';
import type { Registry, ScopeRow } from '../registry/registry.js';

interface StoredScope {
  id: string;
  subject: ScopeSubject;
  target: ScopeTarget;
  grantedBy: Actor;
  at: string;
}

/** The numbers behind a user or group name, from NSS; null when there is none. */
export interface Accounts {
  uid(user: string): Promise<number | null>;
  gid(group: string): Promise<number | null>;
}

export const systemAccounts: Accounts = {
  uid: (user) => getentNumber('passwd', user),
  gid: (group) => getentNumber('group', group),
};

async function getentNumber(db: 'passwd' | 'group', name: string): Promise<number | null> {
  const res = await run('getent', [db, name], { allowFailure: true });
  const fields = res.exitCode === 0 ? res.stdout.split('\n')[0]!.split(':') : [];
  return fields[0] === name && /^[0-9]+$/.test(fields[2] ?? '') ? Number(fields[2]) : null;
}

/** Who is calling, as far as scopes go: the uid and every gid of the connection (from the kernel). */
export interface AgentAccount {
  uid: number;
  gids: readonly number[];
}

/** What one agent may see: whole workspaces (trees), every workspace of some images, and whether it may create. */
export class AgentView {
  constructor(
    readonly trees: ReadonlySet<string>,
    readonly images: ReadonlySet<string>,
    readonly mayCreate: boolean,
  ) {}

  sees(branch: { treeId: string; image: string }): boolean {
    return this.trees.has(branch.treeId) || this.images.has(branch.image);
  }

  get empty(): boolean {
    return this.trees.size === 0 && this.images.size === 0;
  }
}

export class ScopeBook {
  private scopes: StoredScope[];

  constructor(
    private readonly registry: Registry,
    private readonly accounts: Accounts,
    log: (msg: string) => void,
  ) {
    this.scopes = registry.scopeRows().flatMap((row) => {
      const read = readRow(row);
      if (read) return [read];
      log(`agent scope ${row.id} cannot be read and gives nothing: ${JSON.stringify(row)}`);
      return [];
    });
  }

  /** The scope of this agent as it stands now. */
  viewOf(agent: AgentAccount): AgentView {
    const mine = this.scopes.filter((s) => appliesTo(s.subject, agent));
    const trees = new Set(mine.flatMap((s) => (s.target.kind === 'workspace' ? [s.target.tree] : [])));
    const images = new Set(mine.flatMap((s) => (s.target.kind === 'image' ? [s.target.image] : [])));
    return new AgentView(
      trees,
      images,
      mine.some((s) => s.target.kind === 'create'),
    );
  }

  /** Every scope, or those that apply to one agent (what an agent sees of them). */
  list(agent?: AgentAccount): Scope[] {
    return this.scopes.filter((s) => !agent || appliesTo(s.subject, agent)).map((s) => this.view(s));
  }

  /**
   * A person gives `change.who` what the change names. Every name is checked
   * before anything is recorded; what it has already stays as it is. Answers
   * the subject's scopes after the change.
   */
  async allow(by: Actor, change: ScopeChange): Promise<Scope[]> {
    const subject = await this.subjectOf(change.who);
    const targets = this.targetsOf(change);
    const at = new Date().toISOString();
    const fresh = targets.filter((t) => !this.scopes.some((s) => sameSubject(s.subject, subject) && sameTarget(s.target, t)));
    this.registry.transaction(() => {
      for (const target of fresh) this.put({ id: freshId(), subject, target, grantedBy: by, at });
    });
    return this.ofSubject(subject);
  }

  /** Takes back what the change names, or (naming nothing) everything the subject has. Answers what was taken back. */
  async revoke(who: ScopeWho, what: Omit<ScopeChange, 'who'>): Promise<Scope[]> {
    const subject = await this.subjectOf(who);
    const named = (what.workspaces?.length ?? 0) + (what.images?.length ?? 0) > 0 || what.create === true;
    const targets = named ? this.targetsOf(what, { gone: true }) : null;
    const going = this.scopes.filter((s) => sameSubject(s.subject, subject) && (targets === null || targets.some((t) => sameTarget(s.target, t))));
    if (going.length === 0) throw new GroveError('E_NOT_FOUND', `${subjectWords(subject)} has no such scope (grove agents ls)`);
    this.registry.transaction(() => {
      for (const s of going) this.registry.deleteScope(s.id);
    });
    const ids = new Set(going.map((s) => s.id));
    this.scopes = this.scopes.filter((s) => !ids.has(s.id));
    return going.map((s) => this.view(s));
  }

  /** A workspace an agent created is its own: it joins its user's scope. */
  own(agent: Actor, treeId: string): void {
    const subject: ScopeSubject = { kind: 'user', name: agent.user, uid: agent.uid };
    this.put({ id: freshId(), subject, target: { kind: 'workspace', tree: treeId }, grantedBy: agent, at: new Date().toISOString() });
  }

  private put(s: StoredScope): void {
    this.registry.putScope({
      id: s.id,
      subject_json: JSON.stringify(s.subject),
      target_json: JSON.stringify(s.target),
      granted_by_json: JSON.stringify(s.grantedBy),
      at: s.at,
    });
    this.scopes.push(s);
  }

  private ofSubject(subject: ScopeSubject): Scope[] {
    return this.scopes.filter((s) => sameSubject(s.subject, subject)).map((s) => this.view(s));
  }

  private async subjectOf(who: ScopeWho): Promise<ScopeSubject> {
    if ('user' in who) {
      const uid = await this.accounts.uid(who.user);
      if (uid === null) throw new GroveError('E_NOT_FOUND', `no user '${who.user}' on this host`);
      return { kind: 'user', name: who.user, uid };
    }
    const gid = await this.accounts.gid(who.group);
    if (gid === null) throw new GroveError('E_NOT_FOUND', `no group '${who.group}' on this host`);
    return { kind: 'group', name: who.group, gid };
  }

  /** The targets a change names, each checked; with `gone`, a workspace no longer there may be named by its tree id. */
  private targetsOf(change: Omit<ScopeChange, 'who'>, opts: { gone?: boolean } = {}): ScopeTarget[] {
    const trees = (change.workspaces ?? []).map((ref) => {
      const ws = this.registry.findWorkspace(ref);
      if (ws) return ws.treeId;
      if (opts.gone && ID_PATTERN.test(ref)) return ref;
      throw new GroveError('E_NOT_FOUND', `no workspace '${ref}'`);
    });
    for (const image of change.images ?? []) {
      if (!this.registry.getImage(image)) throw new GroveError('E_NOT_FOUND', `no image '${image}' (grove images)`);
    }
    return [
      ...[...new Set(trees)].map((tree): ScopeTarget => ({ kind: 'workspace', tree })),
      ...[...new Set(change.images ?? [])].map((image): ScopeTarget => ({ kind: 'image', image })),
      ...(change.create ? [{ kind: 'create' } as const] : []),
    ];
  }

  private view(s: StoredScope): Scope {
    let targetName: string | null = null;
    if (s.target.kind === 'workspace') {
      const tree = s.target.tree;
      const branches = this.registry.listWorkspaces().filter((w) => w.treeId === tree);
      targetName = (branches.find((w) => w.isMain) ?? branches[0])?.name ?? tree;
    }
    return { ...s, targetName };
  }
}

function readRow(row: ScopeRow): StoredScope | null {
  try {
    const parsed = z.strictObject({ id: Scope.shape.id, subject: ScopeSubject, target: ScopeTarget, grantedBy: Actor, at: z.iso.datetime() }).safeParse({
      id: row.id,
      subject: JSON.parse(row.subject_json),
      target: JSON.parse(row.target_json),
      grantedBy: JSON.parse(row.granted_by_json),
      at: row.at,
    });
    return parsed.success ? parsed.data : null;
  } catch {
    return null; // not JSON
  }
}

export function appliesTo(subject: ScopeSubject, agent: AgentAccount): boolean {
  return subject.kind === 'user' ? subject.uid === agent.uid : agent.gids.includes(subject.gid);
}

function sameSubject(a: ScopeSubject, b: ScopeSubject): boolean {
  return a.kind === b.kind && a.name === b.name;
}

function sameTarget(a: ScopeTarget, b: ScopeTarget): boolean {
  if (a.kind === 'workspace') return b.kind === 'workspace' && a.tree === b.tree;
  if (a.kind === 'image') return b.kind === 'image' && a.image === b.image;
  return a.kind === b.kind;
}

function subjectWords(s: ScopeSubject): string {
  return s.kind === 'user' ? `user ${s.name}` : `group ${s.name}`;
}

function freshId(): string {
  return `a${randomBytes(4).toString('hex')}`;
}
