// Human-readable output of the CLI (--json prints the objects as they are).
import type {
  DoctorReport,
  ForkReport,
  Image,
  PerfReport,
  PoolSpace,
  SpaceReport,
  Version,
  Workspace,
} from '../../../privileged-helper/src/protocol/entities.js';
import type { DetachedRun, EgressLogEntry, EgressStatus } from '../../../privileged-helper/src/protocol/entities.js';
import type { TreeDiff } from '../../../privileged-helper/src/protocol/diff.js';
import { diskText } from '../api/words.js';

export function printDoctor(report: DoctorReport): void {
  for (const c of report.checks) console.log(`${c.ok ? 'ok  ' : 'FAIL'}  ${c.name.padEnd(12)} ${c.detail}`);
  console.log(report.ok ? '\nThis host can run Grove.' : '\nSome checks failed: see above.');
}

export function printImage(img: Image): void {
  const size = img.sizeBytes === null ? '' : ` ${(img.sizeBytes / 2 ** 20).toFixed(0)} MiB`;
  const shared = img.sharedBytes ? `, ${(img.sharedBytes / 2 ** 20).toFixed(0)} MiB shared with other images` : '';
  const layers = img.layers === null ? '' : `, ${img.layers} layer${img.layers === 1 ? '' : 's'}`;
  const digest = img.digest ? `\t${img.digest.slice(0, 19)}` : '';
  console.log(`${img.name}\t${img.state}${size}${layers}${shared}${digest}${img.builtAt ? `\tbuilt ${img.builtAt}` : ''}`);
  if (img.source) console.log(`  from ${img.source}${img.reference ? `, stored as ${img.reference}` : ''}`);
  if (img.missing.length > 0) console.log(`  not a desktop: it lacks ${img.missing.join(', ')}`);
}

function ports(w: Workspace): string {
  return w.ports.map((p) => `${p.hostAddress}:${p.hostPort}->${p.containerPort}`).join(' ');
}

export function printWorkspace(w: Workspace): void {
  console.log(`id:       ${w.id}`);
  console.log(`name:     ${w.name}`);
  console.log(`state:    ${w.state}`);
  if (w.exitReason) console.log(`exited:   ${w.exitReason} (grove ws start ${w.name}, or grove rollback ${w.name} --to VERSION)`);
  console.log(`hostname: ${w.hostname}`);
  if (w.vncSocket) console.log(`desktop:  ${w.vncSocket} (VNC for root and the grove group, e.g. vncviewer ${w.vncSocket})`);
  for (const p of w.ports) console.log(`port:     ${p.hostAddress}:${p.hostPort} -> ${p.containerPort}`);
  if (w.sensitive) console.log('memory:   kept out of KSM (sensitive: no page sharing with other workspaces)');
  console.log(
    `disk:     ${diskText(w)}${w.disk?.full ? ` (delete files in it and the versions that keep them, or raise it: grove ws limits ${w.name} --disk SIZE)` : ''}`,
  );
  if (w.project) {
    const git = w.project.commit ? ` (git ${w.project.commit.slice(0, 12)}${w.project.gitBranch ? ` on ${w.project.gitBranch}` : ''})` : '';
    console.log(`project:  ${w.project.path} from ${w.project.hostPath}${git}`);
  }
}

const gib = (bytes: number) => `${(bytes / 2 ** 30).toFixed(bytes % 2 ** 30 === 0 ? 0 : 2)} GiB`;

export function printLimits(w: Workspace): void {
  console.log(`${w.name}: memory ${gib(w.limits.memoryBytes)}, ${w.limits.pids} processes and threads, CPU weight ${w.limits.cpuWeight}, disk ${diskText(w)}`);
}

/** With `space` (space.get): what deleting each would free, and the pool's free space. */
export function printWorkspaces(list: Workspace[], space: SpaceReport | null = null): void {
  if (list.length === 0) {
    console.log('No workspaces yet. Create one with: grove ws create NAME');
    return;
  }
  const freed = (w: Workspace) => {
    const held = space?.branches.find((b) => b.workspace === w.id);
    return held ? [`${mib(held.exclusiveBytes)} MiB`] : space ? ['-'] : [];
  };
  console.log(['ID', 'NAME', 'STATE', ...(space ? ['FREED IF DELETED'] : []), 'DESKTOP', 'PORTS'].join('\t'));
  for (const w of list) console.log([w.id, w.name, w.state, ...freed(w), w.vncSocket ?? '-', ports(w)].join('\t'));
  if (space) console.log(describePool(space.pool));
  for (const w of list) if (w.exitReason) console.log(`${w.name} exited: ${w.exitReason}`);
}

