// Images: every image the helper has (Grove's desktop and images of one's
// own) with what it is made of and whether a workspace can start from it;
// building one from a Containerfile, pulling one, removing one; and the
// output of an image's build or pull as it comes.
import { useEffect, useState } from 'react';
import type { Image } from '../../../main/src/api/contract.js';
import { notADesktop } from '../../../main/src/api/words.js';
import { NONE, isLive } from '../store/app.js';
import { useApp } from './context.js';
import { BuildForm, PullForm } from './ImageForms.js';
import { ImageLogPanel } from './ImageLogPanel.js';

const size = (bytes: number) => (bytes >= 2 ** 30 ? `${(bytes / 2 ** 30).toFixed(1)} GiB` : `${Math.round(bytes / 2 ** 20)} MiB`);

export function ImagesView() {
  const images = useApp((s) => s.server?.images ?? NONE);
  const operations = useApp((s) => s.server?.operations ?? NONE);
  const loadImageLogs = useApp((s) => s.loadImageLogs);
  const live = useApp(isLive);
  // The log shown: the image last built or pulled here, or the one whose Log was clicked.
  const [logOf, setLogOf] = useState<string | null>(() => operations.findLast((o) => o.kind === 'image.build' || o.kind === 'image.pull')?.target ?? null);
  useEffect(() => {
    if (live) void loadImageLogs();
  }, [live, loadImageLogs]);
  return (
    <div className="images" data-testid="images">
      <section className="images-section images-list">
        <h3>Images</h3>
        <p className="muted">
          A workspace starts from an image. Grove's desktop is built from its recipe; an image of your own is built from a Containerfile (
          <span className="mono">FROM grove/desktop</span> starts from Grove's desktop) or pulled. Layers shared between images are stored once.
        </p>
        <ImageTable images={images} onLog={setLogOf} />
      </section>
      <section className="images-section">
        <h3>Build an image</h3>
        <BuildForm onStart={setLogOf} />
        <h3>Pull an image</h3>
        <PullForm onStart={setLogOf} />
      </section>
      <section className="images-section">
        <ImageLogPanel image={logOf} />
      </section>
    </div>
  );
}

function ImageTable({ images, onLog }: { images: readonly Image[]; onLog: (name: string) => void }) {
  const ask = useApp((s) => s.ask);
  const act = useApp((s) => s.act);
  const live = useApp(isLive);
  const operations = useApp((s) => s.server?.operations ?? NONE);
  const busy = operations.filter((o) => o.status === 'running' && o.kind.startsWith('image.'));
  if (images.length === 0) return <p className="muted">No images yet.</p>;
  return (
    <table className="images-table">
      <thead>
        <tr>
          <th>Name</th>
          <th>State</th>
          <th>From</th>
          <th>Size</th>
          <th>Layers</th>
          <th>Shared</th>
          <th>Digest</th>
          <th />
        </tr>
      </thead>
      <tbody>
        {images.map((img) => {
          const working = busy.some((o) => o.target === img.name);
          const why = notADesktop(img);
          return (
            <tr key={img.name} data-testid="image-row" data-image={img.name} data-state={img.state}>
              <td>
                <b>{img.name}</b>
                {img.reference && <div className="muted small mono">{img.reference}</div>}
                {why && (
                  <div className="image-missing" data-testid="image-missing">
                    {why}
                  </div>
                )}
              </td>
              <td className={`state-${img.state}`}>{working ? 'working…' : img.state}</td>
              <td className="image-source">{origin(img)}</td>
              <td className="num">{img.sizeBytes === null ? '' : size(img.sizeBytes)}</td>
              <td className="num">{img.layers ?? ''}</td>
              <td className="num" title="bytes of its layers another image has too (stored once)">
                {img.sharedBytes ? size(img.sharedBytes) : ''}
              </td>
              <td className="mono num" title={img.digest ?? undefined}>
                {img.digest ? img.digest.slice(0, 19) : ''}
              </td>
              <td className="image-actions">
                <button className="small" onClick={() => onLog(img.name)}>
                  Log
                </button>
                {img.origin !== 'recipe' && (
                  <button
                    className="small danger"
                    disabled={!live || working}
                    onClick={() =>
                      ask({
                        title: `Remove image ${img.name}?`,
                        body: 'Its files leave the pool for good; building or pulling it again is the only way back. Grove refuses while a branch or a version still uses it.',
                        confirmLabel: 'Remove',
                        danger: true,
                        run: () => void act('image.remove', { name: img.name }),
                      })
                    }
                  >
                    Remove
                  </button>
                )}
              </td>
            </tr>
          );
        })}
      </tbody>
    </table>
  );
}

function origin(img: Image): string {
  switch (img.origin) {
    case 'recipe':
      return "Grove's recipe";
    case 'containerfile':
      return `Containerfile ${img.source ?? ''}`;
    case 'pull':
      return `pulled from ${img.source ?? ''}`;
  }
}
