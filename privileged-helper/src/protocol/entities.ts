// The objects the helper reports to its clients. One definition: TypeScript types
// are inferred from these schemas, and clients validate what they receive with them.
import { z } from 'zod';
import { Maker } from './identity.js';
import { Id, ImageName, Name, Port } from './names.js';

export const ImageState = z.enum(['absent', 'building', 'ready', 'failed']);

/** Where an image comes from: Grove's own desktop recipe, a Containerfile, or a registry or an archive. */
export const ImageOrigin = z.enum(['recipe', 'containerfile', 'pull']);
export type ImageOrigin = z.infer<typeof ImageOrigin>;

export const Image = z.strictObject({
  name: ImageName,
  state: ImageState,
  origin: ImageOrigin,
  /** The Containerfile it was built from, or the reference it was pulled from (never with credentials). */
  source: z.string().nullable(),
  /** Its name in Grove's local OCI storage, which a Containerfile can start FROM (localhost/grove/NAME:latest); null until it is there. */
  reference: z.string().nullable(),
  /** The recipe's hash, or the OCI image's id (the digest of its config). */
  id: z.string().nullable(),
  /** The digest of its manifest (sha256:…), for OCI images. */
  digest: z.string().nullable(),
  /** How many layers it has (1 for the recipe's). */
  layers: z.number().int().nullable(),
  builtAt: z.string().nullable(),
  sizeBytes: z.number().int().nullable(),
  /** Bytes of its layers that another image has too (they are stored once). */
  sharedBytes: z.number().int().nullable(),
  /** What it lacks to be a workspace's desktop; empty when it has what it needs. */
  missing: z.array(z.string()),
});
export type Image = z.infer<typeof Image>;

/** exited: its processes ended on their own (or the kernel ended them); its files are kept, and it can be started again or rolled back. */
export const WorkspaceState = z.enum(['creating', 'running', 'stopped', 'exited', 'failed']);
export type WorkspaceState = z.infer<typeof WorkspaceState>;

export const PortMapping = z.strictObject({
  containerPort: Port,
  hostPort: Port,
  /** Always 127.0.0.1: nothing is exposed beyond loopback. */
  hostAddress: z.literal('127.0.0.1'),
});
export type PortMapping = z.infer<typeof PortMapping>;

/**
 * What a branch may use: memory (no swap beyond it), tasks (processes and
 * threads), CPU weight (100 = an equal share), and disk: the bytes its own
 * files may write in the pool (host/disk-quota.ts; past it a write fails with
 * EDQUOT).
 */
export const BranchLimits = z.strictObject({
  memoryBytes: z
    .number()
    .int()
    .min(256 * 2 ** 20)
    .max(2 ** 40),
  pids: z.number().int().min(64).max(1_000_000),
  cpuWeight: z.number().int().min(1).max(10_000),
  diskBytes: z
    .number()
    .int()
    .min(64 * 2 ** 20)
    .max(2 ** 50),
});
export type BranchLimits = z.infer<typeof BranchLimits>;

/** A branch's files as its disk limit counts them. */
export const DiskUse = z.strictObject({
  /** Bytes its files wrote that still exist (in it, or kept by a version or a fork of it); what it shares with its source is its source's. */
  usedBytes: z.number().int().nonnegative(),
  /** Too little left for a write: writes in the branch fail with EDQUOT ("Disk quota exceeded"). */
  full: z.boolean(),
});
export type DiskUse = z.infer<typeof DiskUse>;

/**
 * A host folder copied into a workspace when it was made: where it came from
 * (the git commit and branch it was at, for taking results home) and where it
 * is in the workspace's branches.
 */
export const ProjectOrigin = z.strictObject({
  hostPath: z.string(),
  path: z.string(),
  /** The repository's HEAD commit when it was copied (null: not a git repository). */
  commit: z.string().nullable(),
  /** The branch checked out then (null: not a repository, or a detached HEAD). */
  gitBranch: z.string().nullable(),
  copiedAt: z.string(),
});
export type ProjectOrigin = z.infer<typeof ProjectOrigin>;

