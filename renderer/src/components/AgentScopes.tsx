// Agents' scopes: which workspaces each agent user (or group) may see and act
// in, and who may create workspaces of its own — what `grove agents ls`,
// `allow` and `revoke` do, through the same helper calls (scope.list, .allow,
// .revoke). Without a scope an agent sees no workspace. Giving asks first;
// taking back is at once, and holds on the agent's open connections too.
import { useCallback, useEffect, useMemo, useState, type FormEvent } from 'react';
import type { RequestParams, Scope } from '../../../main/src/api/contract.js';
import { actorName, scopeGivesWords, scopeWhoWords } from '../../../main/src/api/words.js';
import { NONE, isLive } from '../store/app.js';
import { workspacesOf } from '../store/approvals.js';
import { useApp } from './context.js';

export function AgentScopes() {
  const act = useApp((s) => s.act);
  const ask = useApp((s) => s.ask);
  const live = useApp(isLive);
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const trees = useMemo(() => workspacesOf(branches), [branches]);
  const [scopes, setScopes] = useState<Scope[] | null>(null);
  const [user, setUser] = useState('');
  const [workspace, setWorkspace] = useState('');
  const [create, setCreate] = useState(false);

  const reload = useCallback(async () => {
    const list = await act('scope.list', {});
    if (list) setScopes(list);
  }, [act]);
  useEffect(() => {
    if (live) void reload();
  }, [live, reload]);

  const name = user.trim();
  const tree = trees.find((t) => t.tree === workspace);
  const gives = [tree && `see and act in ${tree.name}`, create && 'create workspaces of its own'].filter(Boolean).join(' and ');
  const allow = (e: FormEvent) => {
    e.preventDefault();
    ask({
      title: `Let ${name} ${gives}?`,
      body: `Agents running as user ${name} may then ${gives}: list, desktop, exec, fork, checkpoint, roll back and copy in, as far as their requests allow.`,
      confirmLabel: 'Let them',
      danger: true,
      run: () =>
        void act('scope.allow', { who: { user: name }, ...(tree ? { workspaces: [tree.tree] } : {}), ...(create ? { create: true } : {}) }).then((done) => {
          if (!done) return;
          setUser('');
          setWorkspace('');
          setCreate(false);
          void reload();
        }),
    });
  };
  const revoke = (s: Scope) => void act('scope.revoke', revokeParams(s)).then((gone) => gone && reload());

  return (
    <section className="approvals-section" data-testid="agent-scopes" aria-labelledby="scopes-title">
      <h3 id="scopes-title">Agents' scopes</h3>
      <p className="muted">
        An agent sees and acts only in the workspaces given to its user or group here (or with grove agents allow); everything else does not exist for it.
      </p>
      {scopes !== null && scopes.length === 0 && <p className="muted">No agent has a scope: agents see no workspace.</p>}
      {scopes !== null && scopes.length > 0 && (
        <table className="grants-table">
          <thead>
            <tr>
              <th scope="col">For</th>
              <th scope="col">Gives</th>
              <th scope="col">Given by</th>
              <th scope="col" aria-label="take back" />
            </tr>
          </thead>
          <tbody>
            {scopes.map((s) => (
              <tr key={s.id} data-testid="agent-scope" data-scope={s.id}>
                <td>{scopeWhoWords(s.subject)}</td>
                <td>{scopeGivesWords(s)}</td>
                <td title={new Date(s.at).toLocaleString()}>{actorName(s.grantedBy)}</td>
                <td>
                  <button disabled={!live} onClick={() => revoke(s)} aria-label={`Take back ${scopeGivesWords(s)} from ${scopeWhoWords(s.subject)}`}>
                    Take back
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <form className="scope-form" onSubmit={allow} aria-label="give an agent a scope">
        <label>
          Agent user <input value={user} onChange={(e) => setUser(e.target.value)} placeholder="e.g. agent1" maxLength={32} spellCheck={false} />
        </label>
        <label>
          Workspace{' '}
          <select value={workspace} onChange={(e) => setWorkspace(e.target.value)}>
            <option value="">(none)</option>
            {trees.map((t) => (
              <option key={t.tree} value={t.tree}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        <label className="check">
          <input type="checkbox" checked={create} onChange={(e) => setCreate(e.target.checked)} /> may create workspaces
        </label>
        <button type="submit" className="primary" disabled={!live || name === '' || (!tree && !create)}>
          Allow
        </button>
      </form>
    </section>
  );
}

/** What takes back exactly this scope. */
function revokeParams(s: Scope): RequestParams<'scope.revoke'> {
  const who = s.subject.kind === 'user' ? { user: s.subject.name } : { group: s.subject.name };
  if (s.target.kind === 'workspace') return { who, workspaces: [s.target.tree] };
  if (s.target.kind === 'image') return { who, images: [s.target.image] };
  return { who, create: true };
}
