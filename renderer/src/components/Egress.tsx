// Outside access: the approvals queue (requests the egress gate holds until a
// person decides) and a branch's egress policy (deny, allow list, gate, hold
// mutating requests).
import { useEffect, useState, type FormEvent } from 'react';
import type { EgressMode, EgressRequest } from '../../../main/src/api/contract.js';
import { NONE, branchById, destination, formatRule, isLive, parseRule, pendingApprovals, timeLeft, type Decision } from '../store/app.js';
import { useApp } from './context.js';
import { Empty } from './Panels.js';

/** The current time, ticking every `ms`. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/** How many requests wait for a person (for the navigation's badge). */
export function useApprovalCount(): number {
  const now = useNow(1000);
  const approvals = useApp((s) => s.server?.approvals ?? NONE);
  return approvals.filter((r) => Date.parse(r.expiresAt) > now).length;
}

export function ApprovalsQueue() {
  const now = useNow(1000);
  const server = useApp((s) => s.server);
  const pending = pendingApprovals({ server }, now);
  if (pending.length === 0)
    return (
      <Empty
        title="No branch is waiting for approval…"
        body="When a branch whose outside access is set to “Ask me” reaches for a destination that is not on its allow list, the request waits here: approve it once, always allow that destination, or deny it. A request nobody answers is refused when its time runs out."
      />
    );
  return (
    <div className="approvals" data-testid="approvals">
      <div className="panel-bar">
        <b>
          {pending.length} {pending.length === 1 ? 'request waits' : 'requests wait'} for your decision
        </b>
        <span className="muted">· the app inside the branch is held until you answer; unanswered requests are refused when their time runs out</span>
      </div>
      <ul className="approval-list">
        {pending.map((r) => (
          <Approval key={r.id} request={r} now={now} />
        ))}
      </ul>
    </div>
  );
}

function Approval({ request: r, now }: { request: EgressRequest; now: number }) {
  const decide = useApp((s) => s.decide);
  const busy = useApp((s) => s.deciding.includes(r.id));
  const live = useApp(isLive);
  const left = Date.parse(r.expiresAt) - now;
  const disabled = busy || !live;
  const click = (d: Decision) => () => void decide(r.id, d);
  return (
    <li className="approval" data-testid="approval" data-request={r.id} data-host={r.host}>
      <div className="approval-main">
        <div className="approval-head">
          <span className="approval-branch">{r.workspaceName}</span>
          <span className="muted">wants to reach</span>
          <span className="approval-dest">{destination(r)}</span>
          {r.reason === 'mutating' && (
            <span className="tag warn" title="The destination is allowed, but this branch holds requests that change things (not GET/HEAD/OPTIONS)">
              changes something
            </span>
          )}
        </div>
        <div className="approval-what">
          {r.url ? (
            <>
              <span className="method">{r.method}</span> {r.url}
            </>
          ) : (
            <span className="muted">encrypted connection ({r.method}): the gate sees only the destination</span>
          )}
        </div>
        <div className="muted small">
          asked at {new Date(r.at).toLocaleTimeString()} · request {r.id}
        </div>
      </div>
      <div className={`approval-time ${left < 10_000 ? 'urgent' : ''}`} title="Time left before the request times out and is refused">
        <span className="approval-time-value">{timeLeft(r, now)}</span>
        <span className="muted small">left</span>
      </div>
      <div className="approval-buttons">
        <button className="primary" disabled={disabled} onClick={click('once')} title="Let this one request pass">
          Approve once
        </button>
        <button disabled={disabled} onClick={click('always')} title={`Add ${destination(r)} to ${r.workspaceName}'s allow list and let this request pass`}>
          Always allow
        </button>
        <button className="danger" disabled={disabled} onClick={click('deny')} title="Refuse it: the app inside the branch gets a 403">
          Deny
        </button>
      </div>
    </li>
  );
}

const MODES: [EgressMode, string, string][] = [
  ['deny', 'Deny everything', 'Nothing leaves the branch. This is the default.'],
  ['allow', 'Allow list only', 'Destinations on the allow list pass; everything else is refused.'],
  ['gate', 'Ask me (gate)', 'Destinations on the allow list pass; every other one waits in Approvals for your decision.'],
];