/** A branch's work taken home (branch.export): the commit made, on its parent (the project's origin), in a branch or a patch. */
export const ExportResult = z.strictObject({
  commit: z.string(),
  parent: z.string(),
  /** Files the commit changes, adds or deletes. */
  files: z.number().int().nonnegative(),
  /** The repository's new branch (a git export). */
  branch: z.string().nullable(),
  /** The patch file written (a patch export). */
  patch: z.string().nullable(),
});
export type ExportResult = z.infer<typeof ExportResult>;

/** What a copy into or out of a branch moved. */
export const CopyResult = z.strictObject({
  /** What the copy moved: a tar of it (its files' bytes, a 512-byte header for each entry, padding). */
  bytes: z.number().int().nonnegative(),
  ms: z.number().int().nonnegative(),
});
export type CopyResult = z.infer<typeof CopyResult>;

/** A merge into a branch: the sources (as they were named then), the target's checkpoint before it, when. */
export const MergeMark = z.strictObject({
  sources: z.array(z.strictObject({ id: Id, name: z.string() })),
  version: Id.nullable(),
  at: z.string(),
});
export type MergeMark = z.infer<typeof MergeMark>;

/** How many of a branch's newest merges it reports (a tree draws an edge for each). */
export const MAX_MERGES_SHOWN = 20;

export const Workspace = z.strictObject({
  id: Id,
  name: Name,
  image: ImageName,
  state: WorkspaceState,
  hostname: z.string(),
  machineId: z.string(),
  createdAt: z.string(),
  /** Address of the workspace inside its private /30 (for diagnostics only: only root on the host may connect to it). */
  address: z.string(),
  /** Its dev ports on 127.0.0.1, while running (never its desktop: see vncSocket). */
  ports: z.array(PortMapping),
  /**
   * Its desktop (VNC, no password), while running: a Unix socket only root and
   * the person group may open. The main line's stays the same across promotions.
   */
  vncSocket: z.string().nullable(),
  /**
   * Its desktop as a Selkies stream (HTTP, docs/stream.md), while running: a
   * Unix socket only root and the person group may open, which the app serves
   * over HTTPS with a token. Named after the branch, not the main line.
   */
  streamSocket: z.string().nullable(),
  /** PID of the container's init on the host, while running. */
  pid: z.number().int().nullable(),
  /** Why it is 'exited': what was seen when its processes were found gone. */
  exitReason: z.string().nullable(),
  /** The branch this one was forked from; null for a workspace's first branch. */
  parent: Id.nullable(),
  /** All branches of one workspace share its tree id (the id of its first branch). */
  tree: Id,
  /** The version this branch was last rolled back to (or inherited from its parent). */
  version: Id.nullable(),
  /** The workspace's main line: it holds the stable host ports and desktop socket. */
  main: z.boolean(),
  /** Who made it (created it, or forked it from its parent); null for branches older than identities. */
  madeBy: Maker.nullable(),
  /**
   * The person who acted on it (promoted it, approved a request on it, merged
   * into it, exported it, changed its limits): it is theirs since, and the
   * agent that made it asks before it discards, stops or rolls it back.
   */
  claimedBy: Maker.nullable(),
  /** Its resource limits (a fork starts with its source's). */
  limits: BranchLimits,
  /** The project copied into the workspace when it was made (every branch of it has it). */
  project: ProjectOrigin.nullable(),
  /** Its memory is never merged by KSM with other workspaces' (no page-content side channel); a whole tree's mark. */
  sensitive: z.boolean(),
  /** What its disk limit counts now; null where the pool has no quotas. */
  disk: DiskUse.nullable(),
  /** When a promotion retired it from the main line: stopped, with the version taken of it then (oldMain 'version'); null otherwise. */
  retiredAt: z.string().nullable(),
  /** Merges written into it, newest MAX_MERGES_SHOWN, oldest first. */
  merges: z.array(MergeMark).max(MAX_MERGES_SHOWN),
});
export type Workspace = z.infer<typeof Workspace>;

