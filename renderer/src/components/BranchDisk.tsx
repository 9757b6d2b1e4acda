// A branch's disk limit next to its name: what its own files have written
// against it, and a warning once it is full (writes in the branch then fail
// with "Disk quota exceeded"). The helper tells the app when a branch fills
// its limit or has room again (workspace.changed).
import type { Workspace } from '../../../main/src/api/contract.js';
import { diskText } from '../../../main/src/api/words.js';

export function BranchDisk({ branch }: { branch: Workspace }) {
  return (
    <div className="branch-disk muted small" data-testid="branch-disk">
      disk {diskText(branch)}
      {branch.disk?.full && <DiskFull />}
    </div>
  );
}

/** The mark of a branch whose disk limit is full. */
export function DiskFull() {
  return (
    <span
      className="tag warn"
      data-testid="disk-full"
      title="Its disk limit is full: writes in it fail. Delete files in it and the versions that keep them, or raise its limit (grove ws limits NAME --disk SIZE)."
    >
      disk full
    </span>
  );
}
