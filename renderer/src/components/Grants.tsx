// Standing approvals: per workspace, the kinds of request agents may do without
// asking a person. Each switch goes to the helper (grant.set / grant.revoke),
// which records who changed it in its audit log; the state the helper reports
// back is what the switch shows.
import { useMemo } from 'react';
import type { AgentRequestKind, Grant } from '../../../main/src/api/contract.js';
import { actorName } from '../../../main/src/api/words.js';
import { NONE, isLive } from '../store/app.js';
import { grantFor, workspacesOf, type WorkspaceTree } from '../store/approvals.js';
import { useApp } from './context.js';

/** Each kind: its column, and what agents may then do without asking. */
const KINDS: [AgentRequestKind, string, string][] = [
  ['branch.promote', 'Promote', 'make a branch the main line'],
  ['branch.discard', 'Discard', 'discard branches they did not fork themselves'],
  ['workspace.stop', 'Stop', 'stop branches they did not fork themselves'],
  ['egress.policy', 'Outside access', "change a branch's outside access"],
];

export function StandingApprovals() {
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const grants = useApp((s) => s.server?.grants ?? NONE);
  const trees = useMemo(() => workspacesOf(branches), [branches]);
  if (trees.length === 0) return null;
  return (
    <section className="approvals-section" data-testid="grants" aria-labelledby="grants-title">
      <h3 id="grants-title">Standing approvals</h3>
      <p className="muted">
        Agents ask you before they do these. Tick one to let agents do it in that workspace — every branch of it, now and later — without asking; untick it to
        make them ask again.
      </p>
      <table className="grants-table">
        <thead>
          <tr>
            <th scope="col">Workspace</th>
            {KINDS.map(([kind, label, what]) => (
              <th key={kind} scope="col" title={`Agents may ${what} without asking`}>
                {label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {trees.map((t) => (
            <GrantRow key={t.tree} tree={t} grants={grants} />
          ))}
        </tbody>
      </table>
    </section>
  );
}

function GrantRow({ tree, grants }: { tree: WorkspaceTree; grants: readonly Grant[] }) {
  const setGrant = useApp((s) => s.setGrant);
  const ask = useApp((s) => s.ask);
  const granting = useApp((s) => s.granting);
  const live = useApp(isLive);
  return (
    <tr data-testid={`grants-${tree.name}`}>
      <th scope="row">{tree.name}</th>
      {KINDS.map(([kind, , what]) => {
        const grant = grantFor(grants, tree.tree, kind);
        const change = granting.find((c) => c.tree === tree.tree && c.kind === kind);
        const on = change ? change.on : grant !== undefined;
        return (
          <td key={kind}>
            <label
              className="check"
              title={grant ? `Granted by ${actorName(grant.grantedBy)} at ${new Date(grant.at).toLocaleString()}` : `Agents ask you before they ${what}`}
            >
              <input
                type="checkbox"
                checked={on}
                disabled={!live || change !== undefined}
                aria-label={`${tree.name}: agents may ${what} without asking`}
                data-kind={kind}
                onChange={(e) =>
                  // Giving agents a power asks first; taking it back is at once.
                  e.target.checked
                    ? ask({
                        title: `Let agents ${what} in ${tree.name} without asking?`,
                        body: `From now on agents may ${what} in every branch of ${tree.name}, now and later, without asking you. Untick it to make them ask again.`,
                        confirmLabel: 'Let them',
                        danger: true,
                        run: () => void setGrant(tree.tree, kind, true),
                      })
                    : void setGrant(tree.tree, kind, false)
                }
              />
              without asking
            </label>
          </td>
        );
      })}
    </tr>
  );
}