export const DoctorCheck = z.strictObject({
  name: z.string(),
  ok: z.boolean(),
  detail: z.string(),
});
export type DoctorCheck = z.infer<typeof DoctorCheck>;

export const DoctorReport = z.strictObject({
  ok: z.boolean(),
  checks: z.array(DoctorCheck),
  criu: z.strictObject({ version: z.string().nullable(), checkPassed: z.boolean() }),
});
export type DoctorReport = z.infer<typeof DoctorReport>;

export const ExecResult = z.strictObject({
  exitCode: z.number().int(),
  /** Set when the command was ended by a signal. */
  signal: z.string().nullable(),
  stdout: z.string(),
  stderr: z.string(),
  timedOut: z.boolean(),
});
export type ExecResult = z.infer<typeof ExecResult>;

/** A run a fork or a rollback copied into the branch, detached from its caller (exec/run-holder.ts). */
export const DetachedRun = z.strictObject({
  id: z.string().regex(/^e[0-9a-f]{8}$/),
  command: z.string(),
  /** Its exit status (negative: the signal that ended it); null while it runs. */
  exitStatus: z.number().int().nullable(),
});
export type DetachedRun = z.infer<typeof DetachedRun>;

export const Version = z.strictObject({
  id: Id,
  /** The branch it was taken of (it may since have been discarded). */
  branch: Id,
  tree: Id,
  label: z.string().nullable(),
  createdAt: z.string(),
  /**
   * False while it is being saved: its point in time is fixed, its images are
   * on their way into the pool; it can be rolled back to (a rollback waits)
   * once saved, and is dropped if the helper stops before.
   */
  saved: z.boolean(),
  /** Set once its workspace is gone and it was kept: an orphan, with the name its workspace's last branch had. */
  orphanOf: z.string().optional(),
  /**
   * When asked for (version.list with sizes): bytes its CRIU images and file
   * snapshot occupy (du); blocks it shares with its branch or other versions
   * count in full, so deleting it frees at most this much.
   */
  sizeBytes: z.number().int().nonnegative().optional(),
});
export type Version = z.infer<typeof Version>;

export const ForkStage = z.enum(['prepare', 'dump', 'thaw', 'restore', 'expose', 'commit']);
export type ForkStage = z.infer<typeof ForkStage>;

/**
 * Where a test may make a fork fail: right after one of its stages; 'freeze':
 * in the dump's freeze, once the source's files are snapshotted; or 'stall':
 * hang once every child is up, with the dump still keeping its twins, as if the helper died there.
 */
export const ForkFault = z.enum([...ForkStage.options, 'freeze', 'stall']);
export type ForkFault = z.infer<typeof ForkFault>;

/**
 * Where a test may make a rollback fail: once the branch's state before it is
 * set aside ('aside': a checkpoint, or a stopped branch's files), after the
 * branch's files were replaced, instead of its restore, or after the restore,
 * before the restored tree is the branch's ('adopt'); or, while it goes on,
 * the saving of its checkpoint into the pool in the background ('save').
 */
export const RollbackStage = z.enum(['aside', 'files', 'restore', 'adopt', 'save']);
export type RollbackStage = z.infer<typeof RollbackStage>;

/**
 * What becomes of the old main line when a branch is promoted: retired
 * ('version': a version is taken of it and it is stopped, kept in its tree
 * as a former main line), discarded, or kept running as a branch.
 */
export const OldMainFate = z.enum(['version', 'discard', 'keep']);
export type OldMainFate = z.infer<typeof OldMainFate>;

