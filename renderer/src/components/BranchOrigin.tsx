// Where a branch comes from, next to its name: the image its workspace
// started from, and the project copied into it (the host folder, and the git
// commit and branch it was at then, for taking the work home).
import type { Workspace } from '../../../main/src/api/contract.js';
import { projectOrigin } from '../../../main/src/api/words.js';

/** What the branch was made from: its image, and the project copied into its workspace (where from, at which commit). */
export function BranchOrigin({ branch }: { branch: Workspace }) {
  const p = branch.project;
  const project = p ? `project ${p.path} from ${projectOrigin(p)}` : null;
  return (
    <div
      className="branch-origin muted small"
      data-testid="branch-origin"
      title={p ? `${project}, copied ${new Date(p.copiedAt).toLocaleString()}` : undefined}
    >
      image {branch.image}
      {project && ` · ${project}`}
    </div>
  );
}
