// The approvals queue ("Requests"): every decision only a person makes — an
// agent's request to promote, discard or stop a branch or to change its
// outside access, and a connection the egress gate holds — with what approving
// does, a preview, who asked and why, and the time left; then the standing
// approvals, and what was decided lately.
import { useState, type KeyboardEvent } from 'react';
import type { Actor, Approval, ApprovalState } from '../../../main/src/api/contract.js';
import { actorName, destination, isSelf, reachedAddress } from '../../../main/src/api/words.js';
import { NONE, isLive, type Decision } from '../store/app.js';
import { isPending, pendingApprovals, queuedApprovals, timeLeft } from '../store/approvals.js';
import { AgentScopes } from './AgentScopes.js';
import { ApprovalPreview } from './ApprovalPreview.js';
import { useApp } from './context.js';
import { StandingApprovals } from './Grants.js';
import { useNow } from './now.js';

/** How many requests wait for a person (the tab's badge). */
export function useApprovalCount(): number {
  const now = useNow(1000);
  const server = useApp((s) => s.server);
  return pendingApprovals({ server }, now).length;
}

export function ApprovalsView() {
  const now = useNow(1000);
  const server = useApp((s) => s.server);
  const queued = queuedApprovals({ server }, now);
  const waiting = queued.filter(isPending).length;
  return (
    <div className="approvals">
      <section className="approvals-section" data-testid="approvals" aria-labelledby="queue-title">
        <div className="panel-bar">
          <h3 id="queue-title">
            {waiting === 0 ? 'Nothing waits for your decision' : `${waiting} ${waiting === 1 ? 'request waits' : 'requests wait'} for your decision`}
          </h3>
          {waiting > 0 && <span className="muted">· whoever asked is held until you answer; a request nobody answers is refused when its time runs out</span>}
        </div>
        {queued.length === 0 ? (
          <p className="muted approvals-hint">
            Agents ask here before they promote, discard or stop a branch or change its outside access (unless a standing approval below lets them), and a
            branch whose outside access is “Ask me” waits here when it reaches for a destination that is not on its allow list.
          </p>
        ) : (
          <ul className="approval-list">
            {queued.map((a) => (
              <ApprovalCard key={a.id} a={a} now={now} />
            ))}
          </ul>
        )}
      </section>
      <StandingApprovals />
      <AgentScopes />
      <DecidedList />
    </div>
  );
}

/** Stable hooks for end-to-end tests: data-testid="approval" with data-kind, data-request and data-state, open or decided. */
function hooks(a: Approval) {
  return {
    'data-testid': 'approval',
    'data-kind': a.action.kind,
    'data-request': a.id,
    'data-state': a.state,
    'data-host': a.action.kind === 'egress.connection' ? a.action.host : undefined,
  };
}

function ApprovalCard({ a, now }: { a: Approval; now: number }) {
  const titleId = `${a.id}-title`;
  const [note, setNote] = useState('');
  const { keyed, onKeyDown } = useDecisionKeys(a, note);
  return (
    <li
      className={`approval kind-${a.action.kind.replace('.', '-')}`}
      {...hooks(a)}
      aria-labelledby={titleId}
      aria-keyshortcuts={a.state === 'pending' ? 'A D' : undefined}
      tabIndex={0}
      onKeyDown={onKeyDown}
    >
      <div className="approval-main">
        <ApprovalTitle a={a} id={titleId} />
        <Asker a={a} />
        <p className="approval-effect">
          <span className="muted">If you approve: </span>
          {a.effect}
        </p>
        <ApprovalPreview a={a} />
        <div className="muted small">
          asked at {new Date(a.at).toLocaleTimeString()} · request {a.id}
        </div>
      </div>
      {a.state === 'running' ? (
        <div className="approval-running" role="status">
          Approved · being carried out…
        </div>
      ) : (
        <div className="approval-side">
          <TimeLeft a={a} now={now} />
          <DecisionButtons a={a} note={note} setNote={setNote} />
          <p className="approval-keys muted small" role="status" data-testid="approval-keyed">
            {keyed ?? (
              <>
                With this request focused: <kbd>A</kbd> {a.action.kind === 'egress.connection' ? 'approves once' : 'approves'}, <kbd>D</kbd> denies
              </>
            )}
          </p>
        </div>
      )}
    </li>
  );
}