/** Where a test may make a promotion fail: after the old main's version, after the switch of ports and main line, after the forwarders re-opened. */
export const PromoteStage = z.enum(['checkpoint', 'switch', 'open']);
export type PromoteStage = z.infer<typeof PromoteStage>;

/** What becomes of the branches that lost a pick: discarded, or kept as branches. */
export const LosersFate = z.enum(['discard', 'keep']);
export type LosersFate = z.infer<typeof LosersFate>;

/** What a pick did: the winner as the main line now, the others discarded or kept, the old main's version if one was kept. */
export const PickResult = z.strictObject({
  main: Workspace,
  discarded: z.array(Id),
  kept: z.array(Id),
  oldMainVersion: Id.nullable(),
});
export type PickResult = z.infer<typeof PickResult>;

/** Where a test may make a discard fail: after its processes and host objects went (its files stay), after its files went too. */
export const DiscardStage = z.enum(['teardown', 'files']);
export type DiscardStage = z.infer<typeof DiscardStage>;

/**
 * Where a test may make a checkpoint fail: in the dump's freeze, once the
 * branch's files are snapshotted ('freeze'); after its images and files are
 * written, before it is recorded ('dump'); while it is saved ('save'); or
 * where its save never finishes, as if the helper died in it ('stall').
 */
export const CheckpointStage = z.enum(['freeze', 'dump', 'save', 'stall']);
export type CheckpointStage = z.infer<typeof CheckpointStage>;

/** CRIU's stats-dump, in ms and pages: seizing the tree, keeping it frozen, draining and writing memory. */
export const CriuDumpStats = z.strictObject({
  sourceFrozenMs: z.number(),
  freezingMs: z.number(),
  memdumpMs: z.number(),
  memwriteMs: z.number(),
  pagesScanned: z.number(),
  pagesWritten: z.number(),
});
export type CriuDumpStats = z.infer<typeof CriuDumpStats>;

/** CRIU's stats-restore: forking the tree, restoring it (to the moment its tasks resume), pages written. */
export const CriuRestoreStats = z.strictObject({
  forkingMs: z.number(),
  restoreMs: z.number(),
  pagesRestored: z.number(),
});
export type CriuRestoreStats = z.infer<typeof CriuRestoreStats>;

export const ForkReport = z.strictObject({
  fork: z.string(),
  source: Id,
  /** The version the children were restored from (a fork from a version; the source was not touched). */
  version: Id.optional(),
  /** The child that took the version's standby (restored and frozen ahead) instead of being restored (docs/standbys.md). */
  standby: Id.optional(),
  children: z.array(Workspace),
  /**
   * What the children do not have, in words (a watcher of the generation
   * that could not be told, a process started from outside the tree).
   */
  leftBehind: z.array(z.string()),
  /**
   * What the children have that someone may want to know of, in words: each
   * terminal attached in the source at the fork, with its whole process
   * tree, detached in each child until someone attaches to it again.
   */
  carried: z.array(z.string()),
  /**
   * Milliseconds per stage, one after the other (with the commit they make
   * the total); sourceFrozen is how long the source's processes were
   * stopped. dump ends when the source runs again; CRIU then still saves its
   * pages while the restores start, so restore includes waiting for them.
   */
  timings: z.strictObject({
    prepare: z.number(),
    dump: z.number(),
    sourceFrozen: z.number(),
    thaw: z.number(),
    restore: z.number(),
    expose: z.number(),
    firstFrame: z.number(),
    total: z.number(),
  }),
  /** Per child (in order), ms from the fork's start until its first frame was out and it was announced running. */
  readyMs: z.array(z.number()),
  /** How the children got their memory, and why that way (the kernel tier decides: host/kernel-tier.ts). */
  memory: z.string(),
  /** What CRIU says of its own work (its stats files), where it said it: the dump, and each child's restore in order. */
  criu: z.strictObject({
    dump: CriuDumpStats.nullable(),
    restores: z.array(CriuRestoreStats.nullable()),
  }),
});
export type ForkReport = z.infer<typeof ForkReport>;

