// A merge's files written into a running branch, as a `git pull` writes a
// checkout: its processes go on, and the files change under them. Like a copy
// in (file-copy.ts), the writing is done inside the branch, by a tar and a
// script run in its namespaces and root: every path is resolved by the kernel
// there, so a link the branch plants leads somewhere else in the branch,
// never to the host. The helper only puts the new contents in a private
// folder of its own under numbers (no name of the branch's is ever a path on
// the host), with a list of what goes where.
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { ExecService, ExecTarget } from '../exec/exec-service.js';
import { pipePrograms, SAID_INVALID } from '../host/pipe-programs.js';

/** One step: a path becomes a file or a link, goes, or (a folder, if it is empty) goes. */
export type WriteStep =
  | { op: 'put'; path: string; content: { kind: 'file'; bytes: Buffer; executable: boolean } | { kind: 'link'; target: string } }
  | { op: 'delete'; path: string }
  | { op: 'rmdir'; path: string };

/**
 * Inside the branch: unpacks the tar on stdin (the list, and the contents by
 * number) into a private folder, then takes each step of the list in order.
 * A folder where a file is to go is refused (the merge never replaces one).
 * A step starts no program it can do without (a file's folder is found and
 * tested by the shell itself): a merge of hundreds of files would otherwise
 * start thousands.
 */
const WRITE_IN_BRANCH = `set -eu
tmp=$(mktemp -d /tmp/.grove-merge.XXXXXX)
trap 'rm -rf -- "$tmp"' EXIT
tar --extract --no-same-owner --file - --directory "$tmp"
while IFS= read -r line; do
  case $line in
    put\\ *)
      rest=\${line#put }; n=\${rest%% *}; dest=\${rest#* }
      if [ -d "$dest" ] && [ ! -L "$dest" ]; then echo "grove: $dest is a folder in the branch" >&2; exit ${SAID_INVALID}; fi
      dir=\${dest%/*}
      [ -z "$dir" ] || [ -d "$dir" ] || mkdir -p -- "$dir"
      mv -f -T -- "$tmp/f/$n" "$dest" ;;
    del\\ *) rm -f -- "\${line#del }" ;;
    rmdir\\ *) rmdir -- "\${line#rmdir }" 2>/dev/null || : ;;
  esac
done < "$tmp/list"
`;

export async function writeInBranch(exec: ExecService, target: ExecTarget, branch: string, steps: readonly WriteStep[]): Promise<void> {
  const staging = await mkdtemp(path.join(os.tmpdir(), 'grove-merge-'));
  try {
    await mkdir(path.join(staging, 'f'), { mode: 0o700 });
    const list: string[] = [];
    for (const [n, step] of steps.entries()) {
      if (step.op !== 'put') {
        list.push(`${step.op === 'delete' ? 'del' : 'rmdir'} ${step.path}`);
        continue;
      }
      const file = path.join(staging, 'f', String(n));
      if (step.content.kind === 'link') await symlink(step.content.target, file);
      else await writeFile(file, step.content.bytes, { mode: step.content.executable ? 0o755 : 0o644 });
      list.push(`put ${n} ${step.path}`);
    }
    await writeFile(path.join(staging, 'list'), list.map((l) => `${l}\n`).join(''), { mode: 0o600 });
    const inBranch = await exec.inBranchCommand(target, ['sh', '-c', WRITE_IN_BRANCH, 'sh']);
    await pipePrograms({
      from: { command: ['tar', ['--create', '--file', '-', '--directory', staging, '--', 'list', 'f']], name: 'the merged files' },
      to: { ...inBranch, name: `writing the merged files in '${branch}'`, end: (c) => exec.end(c) },
    });
  } finally {
    await rm(staging, { recursive: true, force: true });
  }
}
