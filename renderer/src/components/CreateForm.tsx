// Creating a workspace: its name, the image it starts from (the ready ones;
// one that is not a desktop is shown, disabled, with what it lacks), and
// optionally a project folder on the host copied into it, with the copy's
// progress while it is made.
import { useState, type FormEvent } from 'react';
import { requests, type Image, type RequestParams } from '../../../main/src/api/contract.js';
import { notADesktop } from '../../../main/src/api/words.js';
import { NONE } from '../store/app.js';
import { useApp } from './context.js';
import { FolderField } from './FolderField.js';
import { firstProblem } from './ImageForms.js';

/** The image a new workspace starts from unless the person picks another: Grove's desktop when it is usable. */
function defaultImage(images: readonly Image[]): string {
  const usable = images.filter((i) => i.state === 'ready' && notADesktop(i) === null);
  return (usable.find((i) => i.origin === 'recipe') ?? usable[0])?.name ?? '';
}

export function CreateForm({ autoFocus = false, onDone }: { autoFocus?: boolean; onDone?: () => void }) {
  const act = useApp((s) => s.act);
  const selectWhenPresent = useApp((s) => s.selectWhenPresent);
  const images = useApp((s) => s.server?.images ?? NONE);
  const operations = useApp((s) => s.server?.operations ?? NONE);
  const [name, setName] = useState('');
  const [picked, setPicked] = useState<string | null>(null);
  const [hostPath, setHostPath] = useState('');
  const [branchPath, setBranchPath] = useState('');
  const [busy, setBusy] = useState(false);
  const ready = images.filter((i) => i.state === 'ready');
  const image = picked ?? defaultImage(images);
  const params: RequestParams<'workspace.create'> = {
    name,
    ...(image ? { image } : {}),
    ...(hostPath ? { project: { hostPath, ...(branchPath ? { path: branchPath } : {}) } } : {}),
  };
  const problem = firstProblem(requests['workspace.create'].params, params);
  const progress = operations.findLast((o) => o.kind === 'workspace.create' && o.target === name && o.status === 'running')?.stages.at(-1);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (problem) return;
    setBusy(true);
    const w = await act('workspace.create', params);
    setBusy(false);
    if (w) {
      selectWhenPresent(w.id);
      setName('');
      setHostPath('');
      setBranchPath('');
      onDone?.();
    }
  };
  return (
    <form className="create-form" onSubmit={(e) => void submit(e)}>
      <input
        aria-label="workspace name"
        placeholder="name, e.g. my-app"
        value={name}
        autoFocus={autoFocus}
        onChange={(e) => setName(e.target.value.toLowerCase())}
        disabled={busy}
      />
      <select aria-label="image" value={image} onChange={(e) => setPicked(e.target.value)} disabled={busy}>
        {ready.map((i) => {
          const why = notADesktop(i);
          return (
            <option key={i.name} value={i.name} disabled={why !== null} title={why ?? undefined}>
              {why ? `${i.name} (${why})` : i.name}
            </option>
          );
        })}
      </select>
      <FolderField label="project folder" placeholder="project folder to copy in (optional)" value={hostPath} onChange={setHostPath} disabled={busy} />
      {hostPath && (
        <input
          aria-label="project path in the branch"
          placeholder="where in the branch (default /root/work)"
          value={branchPath}
          onChange={(e) => setBranchPath(e.target.value)}
          disabled={busy}
          spellCheck={false}
        />
      )}
      <button className="primary" type="submit" disabled={problem !== null || busy}>
        {busy ? 'Creating… (about a minute)' : 'Create workspace'}
      </button>
      {busy && progress && (
        <div className="create-progress muted" data-testid="create-progress">
          {progress.message}
        </div>
      )}
      {(name || hostPath) && problem && <div className="hint">{problem}</div>}
    </form>
  );
}