// Performance (perf.get): fork history and memory per branch.
const Bytes = z.number().int();

/** A fork that succeeded, as the registry keeps it (after its branches are gone too). */
export const ForkRecord = z.strictObject({
  fork: z.string(),
  /** The branch forked (by its name at the time). */
  source: z.strictObject({ id: Id, name: z.string() }),
  copies: z.number().int(),
  /** When it finished. */
  at: z.string(),
  timings: ForkReport.shape.timings,
});
export type ForkRecord = z.infer<typeof ForkRecord>;

/** The memory of every process in a running branch's pid namespace, summed. */
export const BranchMemory = z.strictObject({
  workspace: Id,
  name: z.string(),
  processes: z.number().int(),
  /** Proportional set size: shared pages split among their sharers, so branches add up. */
  pssBytes: Bytes,
  rssBytes: Bytes,
  swapBytes: Bytes,
  ksm: z.strictObject({
    /** Pages KSM merged with identical pages (of this branch or others), from ksm_stat. */
    mergingPages: z.number().int(),
    /** mergingPages in bytes. */
    sharedBytes: Bytes,
    /** What KSM saves the branch, less its bookkeeping (ksm_process_profit; may be negative). */
    profitBytes: Bytes,
    /** The branch's init has ksm_merge_any: all anonymous memory of what it starts is mergeable. */
    mergeAny: z.boolean(),
  }),
  /** Its limits and what its cgroups counted: why a process of it was killed or a fork refused. */
  cgroup: z.strictObject({
    limits: BranchLimits,
    memoryBytes: Bytes,
    /** Its anonymous and shared memory: what a checkpoint of it writes, about (memory.stat rss + shmem). */
    dumpableBytes: Bytes,
    memoryLimitHits: z.number().int(),
    oomKills: z.number().int(),
    pids: z.number().int(),
    pidsRefused: z.number().int(),
  }),
});
export type BranchMemory = z.infer<typeof BranchMemory>;

export const HostMemory = z.strictObject({
  totalBytes: Bytes,
  availableBytes: Bytes,
  pageBytes: z.number().int(),
  /** ksmd's counters (pages), from /sys/kernel/mm/ksm. */
  ksm: z.strictObject({
    pagesShared: z.number().int(),
    pagesSharing: z.number().int(),
    pagesUnshared: z.number().int(),
    fullScans: z.number().int(),
    run: z.number().int(),
  }),
});
export type HostMemory = z.infer<typeof HostMemory>;

/** The pool's space (perf.get, space.get, the pool.space event). */
export const PoolSpace = z.strictObject({
  freeBytes: Bytes,
  totalBytes: Bytes,
  /** Little enough left that forks, checkpoints and new workspaces will soon be refused (E_NO_SPACE). */
  low: z.boolean(),
});
export type PoolSpace = z.infer<typeof PoolSpace>;

export const PerfReport = z.strictObject({
  /** Newest first, at most 100. */
  forks: z.array(ForkRecord),
  /** Running branches, in the registry's order. */
  branches: z.array(BranchMemory),
  host: HostMemory,
  pool: PoolSpace,
  /** Networks and cgroups made ahead for new branches (workspaces/prepared-pool.ts): the ids they are ready for, and how many are kept. */
  prepared: z.strictObject({ ready: z.array(Id), kept: z.number().int() }),
  /** Frozen copies of versions restored ahead (branches/standby.ts), oldest first: the id their host objects are under, and their processes' PSS. */
  standbys: z.array(z.strictObject({ id: Id, version: Id, pssBytes: z.number(), ageSeconds: z.number() })),
  at: z.string(),
});
export type PerfReport = z.infer<typeof PerfReport>;

