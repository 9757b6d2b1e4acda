// What a person looks at before deciding a request: for a promote, the
// branch's screen and what it changed against the main line; for a discard or
// a stop, what would be lost; for a change of outside access, the change; for
// a held connection, the request itself; for an export, where it goes and
// the commit as a patch; for a merge, the files its dry run would write. The
// helper made the preview when the request was made; a part it could not
// make comes with a note saying why.
import type { Approval, EgressChange, HeldConnection } from '../../../main/src/api/contract.js';
import { formatRule } from '../../../privileged-helper/src/protocol/egress-rules.js';
import { MODES } from './Egress.js';
import { PatchView } from './PatchView.js';
import { WhatItDid } from './WhatItDid.js';

type Diff = NonNullable<Approval['preview']['diff']>;

export function ApprovalPreview({ a }: { a: Approval }) {
  return (
    <div className="approval-preview">
      <PreviewBody a={a} />
      {a.preview.notes.length > 0 && (
        <ul className="preview-notes muted small" aria-label="what the preview could not show">
          {a.preview.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </div>
  );
}

function PreviewBody({ a }: { a: Approval }) {
  const { action, preview } = a;
  switch (action.kind) {
    case 'egress.connection':
      return <ConnectionPreview c={action} />;
    case 'egress.policy':
      return <ChangePreview change={action.change} />;
    case 'branch.promote':
      return (
        <>
          <Thumbnail a={a} />
          <WhatItDid branch={a.workspace} name={a.workspaceName} />
          {preview.diff && <DiffSummary diff={preview.diff} label="Files it changed against the main line," />}
        </>
      );
    case 'branch.merge':
      return (
        <>
          <Thumbnail a={a} />
          {preview.diff && <DiffSummary diff={preview.diff} label="Files a dry run would write, merging" />}
        </>
      );
    case 'branch.export':
      return (
        <>
          <Thumbnail a={a} />
          <WhatItDid branch={a.workspace} name={a.workspaceName} />
          {preview.export && (
            <div className="preview-diff" data-testid="approval-export">
              <div>
                The commit, as branch <b>{preview.export.branch}</b> of <b>{preview.export.repo}</b>:
              </div>
              <PatchView patch={preview.export.patch} cut={false} />
            </div>
          )}
        </>
      );
    case 'branch.discard':
    case 'workspace.stop':
      return (
        <>
          <Thumbnail a={a} />
          <Loss a={a} />
        </>
      );
  }
}

function Thumbnail({ a }: { a: Approval }) {
  if (!a.preview.thumbnail) return null;
  return (
    <img className="preview-thumb" data-testid="approval-thumbnail" src={a.preview.thumbnail} alt={`${a.workspaceName}'s screen when the request was made`} />
  );
}

const PATH_KIND: Record<string, string> = { '+': 'added', '~': 'changed', '-': 'removed' };

function DiffSummary({ diff, label }: { diff: Diff; label: string }) {
  const total = diff.added + diff.changed + diff.removed;
  return (
    <div className="preview-diff" data-testid="approval-diff">
      <div>
        {label} <b>{diff.against.name}</b>: <span className="added">{diff.added} added</span>, <span className="changed">{diff.changed} changed</span>,{' '}
        <span className="removed">{diff.removed} removed</span>
      </div>
      {diff.paths.length > 0 && (
        <ul className="preview-paths mono" aria-label="changed files">
          {diff.paths.map((p) => (
            <li key={p} className={PATH_KIND[p[0]!] ?? ''}>
              {p}
            </li>
          ))}
        </ul>
      )}
      {total > diff.paths.length && <div className="muted small">and {total - diff.paths.length} more</div>}
    </div>
  );
}

/** What ends or is lost when a discard or a stop is approved. */
function Loss({ a }: { a: Approval }) {
  const { processes, diff, versions } = a.preview;
  const discard = a.action.kind === 'branch.discard';
  return (
    <div className="preview-loss" data-testid="approval-loss">
      <div className="preview-loss-title">{discard ? 'Lost if you approve' : 'Ends if you approve'}</div>
      <ul>
        {processes && (
          <li>
            {processes.count} {processes.count === 1 ? 'process ends' : 'processes end'}
            {processes.names.length > 0 && <span className="muted">: {processes.names.join(', ')}</span>}
          </li>
        )}
        {discard && diff && (
          <li>
            <DiffSummary diff={diff} label="Its files, changed since the fork from" />
          </li>
        )}
        {discard && versions !== null && (
          <li>
            {versions} {versions === 1 ? 'version' : 'versions'} of it {versions === 1 ? 'is' : 'are'} kept
          </li>
        )}
        {!discard && <li>Its files are kept; it can be started again</li>}
      </ul>
    </div>
  );
}

function ChangePreview({ change }: { change: EgressChange }) {
  return (
    <dl className="preview-facts" data-testid="approval-change">
      {change.mode && (
        <>
          <dt>Mode</dt>
          <dd>{MODES.find(([m]) => m === change.mode)?.[1] ?? change.mode}</dd>
        </>
      )}
      {change.allow?.length ? (
        <>
          <dt>Allow</dt>
          <dd className="mono">{change.allow.map(formatRule).join(', ')}</dd>
        </>
      ) : null}
      {change.remove?.length ? (
        <>
          <dt>Remove from the allow list</dt>
          <dd className="mono">{change.remove.map(formatRule).join(', ')}</dd>
        </>
      ) : null}
      {change.holdMutating !== undefined && (
        <>
          <dt>Hold requests that change something</dt>
          <dd>{change.holdMutating ? 'yes' : 'no'}</dd>
        </>
      )}
    </dl>
  );
}

function ConnectionPreview({ c }: { c: HeldConnection }) {
  return (
    <div className="approval-what">
      {c.url ? (
        <>
          <span className="method">{c.method}</span> {c.url}
        </>
      ) : (
        <span className="muted">encrypted connection ({c.method}): the gate sees only the destination</span>
      )}
    </div>
  );
}
