// The output of an image's latest build or pull, line by line as the helper
// streams it (buildah's and skopeo's own lines among its words), following
// the newest line; and why it failed, when it did here.
import { useEffect, useRef } from 'react';
import { NONE } from '../store/app.js';
import { useApp } from './context.js';

export function ImageLogPanel({ image }: { image: string | null }) {
  const log = useApp((s) => (image ? s.imageLogs[image] : undefined));
  const operations = useApp((s) => s.server?.operations ?? NONE);
  const end = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const el = end.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [log]);
  if (!image) return <p className="muted">The output of a build or a pull shows here as it comes.</p>;
  const op = operations.findLast((o) => o.target === image && (o.kind === 'image.build' || o.kind === 'image.pull'));
  return (
    <div className="image-log-panel" data-testid="image-log-panel" data-image={image}>
      <h3>
        Output of {image}
        {op?.status === 'running' && <span className="muted"> · running…</span>}
      </h3>
      {log ? (
        <pre className="image-log" data-testid="image-log" ref={end}>
          {log.lines.map((l) => (
            <div key={l.seq}>
              <span className="log-stage">{l.stage}</span> {l.message}
            </div>
          ))}
        </pre>
      ) : (
        <p className="muted">No output yet.</p>
      )}
      {op?.status === 'failed' && <div className="op-error">{op.error}</div>}
    </div>
  );
}