// Disk space (space.get, the pool.space event): the pool, and what each
// branch and version holds in it.
/** What a branch's or version's files hold: btrfs's own count, over blocks that snapshots share. */
export const HeldSpace = z.strictObject({
  /** Blocks only it refers to: what deleting it frees. */
  exclusiveBytes: Bytes,
  /** Every block it refers to, those shared with its parent, children and versions included. */
  totalBytes: Bytes,
});

export const SpaceReport = z.strictObject({
  pool: PoolSpace,
  branches: z.array(HeldSpace.extend({ workspace: Id, name: z.string(), state: WorkspaceState })),
  /** orphanOf: the deleted workspace a kept version came from. */
  versions: z.array(HeldSpace.extend({ version: Id, workspace: Id.nullable(), orphanOf: z.string().nullable(), label: z.string().nullable() })),
  /** Fork points kept as merge bases (branches/fork-points.ts): source is the branch forked, which may be gone. */
  forkPoints: z.array(HeldSpace.extend({ forkPoint: z.string().max(64), source: Id })),
  at: z.string(),
});
export type SpaceReport = z.infer<typeof SpaceReport>;

// Egress: what a branch may reach outside itself (see egress/).
export const EgressMode = z.enum(['deny', 'allow', 'gate']);
export type EgressMode = z.infer<typeof EgressMode>;

/** A host name (lower case; a leading '*.' matches any subdomain) or an IPv4/IPv6 literal. */
export const EgressHost = z
  .string()
  .min(1)
  .max(253)
  .regex(/^(\*\.)?[a-z0-9]([a-z0-9.-]*[a-z0-9])?$|^[0-9a-f:.]+$/, 'a host name or an IP address');

export const EgressRule = z.strictObject({ host: EgressHost, port: Port.optional() });
export type EgressRule = z.infer<typeof EgressRule>;

export const EgressPolicy = z.strictObject({
  /** deny: nothing leaves; allow: only the allow list; gate: the allow list, and a person decides every other destination. */
  mode: EgressMode,
  allow: z.array(EgressRule),
  /** Hold plain-HTTP requests other than GET/HEAD/OPTIONS even to allowed destinations. */
  holdMutating: z.boolean(),
});
export type EgressPolicy = z.infer<typeof EgressPolicy>;

/** A change to one branch's policy: fields left out stay as they are. */
export const EgressChange = z.strictObject({
  mode: EgressMode.optional(),
  holdMutating: z.boolean().optional(),
  /** Destinations added to the allow list. */
  allow: z.array(EgressRule).max(64).optional(),
  /** Destinations removed from the allow list (a rule without port removes every rule for the host). */
  remove: z.array(EgressRule).max(64).optional(),
});
export type EgressChange = z.infer<typeof EgressChange>;

export const EgressVerdict = z.enum(['allowed', 'denied', 'held', 'approved', 'rejected', 'timeout', 'abandoned', 'failed']);
export type EgressVerdict = z.infer<typeof EgressVerdict>;

/** One line of the egress log: every attempt and every decision. */
export const EgressLogEntry = z.strictObject({
  seq: z.number().int(),
  at: z.string(),
  workspace: z.string(),
  workspaceName: z.string(),
  request: z.string().nullable(),
  host: z.string(),
  port: z.number().int(),
  method: z.string(),
  url: z.string().nullable(),
  verdict: EgressVerdict,
  /** 'policy', 'timeout', 'gate', or the person who decided ('person:alice'). */
  decidedBy: z.string(),
  detail: z.string().nullable(),
  /** How many identical denials this row stands for (a branch denying in a loop is one row a minute). */
  count: z.number().int().positive(),
});
export type EgressLogEntry = z.infer<typeof EgressLogEntry>;

export const EgressStatus = z.strictObject({
  workspace: Id,
  policy: EgressPolicy,
  /** Packets the branch's firewall dropped since its network was made (0 while it is not running). */
  dropped: z.strictObject({ tcp: z.number().int(), udp: z.number().int(), other: z.number().int() }),
});
export type EgressStatus = z.infer<typeof EgressStatus>;
