// Your own work in a workspace, measured against what a person would do
// without Grove (issue 41), each pair alternating so both see the same load:
//   pull     an image of ~500 MiB from a local registry (TLS, basic auth) into
//            Grove, against `skopeo copy` to an OCI layout plus `umoci unpack`
//            of it, both into the pool's filesystem;
//   project  a folder of 20,000 files and 300 MiB copied into a running branch
//            (the path a --project copy takes), against `cp -a` of it into the
//            pool's filesystem;
//   fork     a branch of an image built from a Containerfile (FROM
//            grove/desktop) forked into one, against the desktop itself.
import { copyFile, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';
import type { HelperClient } from '../../main/src/helper-client/client.js';
import type { Workspace } from '../src/protocol/entities.js';
import { startRegistry, type TestRegistry } from '../test/system/test-registry.js';
import type { OwnWork, OwnWorkPair } from './result-schema.js';
import { round, summarize } from './stats.js';

/** Where the image's files come from: a host folder of real, variously compressible files (Debian's shared libraries). */
const PAYLOAD_SOURCE = '/usr/lib/x86_64-linux-gnu';
const PAYLOAD_BYTES = 500 * 2 ** 20;
const PROJECT_FILES = 20_000;
const PROJECT_BYTES = 300 * 2 ** 20;

export interface OwnWorkSetting {
  client: HelperClient;
  /** The bench's desktop source, running. */
  desktop: Workspace;
  /** The pool's mount point: where the baselines write, as Grove does. */
  poolDir: string;
  /** Scratch room on the host for the payload and the project. */
  workDir: string;
  rounds: number;
  proceed: () => void;
  log: (msg: string) => void;
  /** Waits until a new branch's desktop is up. */
  desktopUp: (ws: Workspace) => Promise<void>;
}

export async function measureOwnWork(s: OwnWorkSetting): Promise<OwnWork> {
  const errors: string[] = [];
  const registry = await startRegistry();
  const work = await mkdtemp(path.join(s.workDir, 'grove-bench-own-'));
  try {
    const pull = await pulls(s, registry, work, errors);
    const project = await projects(s, work, errors);
    const fork = await forks(s, work, errors);
    return { pull, project, fork, errors };
  } finally {
    await registry.stop();
    await rm(work, { recursive: true, force: true });
  }
}

/** Grove's image.pull against skopeo copy + umoci unpack, of one image pushed to the registry first. */
async function pulls(s: OwnWorkSetting, registry: TestRegistry, work: string, errors: string[]): Promise<OwnWork['pull']> {
  const c = s.client;
  const context = path.join(work, 'payload');
  const bytes = await copyPayload(PAYLOAD_SOURCE, context, PAYLOAD_BYTES);
  await writeFile(path.join(work, 'Containerfile'), 'FROM scratch\nCOPY . /payload/\n');
  s.log(`own work: building a ${Math.round(bytes / 2 ** 20)} MiB image and pushing it to the registry on ${registry.host}`);
  await c.request('image.build', { name: 'bench-payload', containerfile: path.join(work, 'Containerfile'), context });
  const ref = `docker://${registry.host}/bench/payload:1`;
  const credentials = { username: registry.username, password: registry.password };
  await c.request('image.push', { name: 'bench-payload', ref, credentials });
  await c.request('image.remove', { name: 'bench-payload' });
  const grove: number[] = [];
  const baseline: number[] = [];
  const groveStages: StageSamples = {};
  const otherStages: StageSamples = {};
  for (let i = 0; i < s.rounds; i++) {
    s.proceed();
    const clock = stageClock(c, `bench-pulled-${i}`);
    await timed(grove, errors, 'grove pull', async () => {
      await c.request('image.pull', { name: `bench-pulled-${i}`, ref, credentials });
      addStages(groveStages, clock.stages());
    }).finally(() => {
      clock.stop();
      return c.request('image.remove', { name: `bench-pulled-${i}` }).catch(() => undefined);
    });
    const layout = path.join(s.poolDir, `bench-layout-${i}`);
    const bundle = path.join(s.poolDir, `bench-bundle-${i}`);
    await timed(baseline, errors, 'skopeo + umoci', async () => {
      const t0 = performance.now();
      await execa('skopeo', ['copy', '--authfile', registry.authFile, ref, `oci:${layout}:img`]);
      const t1 = performance.now();
      await execa('umoci', ['unpack', '--image', `${layout}:img`, bundle]);
      addStages(otherStages, { 'skopeo copy': t1 - t0, 'umoci unpack': performance.now() - t1 });
    }).finally(() => Promise.all([rm(layout, { recursive: true, force: true }), rm(bundle, { recursive: true, force: true })]));
    s.log(
      `own work: pull ${i + 1}/${s.rounds}: Grove ${ms(grove.at(-1))} (${fmtStages(groveStages)}), skopeo + umoci ${ms(baseline.at(-1))} (${fmtStages(otherStages)})`,
    );
  }
  return { imageMiB: round(bytes / 2 ** 20, 1), ...pair(grove, baseline), stagesMs: { grove: groveStages, other: otherStages } };
}

type StageSamples = Record<string, number[]>;

/**
 * How long each of the helper's stages of one pull took, from its progress
 * events: a stage lasts from its first event to the next stage's first (the
 * last one to the moment stages() is called, when the call has returned).
 */
function stageClock(c: HelperClient, image: string) {
  const began: { stage: string; at: number }[] = [];
  const stop = c.on('progress', (ev) => {
    if (ev.image === image && began.at(-1)?.stage !== ev.stage) began.push({ stage: ev.stage, at: performance.now() });
  });
  const stages = () => {
    const end = performance.now();
    const out: Record<string, number> = {};
    began.forEach((b, i) => (out[b.stage] = (out[b.stage] ?? 0) + (began[i + 1]?.at ?? end) - b.at));
    return out;
  };
  return { stages, stop };
}

function addStages(into: StageSamples, one: Record<string, number>): void {
  for (const [stage, took] of Object.entries(one)) (into[stage] ??= []).push(round(took, 1));
}

function fmtStages(all: StageSamples): string {
  return Object.entries(all)
    .map(([stage, samples]) => `${stage} ${ms(samples.at(-1))}`)
    .join(', ');
}

/** A copy into the running desktop (file.copyIn, as a project's) against cp -a into the pool's filesystem. */
async function projects(s: OwnWorkSetting, work: string, errors: string[]): Promise<OwnWorkPair & { files: number; mib: number }> {
  const project = path.join(work, 'project');
  await makeProject(project);
  const grove: number[] = [];
  const cp: number[] = [];
  for (let i = 0; i < s.rounds; i++) {
    s.proceed();
    await sync();
    await timed(grove, errors, 'grove copy', async () => {
      await s.client.request('file.copyIn', { workspace: s.desktop.id, from: project, to: `/root/bench-project-${i}` });
    }).finally(() => s.client.request('exec.run', { workspace: s.desktop.id, argv: ['rm', '-rf', `/root/bench-project-${i}`] }).catch(() => undefined));
    await sync();
    const target = path.join(s.poolDir, `bench-cp-${i}`);
    await timed(cp, errors, 'cp -a', async () => {
      await execa('cp', ['-a', project, target]);
    }).finally(() => rm(target, { recursive: true, force: true }));
    s.log(`own work: project copy ${i + 1}/${s.rounds}: Grove ${ms(grove.at(-1))}, cp -a ${ms(cp.at(-1))}`);
  }
  return { files: PROJECT_FILES, mib: round(PROJECT_BYTES / 2 ** 20, 1), ...pair(grove, cp) };
}

/** Forks into one of a branch of an image built from a Containerfile, and of the desktop, alternating. */
async function forks(s: OwnWorkSetting, work: string, errors: string[]): Promise<OwnWorkPair> {
  const c = s.client;
  await writeFile(path.join(work, 'Containerfile.own'), 'FROM grove/desktop\nRUN echo built for the benchmark > /opt/bench.txt\n');
  await c.request('image.build', { name: 'bench-own', containerfile: path.join(work, 'Containerfile.own') });
  const own = await c.request('workspace.create', { name: 'bench-own', image: 'bench-own' });
  try {
    await s.desktopUp(own);
    const ownMs: number[] = [];
    const desktopMs: number[] = [];
    // Forks vary more than copies do: four times the rounds, alternating, so both sides see the same load.
    for (let i = 0; i < s.rounds * 4; i++) {
      for (const [source, into] of [
        [own, ownMs],
        [s.desktop, desktopMs],
      ] as const) {
        s.proceed();
        await timed(into, errors, `fork of ${source.name}`, async () => {
          const report = await c.request('branch.fork', { workspace: source.id, copies: 1, names: [`bench-of-${source.name}-${i}`] });
          for (const child of report.children) await c.request('workspace.delete', { workspace: child.id });
          return report.timings.total;
        });
        await sleep(1000);
      }
      s.log(`own work: fork ${i + 1}/${s.rounds * 4}: own image ${ms(ownMs.at(-1))}, desktop ${ms(desktopMs.at(-1))}`);
    }
    return pair(ownMs, desktopMs);
  } finally {
    await c.request('workspace.delete', { workspace: own.id }).catch(() => undefined);
    await c.request('image.remove', { name: 'bench-own' }).catch(() => undefined);
  }
}

/** Pushes how long `work` took (its own figure if it returns one, else the wall time); a failure is recorded and the run goes on. */
async function timed(into: number[], errors: string[], what: string, work: () => Promise<number | void>): Promise<void> {
  const t0 = performance.now();
  try {
    const own = await work();
    into.push(round(typeof own === 'number' ? own : performance.now() - t0, 1));
  } catch (err) {
    errors.push(`${what}: ${(err as Error).message}`);
  }
}

function pair(grove: number[], other: number[]): OwnWorkPair {
  const g = grove.length > 0 ? summarize(grove) : null;
  const o = other.length > 0 ? summarize(other) : null;
  return { groveMs: grove, otherMs: other, groveP50: g?.p50 ?? null, otherP50: o?.p50 ?? null, ratio: g && o && o.p50 > 0 ? round(g.p50 / o.p50, 3) : null };
}

/** Copies files of `from` (in name order) into `to` until `bytes`; returns the bytes copied. */
async function copyPayload(from: string, to: string, bytes: number): Promise<number> {
  let total = 0;
  const files = (await readdir(from, { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
  for (const file of files.sort()) {
    if (total >= bytes) break;
    const target = path.join(to, path.relative(from, file));
    await mkdir(path.dirname(target), { recursive: true });
    await copyFile(file, target);
    total += (await stat(target)).size;
  }
  return total;
}

/** PROJECT_FILES files of PROJECT_BYTES in all, in 100 folders: most small, a hundred big, none compressible. */
async function makeProject(dir: string): Promise<void> {
  const big = 100;
  const bigBytes = Math.floor((PROJECT_BYTES * 0.8) / big);
  const smallBytes = Math.floor((PROJECT_BYTES * 0.2) / (PROJECT_FILES - big));
  const script = `
import os, sys
root, files, big, big_bytes, small_bytes = sys.argv[1], *map(int, sys.argv[2:])
for i in range(files):
    d = os.path.join(root, f'pkg{i % 100:02d}')
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, f'f{i:05d}.bin'), 'wb') as f:
        f.write(os.urandom(big_bytes if i < big else small_bytes))
`;
  await execa('python3', ['-c', script, dir, String(PROJECT_FILES), String(big), String(bigBytes), String(smallBytes)]);
}

/** Writes back what is dirty, so neither side of a copy pays for the other's writes. */
async function sync(): Promise<void> {
  await execa('sync');
}

function ms(x: number | undefined): string {
  return x === undefined ? 'failed' : `${Math.round(x)} ms`;
}
