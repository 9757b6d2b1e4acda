// A branch's outside access: its egress policy (deny, allow list, gate, hold
// mutating requests) and what its firewall dropped. What the gate holds waits
// in the approvals queue (Approvals.tsx).
import { useEffect, useState, type FormEvent } from 'react';
import type { EgressMode } from '../../../main/src/api/contract.js';
import { formatRule } from '../../../privileged-helper/src/protocol/egress-rules.js';
import { branchById, isLive, parseRule } from '../store/app.js';
import { pendingApprovals } from '../store/approvals.js';
import { useApp } from './context.js';
import { Empty } from './Panels.js';
import { useNow } from './now.js';

/** Each mode: its label and what it does. */
export const MODES: [EgressMode, string, string][] = [
  ['deny', 'Deny everything', 'Nothing leaves the branch. This is the default.'],
  ['allow', 'Allow list only', 'Destinations on the allow list pass; everything else is refused.'],
  ['gate', 'Ask me (gate)', 'Destinations on the allow list pass; every other one waits in Requests for your decision.'],
];

/** A branch's egress policy: mode, allow list, holding mutating requests; and what its firewall dropped. */
export function NetworkPanel({ branchId }: { branchId: string }) {
  const branch = useApp((s) => branchById(s, branchId));
  const status = useApp((s) => s.egress[branchId]);
  const loadEgress = useApp((s) => s.loadEgress);
  const setEgress = useApp((s) => s.setEgress);
  const setView = useApp((s) => s.setView);
  const server = useApp((s) => s.server);
  const waiting = pendingApprovals({ server }, useNow(1000)).filter((r) => r.workspace === branchId).length;
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
          Enforced by Grove outside the branch: its apps reach the outside only through Grove's gate, and only as this says. Forks made from now on inherit it;
          changing it here changes no other branch.
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
              Open Requests
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
          <input
            aria-label="destination to allow"
            placeholder="host or IP, optionally :port"
            value={rule}
            onChange={(e) => setRule(e.target.value)}
            disabled={disabled}
          />
          <button type="submit" disabled={disabled || !parsed}>
            Add
          </button>
          {rule && !parsed && (
            <div className="hint">A host name (letters, digits, dots, dashes; *. for subdomains) or an IP address, then optionally :port.</div>
          )}
        </form>
      </section>
      <section className="network-section">
        <h3>Blocked at the firewall</h3>
        <p className="muted">
          Attempts around the gate (direct connections, UDP, outside DNS) that the branch's firewall dropped since its network was made: TCP {dropped.tcp}, UDP{' '}
          {dropped.udp}, other {dropped.other}.
        </p>
      </section>
    </div>
  );
}
