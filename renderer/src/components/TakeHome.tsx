// "Take home": the selected branch's work on its project as one commit on a
// new branch of a repository on this machine. The person names the
// repository and the branch (remembered per workspace), reviews the commit
// as a patch (what the helper would commit: Grove's own files and what the
// project's .gitignore matches left out), then exports it. Git writes it, as
// the person; the repository's checkout, index and current branch are never
// touched. An agent's export is a request in the Requests tab instead.
import { useState } from 'react';
import { useStore } from 'zustand';
import type { Workspace } from '../../../main/src/api/contract.js';
import { NONE, isLive } from '../store/app.js';
import { createTakeHomeStore, nothingToTakeHome, targetProblem, type TakeHomeStore } from '../store/take-home.js';
import { versionName, versionsOf } from '../store/versions.js';
import { useApi, useApp } from './context.js';
import { FolderField } from './FolderField.js';
import { Empty } from './Panels.js';
import { PatchView } from './PatchView.js';

export function TakeHomePanel({ branch }: { branch: Workspace }) {
  const api = useApi();
  const [store] = useState(() => createTakeHomeStore(api, branch, localStorage));
  const why = nothingToTakeHome(branch);
  if (why) return <Empty title={`${branch.name} has nothing to take home`} body={why} />;
  if (branch.state !== 'running') return <Empty title={`${branch.name} is ${branch.state}`} body="Start it to take its work home: its files are read live." />;
  return <TakeHomeForm branch={branch} store={store} />;
}

function TakeHomeForm({ branch, store }: { branch: Workspace; store: TakeHomeStore }) {
  const live = useApp(isLive);
  const versions = useApp((s) => s.server?.versions ?? NONE);
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const s = useStore(store);
  const project = branch.project!;
  const problem = targetProblem(s.target);
  const saved = versionsOf(branch, versions).filter((v) => v.saved);
  return (
    <div className="take-home" data-testid="take-home">
      <section className="flow-section">
        <h3>Take {branch.name} home</h3>
        <p className="muted">
          What it changed in its project ({project.path}) becomes one commit on a new branch of a repository on this machine, on commit{' '}
          <span className="mono">{project.commit!.slice(0, 12)}</span>, which the project was copied at. Git writes it as you; the repository's checkout, index
          and current branch are not touched.
        </p>
        <label className="field">
          Repository
          <FolderField label="repository" placeholder="/home/you/project" value={s.target.repo} onChange={(repo) => s.setTarget({ repo })} />
        </label>
        <label className="field">
          New branch
          <input aria-label="new branch" value={s.target.branch} spellCheck={false} maxLength={200} onChange={(e) => s.setTarget({ branch: e.target.value })} />
        </label>
        <label className="check">
          <input type="checkbox" checked={s.replace} onChange={(e) => s.setReplace(e.target.checked)} /> Replace a branch of that name if there is one
        </label>
        <label className="field">
          Changes since
          <select aria-label="changes since" value={s.since ?? ''} onChange={(e) => s.setSince(e.target.value || null)}>
            <option value="">the workspace was made</option>
            {saved.map((v) => (
              <option key={v.id} value={v.id}>
                {versionName(v, branches)}
              </option>
            ))}
          </select>
        </label>
        <textarea
          aria-label="commit message"
          className="commit-message"
          placeholder={`Commit message (default: "Work of Grove branch ${branch.name}")`}
          rows={3}
          maxLength={20_000}
          value={s.message}
          onChange={(e) => s.setMessage(e.target.value)}
        />
        <div className="flow-buttons">
          <button disabled={!live || s.busy !== null} onClick={() => void s.reviewIt()}>
            {s.busy === 'reviewing' ? 'Reading the changes…' : s.review ? 'Review again' : 'Review the commit'}
          </button>
          <button className="primary" disabled={!live || s.busy !== null || !s.review || problem !== null} onClick={() => void s.exportIt()}>
            {s.busy === 'exporting' ? 'Exporting…' : 'Export'}
          </button>
          {s.review && problem && <span className="error-text">{problem}</span>}
        </div>
        {s.error && (
          <p className="flow-error" role="alert" data-testid="take-home-error">
            {s.error}
          </p>
        )}
        {s.exported && (
          <p className="flow-done" role="status" data-testid="take-home-done">
            Commit <span className="mono">{s.exported.commit.slice(0, 12)}</span> ({s.exported.files} {s.exported.files === 1 ? 'file' : 'files'}) is on branch{' '}
            <b>{s.exported.branch}</b> of {s.target.repo}:{' '}
            <span className="mono">
              git -C {s.target.repo} log {s.exported.branch}
            </span>{' '}
            shows it.
          </p>
        )}
      </section>
      {s.review && (
        <section className="flow-section">
          <h3>
            The commit: {s.review.files} {s.review.files === 1 ? 'file' : 'files'}, on {s.review.parent.slice(0, 12)}
          </h3>
          <PatchView patch={s.review.patch} cut={s.review.cut} />
        </section>
      )}
    </div>
  );
}