export function printForkReport(r: ForkReport): void {
  for (const child of r.children) console.log(`${child.id}\t${child.name}\t${child.vncSocket ?? '-'}\t${ports(child)}`);
  if (r.version) console.log(`restored from version ${r.version}; the source was not touched`);
  console.log(describeTimings(r.timings));
  if (r.readyMs.length > 1) console.log(`on screen after: ${r.readyMs.map((ms, i) => `${r.children[i]?.name ?? i} ${Math.round(ms)} ms`).join(' · ')}`);
  console.log(`memory: ${r.memory}`);
  const criu = describeCriu(r.criu);
  if (criu) console.log(criu);
  for (const note of [...r.carried, ...r.leftBehind]) console.log(`note: ${note}`);
}

/** CRIU's own account of the dump and the restores (docs/fork-profile.md reads these). */
function describeCriu(c: ForkReport['criu']): string | null {
  const parts: string[] = [];
  if (c.dump) {
    const d = c.dump;
    parts.push(
      `dump: seize ${d.freezingMs} ms, frozen ${d.sourceFrozenMs - d.freezingMs} ms (memory ${d.memdumpMs} ms, written ${d.memwriteMs} ms, ${d.pagesWritten} of ${d.pagesScanned} pages)`,
    );
  }
  const restores = c.restores.filter((x) => x !== null);
  if (restores.length > 0) parts.push(`restore: ${restores.map((x) => `${x.restoreMs} ms (fork ${x.forkingMs} ms, ${x.pagesRestored} pages)`).join(', ')}`);
  return parts.length > 0 ? `criu ${parts.join(' · ')}` : null;
}

function describeTimings(t: ForkReport['timings']): string {
  const ms = (n: number) => `${Math.round(n)} ms`;
  // A fork from a version dumps nothing: no dump to tell of.
  const dump = t.dump > 0 ? ` · dump ${ms(t.dump)} (source frozen ${ms(t.sourceFrozen)})` : '';
  return `prepare ${ms(t.prepare)}${dump} · restore ${ms(t.restore)} · expose ${ms(t.expose)} (first frame ${ms(t.firstFrame)}) · total ${ms(t.total)}`;
}

const mib = (bytes: number) => (bytes / 2 ** 20).toFixed(1);

/** How many of the last forks `grove stats` lists. */
const STATS_FORKS = 5;

export function printStats(p: PerfReport): void {
  const h = p.host;
  console.log(
    `host: ${mib(h.availableBytes)} of ${mib(h.totalBytes)} MiB available · KSM ${h.ksm.run === 1 ? 'on' : 'off'}, ` +
      `saving ${mib(h.ksm.pagesSharing * h.pageBytes)} MiB (${h.ksm.fullScans} full scans)`,
  );
  console.log(describePool(p.pool));
  console.log(`networks prepared ahead for new branches: ${p.prepared.ready.length} of ${p.prepared.kept}`);
  console.log(describeStandbys(p.standbys));
  console.log();
  if (p.branches.length === 0) console.log('No branch is running.');
  else {
    console.log(['BRANCH', 'PSS MiB', 'KSM MiB', 'PROCESSES', 'LIMIT MiB', 'AT LIMIT', 'OOM KILLS', 'FORKS REFUSED'].join('\t'));
    for (const b of p.branches) {
      const c = b.cgroup;
      console.log(
        [
          b.name,
          mib(b.pssBytes),
          mib(b.ksm.sharedBytes),
          `${b.processes}/${c.limits.pids}`,
          mib(c.limits.memoryBytes),
          c.memoryLimitHits,
          c.oomKills,
          c.pidsRefused,
        ].join('\t'),
      );
    }
  }
  console.log();
  if (p.forks.length === 0) console.log('No forks yet.');
  for (const f of p.forks.slice(0, STATS_FORKS)) console.log(`${f.at}\t${f.source.name} into ${f.copies}\t${describeTimings(f.timings)}`);
}

export function describePool(pool: PoolSpace): string {
  const line = `pool: ${mib(pool.freeBytes)} of ${mib(pool.totalBytes)} MiB free`;
  return pool.low ? `${line}: LOW, forks and checkpoints will soon be refused; see grove space for what to delete` : line;
}

/** The versions kept restored and frozen for forks (GROVE_STANDBY_BUDGET_MIB), in one line. */
export function describeStandbys(standbys: PerfReport['standbys']): string {
  if (standbys.length === 0) return 'standbys of versions: none';
  const each = standbys.map((s) => `${s.version} (${mib(s.pssBytes)} MiB, ${s.ageSeconds} s old)`);
  return `standbys of versions: ${each.join(', ')}`;
}

