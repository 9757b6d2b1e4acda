// A commit as a patch (git format-patch's text), the way a person reviews it:
// the files it touches, then its lines, added and removed ones coloured. The
// text is the branch's: React shows it as text, never as markup.
import { filesOfPatch, shownLines } from '../store/patch.js';

export function PatchView({ patch, cut }: { patch: string; cut: boolean }) {
  const files = filesOfPatch(patch);
  const { lines, more } = shownLines(patch);
  return (
    <div className="patch" data-testid="patch">
      <ul className="patch-files mono" aria-label="files in the commit">
        {files.map((f) => (
          <li key={f}>{f}</li>
        ))}
      </ul>
      <pre className="diff-text patch-text">
        {lines.map((line, i) => (
          <div key={i} className={lineClass(line)}>
            {line}
          </div>
        ))}
      </pre>
      {(more > 0 || cut) && (
        <div className="muted small">
          {more > 0 ? `and ${more} more lines` : ''}
          {cut ? `${more > 0 ? '; ' : ''}the patch is cut short here: the export takes all of it` : ''}
        </div>
      )}
    </div>
  );
}

function lineClass(line: string): string {
  if (line.startsWith('+++') || line.startsWith('---') || line.startsWith('diff --git')) return 'file';
  if (line.startsWith('+')) return 'plus';
  if (line.startsWith('-')) return 'minus';
  if (line.startsWith('@@')) return 'hunk';
  return '';
}
