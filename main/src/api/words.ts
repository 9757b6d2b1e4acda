// Words for what the helper reports, shared by the controller (its activity
// log) and the renderer (the queue, the tree, the images): one phrasing of a
// destination, a request, a person, an image or a project, wherever it is shown. Free of Node imports: the
// renderer bundles it. (Allow-list rules and policy changes have theirs in
// the helper's protocol, egress-rules.ts, shared with the CLI.)
import { formatRule } from '../../../privileged-helper/src/protocol/egress-rules.js';
import type { Actor, AgentRequestKind, HeldConnection, Image, Maker, MergeConflict, Scope, ScopeWho, Workspace } from './contract.js';

/** host:port of a connection, the way a person reads a destination. */
export function destination(c: Pick<HeldConnection, 'host' | 'port'>): string {
  return formatRule({ host: c.host, port: c.port });
}

/** What an address literal reaches: '192.0.2.7, a documentation address', the form the branch wrote aside; null for a host name. */
export function reachedAddress(c: Pick<HeldConnection, 'address'>): string | null {
  return c.address ? `${c.address.reached}, ${c.address.what}` : null;
}

/** 'GET http://outside.test:8080/x', or 'CONNECT example.org:443' for a tunnel; an address literal says what it reaches. */
export function describeConnection(c: Pick<HeldConnection, 'method' | 'host' | 'port' | 'url' | 'address'>): string {
  const request = c.url ? `${c.method} ${c.url}` : `${c.method} ${destination(c)}`;
  const reached = reachedAddress(c);
  return reached ? `${request} (${reached})` : request;
}

/** What an agent asks to do, as a verb phrase: 'promote', 'change outside access'. */
export const REQUEST_VERB: Record<AgentRequestKind, string> = {
  'branch.promote': 'promote',
  'branch.discard': 'discard',
  'workspace.stop': 'stop',
  'egress.policy': 'change outside access',
  'branch.merge': 'merge into',
  'branch.rollback': 'roll back',
  'branch.export': 'export',
};

/** 'agent alice', 'person root'. */
export function actorName(who: Pick<Maker, 'role' | 'user'>): string {
  return `${who.role} ${who.user}`;
}

/**
 * Whether the helper reported this app's own connection: "you". Its identity
 * comes from hello (what the kernel told the helper about this process: its
 * pid and uid). Another window of the app, or the CLI in a terminal, is
 * another process: another client, even under the same user.
 */
export function isSelf(by: Pick<Actor, 'pid' | 'uid'>, self: Pick<Actor, 'pid' | 'uid'> | null): boolean {
  return self !== null && by.pid === self.pid && by.uid === self.uid;
}

/** Why a workspace cannot start from an image, in words ('not a desktop: it lacks Xvnc, openbox'); null when it can. */
export function notADesktop(img: Pick<Image, 'missing'>): string | null {
  return img.missing.length === 0 ? null : `not a desktop: it lacks ${img.missing.join(', ')}`;
}

/** Where a branch's project came from: '/var/tmp/app (git 1a2b3c4d5e6f on main)'. */
export function projectOrigin(p: NonNullable<Workspace['project']>): string {
  const git = p.commit ? ` (git ${p.commit.slice(0, 12)}${p.gitBranch ? ` on ${p.gitBranch}` : ''})` : '';
  return `${p.hostPath}${git}`;
}

/** A size as a person reads it: '64 MiB', '10 GiB', '1.5 GiB', '812 KiB'. */
export function sizeText(bytes: number): string {
  const [unit, scale] = bytes >= 2 ** 30 ? ['GiB', 2 ** 30] : bytes >= 2 ** 20 ? ['MiB', 2 ** 20] : ['KiB', 2 ** 10];
  const n = bytes / scale;
  return `${n >= 10 || Number.isInteger(n) ? Math.round(n) : n.toFixed(1)} ${unit}`;
}

/** What a branch's disk limit counts: '120 MiB of 10 GiB', and that it is full (its writes fail); its limit alone where the pool has no quotas. */
export function diskText(w: Pick<Workspace, 'disk' | 'limits'>): string {
  const limit = sizeText(w.limits.diskBytes);
  if (!w.disk) return `limit ${limit} (not enforced: the pool has no quotas)`;
  return `${sizeText(w.disk.usedBytes)} of ${limit}${w.disk.full ? ' — full: writes in it fail' : ''}`;
}

/** One side of a merge's conflicting file: 'deleted', 'a link to x', '120 bytes, sha256 1a2b3c4d5e6f, executable'. */
export function mergeSideText(side: MergeConflict['target']): string {
  switch (side.kind) {
    case 'none':
      return 'deleted';
    case 'link':
      return `a link to ${side.detail}`;
    case 'other':
      return side.detail ?? 'neither a file nor a link';
    case 'file':
      return `${side.bytes} bytes, sha256 ${side.sha256?.slice(0, 12)}${side.detail ? `, ${side.detail}` : ''}`;
  }
}

/** Whom a scope is for: 'user alice', 'group agents'. */
export function scopeWhoWords(who: ScopeWho | Scope['subject']): string {
  if ('kind' in who) return `${who.kind} ${who.name}`;
  return 'user' in who ? `user ${who.user}` : `group ${who.group}`;
}

/** What a scope gives: 'workspace one', 'the workspaces of image desktop', 'creating workspaces'. */
export function scopeGivesWords(s: Scope): string {
  if (s.target.kind === 'workspace') return `workspace ${s.targetName}`;
  if (s.target.kind === 'image') return `the workspaces of image ${s.target.image}`;
  return 'creating workspaces';
}