/** The pool, then branches and versions by what deleting each would free, most first. */
export function printSpace(r: SpaceReport): void {
  console.log(describePool(r.pool));
  const byFreed = <T extends { exclusiveBytes: number }>(rows: T[]) => [...rows].sort((a, b) => b.exclusiveBytes - a.exclusiveBytes);
  console.log();
  console.log(['BRANCH', 'STATE', 'FREED IF DELETED MiB', 'REFERS TO MiB'].join('\t'));
  for (const b of byFreed(r.branches)) console.log([b.name, b.state, mib(b.exclusiveBytes), mib(b.totalBytes)].join('\t'));
  console.log();
  if (r.versions.length === 0) console.log('No versions.');
  else {
    console.log(['VERSION', 'OF', 'LABEL', 'FREED IF DELETED MiB', 'REFERS TO MiB'].join('\t'));
    const of = (v: SpaceReport['versions'][number]) =>
      v.orphanOf !== null ? `${v.orphanOf} (deleted)` : (r.branches.find((b) => b.workspace === v.workspace)?.name ?? v.workspace ?? '-');
    for (const v of byFreed(r.versions)) console.log([v.version, of(v), v.label ?? '-', mib(v.exclusiveBytes), mib(v.totalBytes)].join('\t'));
  }
  if (r.forkPoints.length > 0) {
    console.log();
    console.log(['FORK POINT', 'OF', 'FREED IF DELETED MiB', 'REFERS TO MiB'].join('\t'));
    for (const f of byFreed(r.forkPoints))
      console.log(
        [f.forkPoint, r.branches.find((b) => b.workspace === f.source)?.name ?? `${f.source} (deleted)`, mib(f.exclusiveBytes), mib(f.totalBytes)].join('\t'),
      );
    console.log('(a fork point goes with the last branch or version forked from it: it is their merge base)');
  }
  console.log('\nDelete with: grove ws rm BRANCH, grove versions rm VERSION');
}

export function printDiff(d: TreeDiff, statOnly: boolean): void {
  for (const p of d.added) console.log(`A ${p}`);
  for (const p of d.changed) console.log(`M ${p}`);
  for (const p of d.removed) console.log(`D ${p}`);
  if (d.added.length + d.changed.length + d.removed.length === 0) console.log('no differences');
  if (statOnly) return;
  for (const t of d.textDiffs) console.log(`\n${t.diff}`);
  if (d.truncated) console.log('\n(more text diffs were left out)');
}

/** Branches drawn as a tree under each workspace's first branch, main line marked with '*'. */
export function printTree(branches: Workspace[], versions: Version[]): void {
  if (branches.length === 0) {
    console.log('No workspaces yet. Create one with: grove ws create NAME');
    return;
  }
  const children = new Map<string | null, Workspace[]>();
  const ids = new Set(branches.map((b) => b.id));
  for (const b of branches) {
    const parent = b.parent !== null && ids.has(b.parent) ? b.parent : null;
    children.set(parent, [...(children.get(parent) ?? []), b]);
  }
  const draw = (b: Workspace, prefix: string, last: boolean, top: boolean) => {
    const own = versions.filter((v) => v.branch === b.id).map((v) => v.id);
    const line = `${b.main ? '*' : ' '} ${b.name} (${b.id}) ${b.state}${b.version ? ` from ${b.version}` : ''}${own.length ? ` versions: ${own.join(', ')}` : ''}`;
    console.log(top ? line : `${prefix}${last ? '└─' : '├─'}${line}`);
    const kids = children.get(b.id) ?? [];
    kids.forEach((k, i) => draw(k, top ? '' : `${prefix}${last ? '  ' : '│ '}`, i === kids.length - 1, false));
  };
  for (const root of children.get(null) ?? []) draw(root, '', true, true);
}

// egress

const dest = (host: string, port: number) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

export function printEgressStatus(s: EgressStatus): void {
  const p = s.policy;
  console.log(`policy:   ${p.mode}${p.holdMutating ? ' (mutating HTTP requests held)' : ''}`);
  console.log(`allow:    ${p.allow.length ? p.allow.map((r) => (r.port === undefined ? r.host : dest(r.host, r.port))).join(' ') : '(none)'}`);
  console.log(`dropped:  tcp ${s.dropped.tcp} · udp ${s.dropped.udp} · other ${s.dropped.other} (packets)`);
}

export function printEgressLog(entries: EgressLogEntry[]): void {
  if (entries.length === 0) {
    console.log('No egress attempts yet.');
    return;
  }
  for (const e of entries) {
    const what = e.url ?? dest(e.host, e.port);
    const times = e.count > 1 ? ` ×${e.count} (within a minute)` : '';
    console.log(`${e.at}\t${e.workspaceName}\t${e.method} ${what}\t${e.verdict}${times}\tby ${e.decidedBy}${e.detail ? `\t${e.detail}` : ''}`);
  }
}

/** A workspace's detached runs, or one's output as it is (grove exec --log). */
export function printDetachedRuns(log: { runs: DetachedRun[]; output: string | null }): void {
  if (log.output !== null) {
    process.stdout.write(log.output);
    return;
  }
  if (log.runs.length === 0) console.log('No runs detached in this workspace.');
  for (const r of log.runs) console.log(`${r.id}\t${r.exitStatus === null ? 'running' : `exit ${r.exitStatus}`}\t${r.command}`);
}
