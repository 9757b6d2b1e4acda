// "Merge into…": what other branches of the workspace changed, brought into
// the selected branch file by file (git's three-way merge over the fork point
// they share). The person picks the sources, reads the dry run — files clean,
// merged and conflicting — opens each conflicting file side by side (fork
// point, target, source), picks a side per file, and merges: the target is
// checkpointed first, and its processes keep running. A person merges at
// once; an agent merging into the main line asks in the Requests tab.
import { useState } from 'react';
import { useStore } from 'zustand';
import type { MergeConflict, MergeResult, Workspace } from '../../../main/src/api/contract.js';
import { mergeSideText } from '../../../main/src/api/words.js';
import { NONE, isLive } from '../store/app.js';
import { contextOf, parseMarkedText, type Segment } from '../store/conflict-text.js';
import { KEEP_TARGET, changesOf, conflictsByPath, createMergeStore, sourceCandidates, unsettled, type MergeStore } from '../store/merge.js';
import { useApi, useApp } from './context.js';
import { Empty } from './Panels.js';

export function MergePanel({ target }: { target: Workspace }) {
  const api = useApi();
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const selection = useApp((s) => s.selection);
  // Branches selected in the tree beside the target start as its sources.
  const [store] = useState(() =>
    createMergeStore(
      api,
      target,
      sourceCandidates(branches, target)
        .filter((b) => selection.includes(b.id))
        .map((b) => b.id),
    ),
  );
  if (sourceCandidates(branches, target).length === 0)
    return <Empty title={`Nothing to merge into ${target.name}`} body="Its workspace has no other branch: fork it, and merge what the forks did back here." />;
  if (target.state !== 'running') return <Empty title={`${target.name} is ${target.state}`} body="A merge writes into a running branch: start it first." />;
  return <MergeFlowView target={target} store={store} />;
}

function MergeFlowView({ target, store }: { target: Workspace; store: MergeStore }) {
  const live = useApp(isLive);
  const branches = useApp((s) => s.server?.branches ?? NONE);
  const s = useStore(store);
  const candidates = sourceCandidates(branches, target);
  const open = unsettled(s);
  return (
    <div className="merge" data-testid="merge">
      <section className="flow-section">
        <h3>Merge into {target.name}</h3>
        <p className="muted">
          What each branch picked here changed since it and {target.name} forked comes in, file by file, in the order picked. {target.name} keeps running; its
          files change under it as after a git pull.
        </p>
        <fieldset className="merge-sources">
          <legend>Branches whose changes come in</legend>
          {candidates.map((b) => (
            <label key={b.id} className="check">
              <input type="checkbox" checked={s.sources.includes(b.id)} onChange={() => s.toggleSource(b.id)} /> {b.name}
              <span className="muted small">{[relation(b, target), b.state].filter(Boolean).join(' · ')}</span>
            </label>
          ))}
        </fieldset>
        <div className="flow-buttons">
          <button disabled={!live || s.busy !== null || s.sources.length === 0} onClick={() => void s.check()}>
            {s.busy === 'checking' ? 'Checking…' : s.plan ? 'Check again' : 'Check the merge (dry run)'}
          </button>
          {s.plan && (
            <button className="primary" disabled={!live || s.busy !== null || open.length > 0 || !hasWork(s.plan)} onClick={() => void s.apply()}>
              {s.busy === 'merging' ? 'Merging…' : `Merge into ${target.name}`}
            </button>
          )}
          {s.plan && open.length > 0 && (
            <span className="muted">
              {open.length} conflicting {open.length === 1 ? 'file waits' : 'files wait'} for your pick
            </span>
          )}
        </div>
        {s.error && (
          <p className="flow-error" role="alert" data-testid="merge-error">
            {s.error}
          </p>
        )}
        {s.merged && <Merged result={s.merged} target={target} />}
      </section>
      {s.plan && <Plan plan={s.plan} target={target} store={store} />}
    </div>
  );
}

/** How a source stands to the target, in the tree's words; empty when it is further away. */
function relation(b: Workspace, target: Workspace): string {
  if (b.parent === target.id) return 'forked from it';
  if (b.main) return 'the main line';
  return b.parent !== null && b.parent === target.parent ? 'its sibling' : '';
}

function hasWork(plan: MergeResult): boolean {
  return plan.changes.length > 0 || plan.conflicts.length > 0;
}

function Merged({ result, target }: { result: MergeResult; target: Workspace }) {
  return (
    <p className="flow-done" role="status" data-testid="merge-done">
      {result.merged
        ? `Merged ${result.changes.length} ${result.changes.length === 1 ? 'file' : 'files'} into ${target.name}. Before the merge it is version ${result.version}: roll back to it to undo the merge.`
        : `Nothing to merge: the sources changed nothing under ${result.scope} that ${target.name} lacks.`}
    </p>
  );
}

function Plan({ plan, target, store }: { plan: MergeResult; target: Workspace; store: MergeStore }) {
  const { clean, merged } = changesOf(plan);
  const conflicts = conflictsByPath(plan);
  return (
    <section className="flow-section merge-plan" data-testid="merge-plan">
      <h3>
        The dry run, under {plan.scope}: {clean.length} clean, {merged.length} merged, {conflicts.size} conflicting
      </h3>
      {!hasWork(plan) && <p className="muted">The sources changed nothing {target.name} lacks.</p>}
      <FileList title="Clean: only a source changed them, its version comes in" testId="merge-clean" changes={clean} />
      <FileList title="Merged: both sides changed them, git merged the lines" testId="merge-merged" changes={merged} />
      {conflicts.size > 0 && (
        <div data-testid="merge-conflicts">
          <h4>Conflicting: pick the side whose whole file is kept</h4>
          <ul className="merge-conflicts">
            {[...conflicts].map(([path, list]) => (
              <ConflictRow key={path} path={path} conflicts={list} target={target} store={store} />
            ))}
          </ul>
        </div>
      )}
    </section>
  );
}

