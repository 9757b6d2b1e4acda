// The tree's small rows: a checkpoint on its branch's line (its name, or
// when it was taken; a click offers rolling the branch back to it, naming it
// and deleting it) and a merge into a branch (what was merged, and when).
import { useState, type CSSProperties, type FormEvent } from 'react';
import type { Version, Workspace } from '../../../main/src/api/contract.js';
import type { LaidRow } from '../tree/layout.js';
import { NONE, isLive } from '../store/app.js';
import { versionName } from '../store/versions.js';
import { useApp } from './context.js';

interface DotRowProps {
  row: LaidRow;
  top: number;
  height: number;
  /** Where the text starts: right of every lane and track. */
  indent: number;
  open: boolean;
  onToggle: () => void;
  /** Closes its actions (once one is chosen). */
  onClose: () => void;
}

export function DotRow({ row, top, height, indent, open, onToggle, onClose }: DotRowProps) {
  const branch = useApp((s) => s.server?.branches.find((b) => b.id === row.branch));
  const version = useApp((s) => (row.kind === 'version' ? s.server?.versions.find((v) => v.id === row.ref) : undefined));
  if (!branch) return null;
  const style = { top, height, paddingLeft: indent, zIndex: open ? 3 : undefined };
  if (row.kind === 'merge') return <MergeRow branch={branch} index={row.ref as number} style={style} />;
  if (!version) return null;
  return <VersionRow branch={branch} version={version} style={style} open={open} onToggle={onToggle} onClose={onClose} />;
}

function MergeRow({ branch, index, style }: { branch: Workspace; index: number; style: CSSProperties }) {
  const merge = branch.merges[index];
  if (!merge) return null;
  const names = merge.sources.map((s) => s.name).join(', ');
  const at = new Date(merge.at);
  return (
    <div className="tree-dot merge" style={style} data-testid={`merge-${branch.name}`} title={`${names} merged into ${branch.name}, ${at.toLocaleString()}`}>
      <div className="dot-line">
        <span className="dot-name">merged {names}</span>
        <span className="muted">{at.toLocaleTimeString()}</span>
      </div>
    </div>
  );
}

function VersionRow({
  branch,
  version,
  style,
  open,
  onToggle,
  onClose,
}: {
  branch: Workspace;
  version: Version;
  style: CSSProperties;
  open: boolean;
  onToggle: () => void;
  onClose: () => void;
}) {
  const live = useApp(isLive);
  const act = useApp((s) => s.act);
  const ask = useApp((s) => s.ask);
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const [naming, setNaming] = useState<string | null>(null);
  const name = versionName(version, branches);
  const at = new Date(version.createdAt).toLocaleTimeString();
  const rollBack = () => {
    onClose();
    ask({
      title: `Roll ${branch.name} back?`,
      body: `Its processes and files return to ${name}. Whatever it did since is lost unless you checkpoint it first.`,
      confirmLabel: 'Roll back',
      danger: true,
      run: () => void act('branch.rollback', { workspace: branch.id, version: version.id }),
    });
  };
  const remove = () => {
    onClose();
    ask({
      title: `Delete ${name}?`,
      body: 'The version is removed for good; branches made from it keep their files.',
      confirmLabel: 'Delete version',
      danger: true,
      run: () => void act('version.delete', { version: version.id }),
    });
  };
  const saveName = async (e: FormEvent) => {
    e.preventDefault();
    if (naming !== null && (await act('version.label', { version: version.id, label: naming }))) {
      setNaming(null);
      onClose();
    }
  };
  return (
    <div
      className={`tree-dot ${open ? 'open' : ''}`}
      style={style}
      data-testid={`version-dot-${version.id}`}
      title={`${name}${version.saved ? '' : ' (saving…)'}`}
      onClick={onToggle}
    >
      <div className="dot-line">
        <span className={`dot-name ${version.label ? '' : 'muted'}`}>{version.label ?? 'checkpoint'}</span>
        <span className="muted">
          {at}
          {version.saved ? '' : ' · saving…'}
        </span>
      </div>
      {open && (
        // Its own keys: the tree's arrows and Enter are not for the name being typed.
        <div className="dot-actions" style={{ left: style.paddingLeft }} onClick={(e) => e.stopPropagation()} onKeyDown={(e) => e.stopPropagation()}>
          {naming === null ? (
            <>
              <button disabled={!live || !version.saved} onClick={rollBack} title={`Return ${branch.name} to this checkpoint`}>
                Roll back here
              </button>
              <button disabled={!live} onClick={() => setNaming(version.label ?? '')}>
                Name…
              </button>
              <button className="danger" disabled={!live || !version.saved} onClick={remove}>
                Delete
              </button>
            </>
          ) : (
            <form onSubmit={(e) => void saveName(e)}>
              <input
                aria-label="new name of the checkpoint"
                autoFocus
                maxLength={200}
                value={naming}
                placeholder="a name"
                onChange={(e) => setNaming(e.target.value)}
                onKeyDown={(e) => e.key === 'Escape' && setNaming(null)}
              />
              <button type="submit" disabled={!live}>
                Save
              </button>
            </form>
          )}
        </div>
      )}
    </div>
  );
}
