// Human-readable output of the approvals queue, grants, the audit log and identities.
import type { Approval, ApprovalAction, AuditEntry, Grant } from '../../../privileged-helper/src/protocol/approvals.js';
import { describeActor, type Actor } from '../../../privileged-helper/src/protocol/identity.js';
import { describeEgressChange } from '../../../privileged-helper/src/protocol/egress-rules.js';
import { describeConnection } from '../api/words.js';

/** What a request would do, in a few words. */
export function describeAction(a: ApprovalAction): string {
  switch (a.kind) {
    case 'branch.promote':
      return `promote${a.oldMain ? ` (old main: ${a.oldMain})` : ''}`;
    case 'branch.discard':
      return 'discard';
    case 'workspace.stop':
      return 'stop';
    case 'egress.policy':
      return `outside access: ${describeEgressChange(a.change)}`;
    case 'egress.connection':
      return describeConnection(a);
    case 'branch.merge':
      return `merge ${a.sources.join(', ')} into`;
    case 'branch.rollback':
      return `roll back to version ${a.version}`;
    case 'branch.export':
      return `export to ${a.repo} as branch ${a.branch}${a.since ? ` (since version ${a.since})` : ''}:`;
  }
}

const asker = (a: Approval) => (a.requestedBy ? `${a.requestedBy.user} (uid ${a.requestedBy.uid})` : 'the branch');

export function printApprovals(list: Approval[]): void {
  if (list.length === 0) {
    console.log('No requests are waiting for a decision.');
    return;
  }
  console.log(['REQUEST', 'STATE', 'BRANCH', 'WHAT', 'ASKED BY', 'WHY', 'UNTIL'].join('\t'));
  for (const a of list) printApprovalLine(a);
}

export function printApprovalLine(a: Approval): void {
  const until = a.state === 'pending' ? a.expiresAt : (a.outcome ?? '');
  console.log([a.id, a.state, a.workspaceName, describeAction(a.action), asker(a), a.reason, until].join('\t'));
}

export function printApproval(a: Approval): void {
  console.log(`request:  ${a.id} (${a.state})`);
  console.log(`branch:   ${a.workspaceName} (${a.workspace})`);
  console.log(`what:     ${describeAction(a.action)}`);
  console.log(`effect:   ${a.effect}`);
  console.log(`asked by: ${asker(a)} at ${a.at}`);
  console.log(`reason:   ${a.reason}`);
  const p = a.preview;
  if (p.diff)
    console.log(
      `files:    +${p.diff.added} ~${p.diff.changed} -${p.diff.removed} against ${p.diff.against.name}${p.diff.paths.length ? `: ${p.diff.paths.join(', ')}` : ''}`,
    );
  if (p.processes) console.log(`ends:     ${p.processes.count} processes (${p.processes.names.join(', ')})`);
  if (p.export) console.log(`commit:   branch ${p.export.branch} of ${p.export.repo}\n${p.export.patch.replace(/^/gm, '  | ')}`);
  if (p.versions !== null) console.log(`versions: ${p.versions} kept`);
  for (const note of p.notes) console.log(`note:     ${note}`);
  if (a.state === 'pending') console.log(`expires:  ${a.expiresAt}`);
  if (a.decision)
    console.log(
      `decided:  by ${a.decision.by ? describeActor(a.decision.by) : 'the helper'}${a.decision.grant ? ` (grant ${a.decision.grant})` : ''} at ${a.decision.at}${a.decision.note ? `: ${a.decision.note}` : ''}`,
    );
  if (a.outcome) console.log(`outcome:  ${a.outcome}`);
}

export function printGrants(list: Grant[]): void {
  if (list.length === 0) {
    console.log('No standing approvals: agents ask a person every time.');
    return;
  }
  console.log(['GRANT', 'WORKSPACE', 'AGENTS MAY', 'GRANTED BY', 'AT'].join('\t'));
  for (const g of list) console.log([g.id, g.treeName, g.kind, g.grantedBy.user, g.at].join('\t'));
}

export function printAudit(entries: AuditEntry[]): void {
  if (entries.length === 0) {
    console.log('Nothing in the audit log yet.');
    return;
  }
  for (const e of entries) {
    const who = e.actor ? `${describeActor(e.actor)} pid ${e.actor.pid} ${e.actor.process}` : 'helper';
    console.log([e.at, who, e.action, e.target ?? '-', e.outcome, e.detail ?? ''].join('\t'));
  }
}

export function printIdentity(a: Actor, socket: string): void {
  console.log(`${describeActor(a)} — pid ${a.pid} (${a.process}), on ${socket}`);
  console.log(
    a.role === 'person'
      ? 'As a person you decide: approve or deny requests, promote, discard, change outside access.'
      : 'As an agent you work in the workspaces a person put in your scope (grove agents ls); promote, outside access, and discarding, stopping or rolling back branches you do not own are requests to a person.',
  );
}