function FileList({ title, testId, changes }: { title: string; testId: string; changes: MergeResult['changes'] }) {
  if (changes.length === 0) return null;
  return (
    <div data-testid={testId}>
      <h4>{title}</h4>
      <ul className="merge-files mono">
        {changes.map((c) => (
          <li key={c.path} className={c.action === 'delete' ? 'removed' : ''}>
            {c.action === 'delete' ? 'D' : 'M'} {c.path} <span className="muted">from {c.source}</span>
          </li>
        ))}
      </ul>
    </div>
  );
}

const KIND_WORDS: Record<MergeConflict['kind'], string> = {
  text: 'both changed the same lines',
  'edit-delete': 'one side deleted it, the other changed it',
  binary: 'both changed it, and it is not text',
  kind: 'both changed it into different kinds of thing',
  special: 'the source has something a merge never writes',
};

function ConflictRow({ path, conflicts, target, store }: { path: string; conflicts: MergeConflict[]; target: Workspace; store: MergeStore }) {
  const picked = useStore(store, (s) => s.picks[path]);
  const pick = useStore(store, (s) => s.pick);
  const sources = useStore(store, (s) => s.plan?.sources ?? NONE);
  const [opened, setOpened] = useState(false);
  const idOf = (name: string) => sources.find((x) => x.name === name)?.id ?? name;
  return (
    <li className="merge-conflict" data-testid={`conflict-${path}`}>
      <div className="merge-conflict-head">
        <button className="link mono" aria-expanded={opened} onClick={() => setOpened(!opened)}>
          {opened ? '▾' : '▸'} {path}
        </button>
        <span className="muted small">{conflicts.map((c) => `${c.source}: ${KIND_WORDS[c.kind]}`).join('; ')}</span>
      </div>
      <fieldset className="merge-pick">
        <legend className="muted small">Keep</legend>
        <label className="check">
          <input type="radio" name={`pick-${path}`} checked={picked === KEEP_TARGET} onChange={() => pick(path, KEEP_TARGET)} /> {target.name}'s file
        </label>
        {conflicts.map((c) => (
          <label key={c.source} className="check">
            <input
              type="radio"
              name={`pick-${path}`}
              checked={picked === idOf(c.source)}
              disabled={c.kind === 'special'}
              onChange={() => pick(path, idOf(c.source))}
            />{' '}
            {c.source}'s file
          </label>
        ))}
      </fieldset>
      {opened && conflicts.map((c) => <SideBySide key={c.source} conflict={c} targetName={target.name} />)}
    </li>
  );
}

/** A conflict's three versions in columns: the fork point's, the target's and the source's. */
function SideBySide({ conflict, targetName }: { conflict: MergeConflict; targetName: string }) {
  const heads = (
    <div className="sides-row sides-head">
      <div>fork point</div>
      <div>{targetName}</div>
      <div>{conflict.source}</div>
    </div>
  );
  if (conflict.kind !== 'text' || conflict.hunks === null)
    return (
      <div className="sides" data-testid="sides">
        {heads}
        <div className="sides-row">
          <div className="muted">{conflict.kind === 'text' ? 'too much conflicting text to show here' : 'as it was when they forked'}</div>
          <div>{mergeSideText(conflict.target)}</div>
          <div>{mergeSideText(conflict.sourceSide)}</div>
        </div>
      </div>
    );
  const { segments, cut } = parseMarkedText(conflict.hunks, { target: targetName, source: conflict.source });
  return (
    <div className="sides mono" data-testid="sides">
      {heads}
      {segments.map((seg, i) => (
        <SegmentRows key={i} seg={seg} conflictBefore={segments[i - 1]?.kind === 'conflict'} conflictAfter={segments[i + 1]?.kind === 'conflict'} />
      ))}
      {cut && <div className="muted small">The file is cut short here: it is longer than the helper shows.</div>}
    </div>
  );
}

function SegmentRows({ seg, conflictBefore, conflictAfter }: { seg: Segment; conflictBefore: boolean; conflictAfter: boolean }) {
  if (seg.kind === 'same')
    return (
      <div className="sides-same">
        {contextOf(seg.lines, conflictBefore, conflictAfter).map((line, i) =>
          typeof line === 'string' ? (
            <div key={i}>{line || ' '}</div>
          ) : (
            <div key={i} className="muted folded">
              ⋯ {line.folded} {line.folded === 1 ? 'line' : 'lines'} the same on every side
            </div>
          ),
        )}
      </div>
    );
  return (
    <div className="sides-row sides-hunk" data-testid="hunk">
      <Lines lines={seg.base} className="base" />
      <Lines lines={seg.target} className="target" />
      <Lines lines={seg.source} className="source" />
    </div>
  );
}

function Lines({ lines, className }: { lines: string[] | null; className: string }) {
  if (lines === null) return <div className="muted">(not shown)</div>;
  return (
    <div className={className}>
      {lines.length === 0 ? (
        <span className="muted">(no lines)</span>
      ) : (
        lines.map((l, i) => (
          <div key={i} className="line">
            {l || ' '}
          </div>
        ))
      )}
    </div>
  );
}
