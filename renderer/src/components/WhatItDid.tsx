// "What it did", on a promote or export request: what agents did in the branch
// since it was made, oldest first, and the screenshots the helper took every
// few actions, to scrub through with a slider. The actions up to the picture
// shown are marked, so each picture reads with what led to it.
import { useEffect, useState } from 'react';
import type { RequestResult } from '../../../main/src/api/contract.js';
import { actorName } from '../../../main/src/api/words.js';
import { useApi } from './context.js';

type Timeline = RequestResult<'branch.timeline'>;

export function WhatItDid({ branch, name }: { branch: string; name: string }) {
  const api = useApi();
  const [timeline, setTimeline] = useState<Timeline | null>(null);
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => {
    let gone = false;
    api.request('branch.timeline', { workspace: branch }).then(
      (t) => !gone && setTimeline(t),
      (err: Error) => !gone && setFailed(err.message),
    );
    return () => void (gone = true);
  }, [api, branch]);
  if (failed) return <p className="muted small">What it did cannot be shown: {failed}</p>;
  if (!timeline) return null;
  return (
    <details className="what-it-did" data-testid="what-it-did" open>
      <summary>
        What it did · {timeline.entries.length + timeline.droppedEntries} {timeline.entries.length + timeline.droppedEntries === 1 ? 'action' : 'actions'} since{' '}
        {name} was made
      </summary>
      {timeline.entries.length === 0 ? <p className="muted small">No agent has acted in {name} yet.</p> : <Steps timeline={timeline} name={name} />}
    </details>
  );
}

function Steps({ timeline, name }: { timeline: Timeline; name: string }) {
  const { shots, entries, droppedEntries } = timeline;
  const [picked, setPicked] = useState(shots.length - 1);
  const shot = shots[picked] ?? null;
  return (
    <div className="what-it-did-body">
      {shot && (
        <figure className="what-it-did-shot">
          <img src={shot.image} alt={`${name}'s screen after action ${shot.after}`} data-testid="what-it-did-shot" />
          <figcaption className="muted small">
            after action {shot.after} · {new Date(shot.at).toLocaleTimeString()}
          </figcaption>
          {shots.length > 1 && (
            <input
              type="range"
              min={0}
              max={shots.length - 1}
              value={picked}
              aria-label="screenshot to show"
              aria-valuetext={`after action ${shot.after}`}
              onChange={(e) => setPicked(Number(e.target.value))}
            />
          )}
        </figure>
      )}
      <ol className="what-it-did-steps mono small" aria-label="what agents did, oldest first">
        {droppedEntries > 0 && <li className="muted">… {droppedEntries} earlier actions not kept</li>}
        {entries.map((e) => (
          <li key={e.n} value={e.n} className={`${shot && e.n <= shot.after ? 'seen' : ''} ${e.ok ? '' : 'failed'}`} title={`${actorName(e.by)} at ${e.at}`}>
            {e.summary}
          </li>
        ))}
      </ol>
    </div>
  );
}