/**
 * A and D on a focused request approve or deny it (a held connection: once),
 * with the note typed; not while typing the note. What the key did is said
 * in the card, so a key pressed by mistake does not go unseen.
 */
function useDecisionKeys(a: Approval, note: string) {
  const decide = useApp((s) => s.decide);
  const live = useApp(isLive);
  const [keyed, setKeyed] = useState<string | null>(null);
  const onKeyDown = (e: KeyboardEvent) => {
    const key = e.key.toLowerCase();
    if ((key !== 'a' && key !== 'd') || e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement || e.target instanceof HTMLSelectElement) return;
    if (a.state !== 'pending' || !live) return;
    e.preventDefault();
    const approve = key === 'a';
    const what = approve ? (a.action.kind === 'egress.connection' ? 'approve once' : 'approve') : 'deny';
    setKeyed(`You pressed ${approve ? 'A' : 'D'}: ${what} ${titleText(a)}${note.trim() ? ' with your note' : ''}…`);
    void decide(a.id, approve ? 'approve' : 'deny', note).then((sent) => {
      if (!sent) setKeyed(`You pressed ${approve ? 'A' : 'D'}, but it could not ${what}: the error says why`);
    });
  };
  return { keyed, onKeyDown };
}

/** How each kind of agent request reads: the words around the branch's name. */
const TITLE: Record<Exclude<Approval['action']['kind'], 'egress.connection'>, [string, string]> = {
  'branch.promote': ['Promote', 'to the main line'],
  'branch.discard': ['Discard', ''],
  'workspace.stop': ['Stop', ''],
  'egress.policy': ['Change the outside access of', ''],
  'branch.merge': ['Merge into', ''],
  'branch.rollback': ['Roll back', ''],
  'branch.export': ['Export', 'into a repository'],
};

function ApprovalTitle({ a, id }: { a: Approval; id: string }) {
  const { action } = a;
  if (action.kind === 'egress.connection') {
    return (
      <div className="approval-head" id={id}>
        <span className="approval-branch">{a.workspaceName}</span>
        <span className="muted">wants to reach</span>
        <span className="approval-dest">{destination(action)}</span>
        {action.address && (
          <span className="approval-address" title="The address the branch wrote, as the network reaches it">
            {reachedAddress(action)}
          </span>
        )}
        {action.held === 'mutating' && (
          <span className="tag warn" title="The destination is allowed, but this branch holds requests that change things (not GET/HEAD/OPTIONS)">
            changes something
          </span>
        )}
      </div>
    );
  }
  const [before, after] = TITLE[action.kind];
  return (
    <div className="approval-head" id={id}>
      {before} <span className="approval-branch">{a.workspaceName}</span>
      {after && ` ${after}`}
    </div>
  );
}

function titleText(a: Approval): string {
  if (a.action.kind === 'egress.connection') return `${a.workspaceName} → ${destination(a.action)}`;
  const [before, after] = TITLE[a.action.kind];
  return [before, a.workspaceName, after].filter(Boolean).join(' ');
}

function Asker({ a }: { a: Approval }) {
  if (!a.requestedBy) {
    return (
      <p className="approval-who">
        <span className="muted">Held by Grove's gate: </span>
        {a.reason}
      </p>
    );
  }
  return (
    <p className="approval-who">
      <span className="muted">Asked by </span>
      <b>{actorName(a.requestedBy)}</b> <span className="muted">(uid {a.requestedBy.uid})</span> <q className="approval-reason">{a.reason}</q>
    </p>
  );
}

function TimeLeft({ a, now }: { a: Approval; now: number }) {
  const left = Date.parse(a.expiresAt) - now;
  return (
    <div className={`approval-time ${left < 10_000 ? 'urgent' : ''}`} title="Time left before the request times out and is refused">
      <span className="approval-time-value">{timeLeft(a, now)}</span>
      <span className="muted small">left</span>
    </div>
  );
}

