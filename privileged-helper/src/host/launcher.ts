// Command lines through native/grove-enter.c, the one way the helper starts
// anything that belongs to a branch:
//  - on the host, inside the branch's cgroups and KSM-mergeable: crun, whose
//    container init then starts in them, and `criu restore`, whose restored
//    tree does;
//  - inside a running branch: its namespaces, root and cgroups, its
//    capabilities only, no_new_privs, its seccomp filter, only stdio
//    inherited (exec and terminals).
import { writeFile } from 'node:fs/promises';
import { BRANCH_CAPS } from './oci-spec.js';
import { enterSeccompRules } from './seccomp.js';

export interface EnterOptions {
  /** The branch's init (host pid): whose namespaces and root to enter. */
  initPid: number;
  /** The branch's cgroup directories. */
  cgroups: readonly string[];
  /** Working directory inside the branch. */
  cwd: string;
  /** A session of its own inside the branch's pid namespace (not for terminals: their session is the host pty's). */
  setsid: boolean;
  /** Its memory may be merged by KSM with other branches' (false for a workspace marked sensitive). */
  mergeable: boolean;
}

export class Launcher {
  constructor(
    /** native/grove-enter.c, built by build/host/setup.sh. */
    private readonly binary: string,
    /** Where the branch seccomp rules for grove-enter are written (writeRules). */
    private readonly rulesFile: string,
  ) {}

  /** Writes the seccomp rules grove-enter loads (at helper start: one file for every branch). */
  async writeRules(): Promise<void> {
    await writeFile(this.rulesFile, enterSeccompRules(), { mode: 0o600 });
  }

  /** argv on the host, inside the branch's cgroups, with all its memory KSM-mergeable unless it is a sensitive workspace's. */
  onHost(cgroups: readonly string[], mergeable: boolean, argv: readonly string[]): [string, string[]] {
    return [this.binary, [...cgroups.flatMap((d) => ['--cgroup', d]), ...(mergeable ? ['--ksm'] : []), '--', ...argv]];
  }

  /** argv inside a running branch, caged like the branch's own processes. */
  inBranch(o: EnterOptions, argv: readonly string[]): [string, string[]] {
    if (!Number.isInteger(o.initPid) || o.initPid <= 1) throw new Error(`bad branch init pid ${o.initPid}`);
    const caps = BRANCH_CAPS.map((c) => c.replace(/^CAP_/, '').toLowerCase()).join(',');
    return [
      this.binary,
      [
        '--target',
        String(o.initPid),
        ...o.cgroups.flatMap((d) => ['--cgroup', d]),
        ...(o.mergeable ? ['--ksm'] : []),
        '--caps',
        caps,
        '--seccomp',
        this.rulesFile,
        '--cwd',
        o.cwd,
        ...(o.setsid ? ['--setsid'] : []),
        '--',
        ...argv,
      ],
    ];
  }
}