/** A branch's egress policy: mode, allow list, holding mutating requests; and what its firewall dropped. */
export function NetworkPanel({ branchId }: { branchId: string }) {
  const branch = useApp((s) => branchById(s, branchId));
  const status = useApp((s) => s.egress[branchId]);
  const loadEgress = useApp((s) => s.loadEgress);
  const setEgress = useApp((s) => s.setEgress);
  const setView = useApp((s) => s.setView);
  const waiting = useApp((s) => s.server?.approvals ?? NONE).filter((r) => r.workspace === branchId).length;
  const live = useApp(isLive);
  const [rule, setRule] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    void loadEgress(branchId);
    const t = setInterval(() => void loadEgress(branchId), 10_000);
    return () => clearInterval(t);
  }, [branchId, loadEgress]);
  if (!branch) return null;
  if (!status) return <Empty title="Reading outside access…" body={`What ${branch.name} may reach outside itself.`} />;
  const { policy, dropped } = status;
  const change = async (c: Parameters<typeof setEgress>[1]) => {
    setBusy(true);
    await setEgress(branchId, c);
    setBusy(false);
  };
  const parsed = parseRule(rule);
  const add = async (e: FormEvent) => {
    e.preventDefault();
    if (!parsed) return;
    await change({ allow: [parsed] });
    setRule('');
  };
  const disabled = busy || !live;
  return (
    <div className="network" data-testid="network">
      <section className="network-section">
        <h3>Outside access of {branch.name}</h3>
        <p className="muted">
          Enforced by Grove outside the branch: its apps reach the outside only through Grove's gate, and only as this says. Forks made from now on inherit it; changing it here changes no other branch.
        </p>
        <label className="field">
          <span>Mode</span>
          <select aria-label="outside access" value={policy.mode} disabled={disabled} onChange={(e) => void change({ mode: e.target.value as EgressMode })}>
            {MODES.map(([m, label]) => (
              <option key={m} value={m}>
                {label}
              </option>
            ))}
          </select>
          <span className="muted">{MODES.find(([m]) => m === policy.mode)?.[2]}</span>
        </label>
        <label className="check-field">
          <input type="checkbox" checked={policy.holdMutating} disabled={disabled} onChange={(e) => void change({ holdMutating: e.target.checked })} />
          Hold requests that change something (plain-HTTP methods other than GET, HEAD, OPTIONS) for approval, even to allowed destinations
        </label>
        {waiting > 0 && (
          <div className="banner warn">
            {waiting} {waiting === 1 ? 'request' : 'requests'} of {branch.name} {waiting === 1 ? 'waits' : 'wait'} for a decision.{' '}
            <button className="link" onClick={() => setView('approvals')}>
              Open Approvals
            </button>
          </div>
        )}
      </section>
      <section className="network-section">
        <h3>Allow list</h3>
        {policy.mode === 'deny' && policy.allow.length > 0 && <p className="muted">Not used while the mode is “Deny everything”.</p>}
        {policy.allow.length === 0 ? (
          <p className="muted">Empty. Add a host (example.org, *.example.org) or an IP address, with a port to allow only that port.</p>
        ) : (
          <ul className="allow-list" aria-label="allow list">
            {policy.allow.map((r) => (
              <li key={formatRule(r)}>
                <span className="mono">{formatRule(r)}</span>
                <span className="muted">{r.port === undefined ? 'any port' : ''}</span>
                <div className="spacer" />
                <button className="small" disabled={disabled} onClick={() => void change({ remove: [r] })} aria-label={`remove ${formatRule(r)}`}>
                  Remove
                </button>
              </li>
            ))}
          </ul>
        )}
        <form className="allow-add" onSubmit={(e) => void add(e)}>
          <input aria-label="destination to allow" placeholder="host or IP, optionally :port" value={rule} onChange={(e) => setRule(e.target.value)} disabled={disabled} />
          <button type="submit" disabled={disabled || !parsed}>
            Add
          </button>
          {rule && !parsed && <div className="hint">A host name (letters, digits, dots, dashes; *. for subdomains) or an IP address, then optionally :port.</div>}
        </form>
      </section>
      <section className="network-section">
        <h3>Blocked at the firewall</h3>
        <p className="muted">
          Attempts around the gate (direct connections, UDP, outside DNS) that the branch's firewall dropped since its network was made: TCP {dropped.tcp}, UDP {dropped.udp}, other {dropped.other}.
        </p>
      </section>
    </div>
  );
}