function DecisionButtons({ a, note, setNote }: { a: Approval; note: string; setNote: (note: string) => void }) {
  const decide = useApp((s) => s.decide);
  const busy = useApp((s) => s.deciding.includes(a.id));
  const live = useApp(isLive);
  const disabled = busy || !live;
  const click = (d: Decision) => () => void decide(a.id, d, note);
  const { action } = a;
  return (
    <div className="approval-decision" role="group" aria-label={`Your decision on request ${a.id}`}>
      <input
        className="approval-note"
        aria-label="note (optional)"
        placeholder="Note (optional)"
        maxLength={2000}
        value={note}
        disabled={disabled}
        onChange={(e) => setNote(e.target.value)}
      />
      <div className="approval-buttons">
        {action.kind === 'egress.connection' ? (
          <>
            <button className="primary" disabled={disabled} onClick={click('approve')} title="Let this one request pass">
              Approve once
            </button>
            <button
              disabled={disabled}
              onClick={click('always')}
              title={`Add ${destination(action)} to ${a.workspaceName}'s allow list and let this request pass`}
            >
              Always allow
            </button>
          </>
        ) : (
          <button className="primary" disabled={disabled} onClick={click('approve')} title={a.effect}>
            Approve
          </button>
        )}
        <button
          className="danger"
          disabled={disabled}
          onClick={click('deny')}
          title={action.kind === 'egress.connection' ? 'Refuse it: the app inside the branch gets a 403' : 'Refuse it: the agent is told you said no'}
        >
          Deny
        </button>
      </div>
    </div>
  );
}

const STATE_WORD: Record<ApprovalState, string> = {
  pending: 'waiting',
  running: 'being carried out',
  done: 'done',
  failed: 'failed',
  denied: 'denied',
  expired: 'expired',
  withdrawn: 'withdrawn',
  abandoned: 'abandoned',
};

/** States whose outcome says what happened; for the others (denied, expired, withdrawn) the verdict says it all. */
const TELLS_OUTCOME: ReadonlySet<ApprovalState> = new Set(['done', 'failed', 'abandoned']);

function DecidedList() {
  const decided = useApp((s) => s.server?.decided ?? NONE);
  const self = useApp((s) => s.server?.connection.identity ?? null);
  if (decided.length === 0) return null;
  return (
    <section className="approvals-section" data-testid="approvals-decided" aria-labelledby="decided-title">
      <h3 id="decided-title">Recently decided</h3>
      <ul className="decided-list">
        {decided.map((a) => (
          <li key={a.id} className="decided" {...hooks(a)}>
            <span className={`tag outcome-${a.state}`}>{STATE_WORD[a.state]}</span>
            <span className="decided-title">{titleText(a)}</span>
            <span className="muted">
              {a.requestedBy ? `asked by ${actorName(a.requestedBy)} · ` : ''}
              {verdict(a, self)}
            </span>
            {a.outcome && TELLS_OUTCOME.has(a.state) && <span className="decided-outcome">{a.outcome}</span>}
            <EndedAt a={a} />
          </li>
        ))}
      </ul>
    </section>
  );
}

/** When the request ended (never its deadline, which may lie ahead of when it ended). */
function EndedAt({ a }: { a: Approval }) {
  const at = a.closedAt ?? a.decision?.at ?? (a.state === 'expired' ? a.expiresAt : null);
  if (!at) return null;
  return (
    <time className="muted small" dateTime={at} data-testid="decided-at">
      {new Date(at).toLocaleTimeString()}
    </time>
  );
}

/** Who decided and how: 'denied by you · “not now”', 'approved by person bob', 'nobody decided in time'. */
export function verdict(a: Approval, self: Actor | null): string {
  const d = a.decision;
  const by = d?.grant ? 'a standing approval' : d?.by ? (isSelf(d.by, self) ? 'you' : actorName(d.by)) : 'Grove';
  const note = d?.note ? ` · “${d.note}”` : '';
  switch (a.state) {
    case 'denied':
      return `denied by ${by}${note}`;
    case 'running':
    case 'done':
    case 'failed':
      return `approved by ${by}${d?.always ? ', always' : ''}${note}`;
    case 'expired':
      return 'nobody decided in time';
    case 'withdrawn':
      return 'withdrawn before anyone decided';
    case 'abandoned':
      return 'gone before anyone decided';
    case 'pending':
      return 'waiting';
  }
}
