// Your own work in a workspace, for real: images built from Containerfiles
// with buildah, pushed to and pulled from a real registry (TLS, basic auth)
// and from archives with skopeo, into Grove's OCI storage on the pool; hostile
// layers and a tar bomb; a project copied in; files copied in and out of a
// running branch, while the branch swaps links under the copy.
import { createHash, randomBytes } from 'node:crypto';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, statfs, truncate, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Image, Workspace } from '../../src/protocol/entities.js';
import type { GroveError } from '../../src/protocol/wire.js';
import { agentUserNames, runAs, testUser, type TestUser, CALL, withScope } from './agent-users.js';
import { REPO } from './helper-process.js';
import { connect, instance, sh, track } from './support.js';
import { startRegistry, type TestRegistry } from './test-registry.js';

const HOSTILE = path.join(REPO, 'privileged-helper/test/system/fixtures/hostile-image.py');
const GROVE = path.join(REPO, 'main/bin/grove');

/** What a call failed with (null if it did not fail). */
async function failure(p: Promise<unknown>): Promise<GroveError | null> {
  return p.then(
    () => null,
    (err: unknown) => err as GroveError,
  );
}

/** Bytes used in the pool's filesystem. */
async function poolUsed(): Promise<number> {
  const s = await statfs(`${instance().stateDir}/pool`);
  return (s.blocks - s.bfree) * s.bsize;
}

/**
 * The bytes of file data the pool holds, once what was deleted is committed.
 * Not statfs's used space: that also counts the chunks btrfs allocates for
 * its metadata as the pool grows, tens of MiB at a time.
 */
async function poolDataUsed(): Promise<number> {
  const pool = `${instance().stateDir}/pool`;
  // Subvolumes removed before (images' layers, branches) are freed by btrfs's cleaner in its own time: waited for, so
  // that what is measured is what was written.
  await execa('btrfs', ['subvolume', 'sync', pool]);
  await execa('btrfs', ['filesystem', 'sync', pool]);
  const used = /^Data, [^:]+: total=\d+, used=(\d+)$/m.exec((await execa('btrfs', ['filesystem', 'df', '-b', pool])).stdout)?.[1];
  if (used === undefined) throw new Error(`btrfs filesystem df says no data use for ${pool}`);
  return Number(used);
}

describe('images of your own, projects, and files in and out', () => {
  let client: HelperClient;
  let registry: TestRegistry;
  let work: string;
  let canary: string;
  const made: string[] = [];

  /** The grove CLI as root against the test helper. */
  const grove = (...args: string[]) => execa(GROVE, ['--socket', instance().socketPath, ...args], { reject: false, all: true });

  async function containerfile(name: string, text: string, files: Record<string, string | Buffer> = {}): Promise<string> {
    const dir = path.join(work, name);
    await mkdir(dir, { recursive: true });
    for (const [file, data] of Object.entries(files)) await writeFile(path.join(dir, file), data);
    await writeFile(path.join(dir, 'Containerfile'), text);
    return path.join(dir, 'Containerfile');
  }

  async function create(name: string, image: string, project?: { hostPath: string; path?: string }): Promise<Workspace> {
    const ws = await track(await client.request('workspace.create', { name, image, ...(project && { project }) }));
    made.push(ws.id);
    return ws;
  }

  /** Nothing of a refused image: no record, nothing staged, nothing in the canary folder. */
  async function expectNothingOf(name: string): Promise<void> {
    expect((await client.request('image.list', {})).map((i) => i.name)).not.toContain(name);
    expect(await readdir(`${instance().stateDir}/pool/incoming`)).toEqual([]);
    expect(await readdir(canary)).toEqual([]);
  }

  beforeAll(async () => {
    client = await connect('images');
    registry = await startRegistry();
    work = await mkdtemp('/var/tmp/grove-images-test-');
    canary = await mkdtemp('/var/tmp/grove-canary-');
    await writeFile(path.join(work, 'secret'), 'host secret\n');
  });

  afterAll(async () => {
    for (const id of made.reverse()) await client.request('workspace.delete', { workspace: id }).catch(() => undefined);
    for (const img of await client.request('image.list', {})) {
      if (img.name !== 'desktop') await client.request('image.remove', { name: img.name }).catch(() => undefined);
    }
    client.close();
    await registry?.stop();
    await rm(work, { recursive: true, force: true });
    await rm(canary, { recursive: true, force: true });
  });

  describe('built from a Containerfile', () => {
    it('builds FROM grove/desktop a package and a file, streams each step, and a workspace and its fork have both', async () => {
      const deb = await tinyPackage(work);
      const file = await containerfile(
        'pkg',
        'FROM grove/desktop\nARG MOTD=unset\nCOPY grove-test-tool.deb /tmp/\nRUN dpkg -i /tmp/grove-test-tool.deb && rm /tmp/grove-test-tool.deb\nRUN echo "$MOTD" > /etc/grove-test-motd\n',
        { 'grove-test-tool.deb': await readFile(deb) },
      );
      const built = await grove('image', 'build', 'pkg', '-f', file, '--build-arg', 'MOTD=built by the test');
      expect(built.exitCode, built.all).toBe(0);
      expect(built.all).toMatch(/\[build\] STEP 3\/5: COPY grove-test-tool\.deb/);
      expect(built.all).toMatch(/\[build\] Setting up grove-test-tool/);
      const image = (await client.request('image.list', {})).find((i) => i.name === 'pkg')!;
      expect(image).toMatchObject({ state: 'ready', origin: 'containerfile', source: file, reference: 'localhost/grove/pkg:latest', missing: [] });
      expect(image.layers).toBeGreaterThanOrEqual(3);
      // Its base is grove/desktop's layer, stored once.
      expect(image.sharedBytes).toBeGreaterThan(500 * 2 ** 20);

      const ws = await create('img-pkg', 'pkg');
      const check = "grove-test-tool && cat /etc/grove-test-motd && dpkg-query -W -f '${Status}\\n' grove-test-tool";
      const expected = 'grove test tool works\nbuilt by the test\ninstall ok installed\n';
      expect(await sh(client, ws, check)).toBe(expected);
      const fork = await client.request('branch.fork', { workspace: ws.id, copies: 2 });
      for (const child of fork.children) {
        made.push(child.id);
        await track(child);
        expect(child.image).toBe('pkg');
        expect(await sh(client, child, check)).toBe(expected);
      }
      // Not while it is used.
      expect(await failure(client.request('image.remove', { name: 'pkg' }))).toMatchObject({
        code: 'E_CONFLICT',
        message: expect.stringContaining("used by 'img-pkg'"),
      });
    });

    it('refuses a Containerfile without FROM, and a RUN that fails saying which step; nothing is left', async () => {
      const noFrom = await failure(client.request('image.build', { name: 'no-from', containerfile: await containerfile('no-from', 'RUN true\n') }));
      expect(noFrom?.code).toBe('E_HOST');
      expect(noFrom?.message).toMatch(/FROM/i);
      await expectNothingOf('no-from');
      const failing = await failure(
        client.request('image.build', {
          name: 'run-fails',
          containerfile: await containerfile('run-fails', 'FROM grove/desktop\nRUN echo first\nRUN exit 7\n'),
        }),
      );
      expect(failing?.message).toMatch(/STEP 3\/3: RUN exit 7|RUN exit 7/);
      expect(failing?.message).toMatch(/exit status 7/);
      await expectNothingOf('run-fails');
    });

    it("reads the Containerfile and its context as the caller: a missing one, a folder, or Grove's own name are refused", async () => {
      expect(await failure(client.request('image.build', { name: 'nope', containerfile: path.join(work, 'missing/Containerfile') }))).toMatchObject({
        code: 'E_NOT_FOUND',
      });
      expect(await failure(client.request('image.build', { name: 'nope', containerfile: work }))).toMatchObject({
        code: 'E_INVALID_PARAMS',
        message: expect.stringContaining('is a folder, not a file'),
      });
      expect(
        await failure(client.request('image.build', { name: 'desktop', containerfile: await containerfile('named-desktop', 'FROM grove/desktop\n') })),
      ).toMatchObject({
        code: 'E_INVALID_PARAMS',
        message: expect.stringContaining("Grove's own image"),
      });
    });
  });

  describe('pushed to and pulled from a registry', () => {
    let base: string;

    it('pushes two images sharing a base, and the second pull adds only its own layer', async () => {
      // The base holds 64 MiB that compresses to nothing less: it is what sharing saves.
      base = await containerfile('base', 'FROM scratch\nCOPY busybox /bin/busybox\nCOPY ballast /ballast\n', {
        busybox: await readFile('/bin/busybox'),
        ballast: randomBytes(64 << 20),
      });
      await client.request('image.build', { name: 'base', containerfile: base });
      for (const name of ['img-a', 'img-b']) {
        await client.request('image.build', {
          name,
          containerfile: await containerfile(name, `FROM grove/base\nCOPY ${name}.txt /${name}.txt\n`, { [`${name}.txt`]: `${name}\n` }),
        });
        const pushed = await grove('image', 'push', name, `docker://${registry.host}/grove-test/${name}:v1`, '--authfile', registry.authFile);
        expect(pushed.exitCode, pushed.all).toBe(0);
      }
      for (const name of ['img-a', 'img-b', 'base']) await client.request('image.remove', { name });
      const before = await poolUsed();
      const a = await grove('image', 'pull', 'img-a', `docker://${registry.host}/grove-test/img-a:v1`, '--authfile', registry.authFile);
      expect(a.exitCode, a.all).toBe(0);
      const afterA = await poolUsed();
      const b = await grove('image', 'pull', 'img-b', `docker://${registry.host}/grove-test/img-b:v1`, '--authfile', registry.authFile);
      expect(b.exitCode, b.all).toBe(0);
      const afterB = await poolUsed();
      expect(afterA - before).toBeGreaterThan(60 * 2 ** 20);
      expect(afterB - afterA).toBeLessThan(16 * 2 ** 20);
      const listed = (await client.request('image.list', {})).filter((i) => i.name === 'img-a' || i.name === 'img-b');
      for (const img of listed) {
        expect(img).toMatchObject({ origin: 'pull', layers: 3 });
        expect(img.sharedBytes).toBeGreaterThan(60 * 2 ** 20);
        // Not a desktop: said at once, and again when a workspace is asked of it.
        expect(img.missing).toContain('Xvnc (package tigervnc-standalone-server)');
      }
      const refused = await failure(client.request('workspace.create', { name: 'not-a-desktop', image: 'img-a' }));
      expect(refused).toMatchObject({ code: 'E_PRECONDITION', message: expect.stringMatching(/has no desktop session: it lacks .*Xvnc.*FROM grove\/desktop/) });
      expect((await client.request('workspace.list', {})).map((w) => w.name)).not.toContain('not-a-desktop');
    });

    it('pulls by digest, and refuses a digest the registry has not', async () => {
      const a = (await client.request('image.list', {})).find((i) => i.name === 'img-a')!;
      const digest = a.digest!;
      const byDigest = await grove('image', 'pull', 'img-a2', `docker://${registry.host}/grove-test/img-a@${digest}`, '--authfile', registry.authFile);
      expect(byDigest.exitCode, byDigest.all).toBe(0);
      expect((await client.request('image.list', {})).find((i) => i.name === 'img-a2')).toMatchObject({ digest, id: a.id });
      const other = `sha256:${createHash('sha256').update('not this image').digest('hex')}`;
      const wrong = await grove('image', 'pull', 'img-a3', `docker://${registry.host}/grove-test/img-a@${other}`, '--authfile', registry.authFile);
      expect(wrong.exitCode).toBe(2);
      expect(wrong.all).toMatch(/the registry has no such image or tag/);
      await expectNothingOf('img-a3');
    });

    it('refuses wrong credentials, an unknown registry and an archive whose blob does not match its digest', async () => {
      const wrong = await grove('image', 'pull', 'bad-auth', `docker://${registry.host}/grove-test/img-a:v1`, '--authfile', registry.wrongAuthFile);
      expect(wrong.all).toMatch(/the registry refused the credentials/);
      await expectNothingOf('bad-auth');
      const none = await grove('image', 'pull', 'bad-host', 'docker://127.0.0.1:1/grove-test/img-a:v1');
      expect(none.all).toMatch(/could not be reached/);
      await expectNothingOf('bad-host');
      // An archive whose layer was changed after its digest was taken.
      const archive = path.join(work, 'tampered.tar');
      await execa('python3', [HOSTILE, archive, 'setuid', canary]);
      const tampered = await tamperLayer(archive, work);
      const mismatch = await failure(client.request('image.pull', { name: 'tampered', ref: `oci-archive:${tampered}` }));
      expect(mismatch?.message).toMatch(/does not match the digest|Digest did not match/i);
      await expectNothingOf('tampered');
    });
  });

  describe('hostile layers', () => {
    const confined = ['devices', 'setuid', 'dotdot-name', 'absolute-name', 'whiteouts'];
    // long-paths: past what the image storage could remove again (unpacked-size.ts)
    const refused = ['absolute-symlink', 'dotdot-symlink', 'hardlink-out', 'long-paths'];

    it.each([...confined, ...refused])('unpacks a layer with %s inside the image only, or refuses it', async (kind) => {
      const archive = path.join(work, `${kind}.tar`);
      await execa('python3', [HOSTILE, archive, kind, canary]);
      const passwd = await readFile('/etc/passwd', 'utf8');
      const name = `h-${kind}`;
      const result = await failure(client.request('image.pull', { name, ref: `oci-archive:${archive}` }));
      expect(await readdir(canary)).toEqual([]);
      expect(await readFile('/etc/passwd', 'utf8')).toBe(passwd);
      if (refused.includes(kind)) {
        expect(result).toMatchObject({ code: 'E_INVALID_PARAMS', message: expect.stringContaining('a layer could not be unpacked inside the image') });
        await expectNothingOf(name);
        return;
      }
      expect(result).toBeNull();
      const lower = await lowerOf(name);
      if (kind === 'whiteouts') {
        await expect(stat(path.join(lower, 'gone.txt'))).rejects.toThrow();
        expect(await readdir(path.join(lower, 'opaque'))).toEqual(['new.txt']);
      }
      if (kind === 'dotdot-name') expect(await readdir(path.join(lower, canary))).toEqual(['by-dotdot-name']);
      if (kind === 'absolute-name') expect(await readdir(path.join(lower, canary))).toEqual(['by-absolute-name']);
      await client.request('image.remove', { name });
    });

    it('refuses a tar bomb with E_NO_SPACE before unpacking anything, and keeps nothing of it', async () => {
      const archive = path.join(work, 'bomb.tar');
      await execa('python3', [HOSTILE, archive, 'bomb', canary]);
      const before = await poolDataUsed();
      const bomb = await failure(client.request('image.pull', { name: 'bomb', ref: `oci-archive:${archive}` }));
      expect(bomb).toMatchObject({ code: 'E_NO_SPACE', message: expect.stringMatching(/unpacks to more than \d+ MiB.*nothing was unpacked/) });
      await expectNothingOf('bomb');
      expect((await poolDataUsed()) - before).toBeLessThan(32 * 2 ** 20);
      await rm(archive);
    });
  });

  describe('a project, and files in and out', () => {
    let ws: Workspace;
    let repo: string;

    it('copies a git repository in when the workspace is made, owned by the branch root, and keeps where it came from', async () => {
      repo = path.join(work, 'repo');
      await mkdir(path.join(repo, 'src'), { recursive: true });
      await writeFile(path.join(repo, 'app.py'), "print('hi')\n");
      await writeFile(path.join(repo, 'src/lib.txt'), 'lib\n');
      await chmod(path.join(repo, 'app.py'), 0o755);
      const git = (...args: string[]) => execa('git', ['-C', repo, '-c', 'user.name=t', '-c', 'user.email=t@example.test', ...args]);
      await git('init', '-q', '-b', 'trunk');
      await git('add', '-A');
      await git('commit', '-qm', 'first');
      const head = (await git('rev-parse', 'HEAD')).stdout.trim();
      ws = await create('img-proj', 'desktop', { hostPath: repo });
      expect(ws.project).toMatchObject({ hostPath: repo, path: '/root/work', commit: head, gitBranch: 'trunk' });
      expect(await sh(client, ws, 'cd /root/work && stat -c "%U:%G %a %n" app.py src/lib.txt && test -d .git && echo has-git')).toBe(
        'root:root 755 app.py\nroot:root 644 src/lib.txt\nhas-git\n',
      );
      // Every branch of the workspace has the same origin.
      const fork = await client.request('branch.fork', { workspace: ws.id, copies: 1 });
      made.push(fork.children[0]!.id);
      await track(fork.children[0]!);
      expect(fork.children[0]!.project).toEqual(ws.project);
    });

    it("exports the branch's changes as one commit on the origin, as a new branch or a patch, never touching the checkout", async () => {
      const git = (...args: string[]) => execa('git', ['-C', repo, ...args]).then((r) => r.stdout);
      const origin = ws.project!.commit!;
      await sh(
        client,
        ws,
        `cd /root/work && printf "print('changed')\\n" > app.py && rm src/lib.txt && printf '\\000\\001bin' > data.bin && ln -s app.py link.py && echo '*.log' > .gitignore && echo noise > run.log`,
      );
      // The person's repository is dirty: its work tree, index and HEAD stay exactly as they are.
      await writeFile(path.join(repo, 'uncommitted.txt'), 'mine\n');
      const before = {
        head: await git('rev-parse', 'HEAD'),
        branch: await git('symbolic-ref', 'HEAD'),
        status: await git('status', '--porcelain'),
        index: await readFile(path.join(repo, '.git/index')),
      };
      const done = await client.request('branch.export', {
        workspace: ws.id,
        to: { kind: 'git', repo, branch: 'from-grove' },
        message: 'Work from the branch',
      });
      expect(done).toMatchObject({ parent: origin, files: 5, branch: 'from-grove', patch: null });
      expect(await git('log', '-1', '--format=%P|%an|%s', 'from-grove')).toBe(`${origin}|root|Work from the branch`);
      expect((await git('show', '--name-status', '--format=', 'from-grove')).split('\n').sort()).toEqual([
        'A\t.gitignore',
        'A\tdata.bin',
        'A\tlink.py',
        'D\tsrc/lib.txt',
        'M\tapp.py',
      ]);
      expect(await git('ls-tree', 'from-grove', 'link.py')).toMatch(/^120000 blob /); // a symlink, as git records one
      expect({
        head: await git('rev-parse', 'HEAD'),
        branch: await git('symbolic-ref', 'HEAD'),
        status: await git('status', '--porcelain'),
        index: await readFile(path.join(repo, '.git/index')),
      }).toEqual(before);
      // An existing branch is refused, and replaced only when asked.
      expect(await failure(client.request('branch.export', { workspace: ws.id, to: { kind: 'git', repo, branch: 'from-grove' } }))).toMatchObject({
        code: 'E_CONFLICT',
      });
      expect(await failure(client.request('branch.export', { workspace: ws.id, to: { kind: 'git', repo, branch: 'from-grove', force: true } }))).toBeNull();
      // A patch that git am applies on the origin, and nothing written into the repository for it.
      const objects = async () => (await execa('find', [path.join(repo, '.git/objects'), '-type', 'f'])).stdout.split('\n').length;
      const objectsBefore = await objects();
      const patch = path.join(work, 'branch.patch');
      await client.request('branch.export', { workspace: ws.id, to: { kind: 'patch', file: patch } });
      expect(await objects()).toBe(objectsBefore);
      const clone = path.join(work, 'am-clone');
      await execa('git', ['clone', '-q', repo, clone]);
      await execa('git', ['-C', clone, 'checkout', '-q', origin]);
      await execa('git', ['-C', clone, '-c', 'user.name=t', '-c', 'user.email=t@example.test', 'am', '-q', patch]);
      expect(await readFile(path.join(clone, 'app.py'), 'utf8')).toBe("print('changed')\n");
      await rm(path.join(repo, 'uncommitted.txt'));
    });

    it('refuses an export to a folder that is no repository, one without the origin, a branch without a project, and an agent (who asks)', async () => {
      const other = path.join(work, 'other-repo');
      await mkdir(other);
      await execa('git', ['-C', other, 'init', '-q']);
      expect(await failure(client.request('branch.export', { workspace: ws.id, to: { kind: 'git', repo: work, branch: 'x' } }))).toMatchObject({
        code: 'E_INVALID_PARAMS',
        message: expect.stringContaining('is not a git repository'),
      });
      expect(await failure(client.request('branch.export', { workspace: ws.id, to: { kind: 'git', repo: other, branch: 'x' } }))).toMatchObject({
        code: 'E_PRECONDITION',
        message: expect.stringContaining('which the project was copied at'),
      });
      const plain = await create('img-plain', 'desktop');
      expect(await failure(client.request('branch.export', { workspace: plain.id, to: { kind: 'patch', file: path.join(work, 'x.patch') } }))).toMatchObject({
        code: 'E_PRECONDITION',
        message: expect.stringContaining('has no project to export'),
      });
      const [name] = agentUserNames(instance().instance);
      const agent = await testUser(name!);
      const res = JSON.parse(
        (
          await withScope(client, agent.name, [ws.id], () =>
            runAs(agent.name, CALL, [
              instance().agentSocketPath,
              'branch.export',
              JSON.stringify({ workspace: ws.id, to: { kind: 'patch', file: '/tmp/agent.patch' } }),
              'call',
              'test',
            ]),
          )
        ).stdout,
      ) as { error?: { code: string; message: string } };
      expect(res.error).toMatchObject({
        code: 'E_FORBIDDEN',
        message: expect.stringContaining('ask a person (approval.create, kind branch.export'),
      });
    });

    it('refuses a project that is missing, a file, or bigger than the pool, before anything is made', async () => {
      const names = async () => (await client.request('workspace.list', {})).map((w) => w.name);
      expect(await failure(client.request('workspace.create', { name: 'proj-bad', project: { hostPath: path.join(work, 'nowhere') } }))).toMatchObject({
        code: 'E_NOT_FOUND',
      });
      expect(await failure(client.request('workspace.create', { name: 'proj-bad', project: { hostPath: path.join(work, 'secret') } }))).toMatchObject({
        code: 'E_INVALID_PARAMS',
        message: expect.stringContaining('is a file'),
      });
      const huge = path.join(work, 'huge');
      await mkdir(huge);
      await truncate(await touch(path.join(huge, 'sparse.bin')), 64 * 2 ** 30);
      expect(await failure(client.request('workspace.create', { name: 'proj-bad', project: { hostPath: huge } }))).toMatchObject({ code: 'E_NO_SPACE' });
      expect(await names()).not.toContain('proj-bad');
      await rm(huge, { recursive: true });
    });

    it('copies files and folders both ways, as docker cp does', async () => {
      const inFile = path.join(work, 'in.txt');
      await writeFile(inFile, 'into the branch\n');
      await client.request('file.copyIn', { workspace: ws.id, from: inFile, to: '/tmp' });
      await client.request('file.copyIn', { workspace: ws.id, from: repo, to: '/srv/copy' });
      expect(await sh(client, ws, 'cat /tmp/in.txt; cat /srv/copy/src/lib.txt')).toBe('into the branch\nlib\n');
      await sh(client, ws, 'mkdir -p /root/out/sub && echo made in the branch > /root/out/sub/f.txt && chmod 4755 /root/out/sub/f.txt');
      const out = path.join(work, 'out');
      await mkdir(out);
      const copied = await grove('cp', `${ws.name}:out`, out);
      expect(copied.exitCode, copied.all).toBe(0);
      expect(await readFile(path.join(out, 'out/sub/f.txt'), 'utf8')).toBe('made in the branch\n');
      // Not the branch's set-uid bit.
      expect((await stat(path.join(out, 'out/sub/f.txt'))).mode & 0o6000).toBe(0);
      await grove('cp', `${ws.name}:/tmp/in.txt`, path.join(out, 'renamed.txt'));
      expect(await readFile(path.join(out, 'renamed.txt'), 'utf8')).toBe('into the branch\n');
    });

    it('refuses a path that is a symlink in the branch, a missing one, and a stopped branch', async () => {
      await sh(client, ws, 'ln -sfn /etc /tmp/link-to-etc');
      expect(await failure(client.request('file.copyIn', { workspace: ws.id, from: path.join(work, 'in.txt'), to: '/tmp/link-to-etc' }))).toMatchObject({
        code: 'E_INVALID_PARAMS',
        message: expect.stringContaining('is a symlink in the branch'),
      });
      expect(await failure(client.request('file.copyOut', { workspace: ws.id, from: '/no/such/file', to: work }))).toMatchObject({ code: 'E_NOT_FOUND' });
      const stopped = await create('img-stopped', 'desktop');
      await client.request('workspace.stop', { workspace: stopped.id });
      expect(await failure(client.request('file.copyIn', { workspace: stopped.id, from: path.join(work, 'in.txt'), to: '/tmp' }))).toMatchObject({
        code: 'E_CONFLICT',
        message: expect.stringContaining('start it first'),
      });
    });

    it('never reaches the host through links the branch swaps in during copies', async () => {
      // In the branch: /race/d is a folder and /race/l a link to the host's canary folder (and, in the branch, to
      // nowhere); a loop swaps the two names (renameat2 RENAME_EXCHANGE) as fast as it can.
      await sh(client, ws, `mkdir -p /race/d && echo branch file > /race/d/f && ln -sfn ${canary} /race/l && ln -sfn ${work} /race/w`);
      await writeFile(path.join(work, 'race.txt'), 'copied in\n');
      const swapper = client.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', SWAPPER, '/race/d', '/race/l', '8'], timeoutMs: 60_000 });
      const out = await mkdtemp(path.join(work, 'race-out-'));
      let outs = 0;
      for (let i = 0; i < 40; i++) {
        await client.request('file.copyIn', { workspace: ws.id, from: path.join(work, 'race.txt'), to: '/race/d' }).catch(() => undefined);
        if (
          await client.request('file.copyOut', { workspace: ws.id, from: '/race/d/f', to: path.join(out, `f${i}`) }).then(
            () => true,
            () => false,
          )
        )
          outs++;
      }
      expect((await swapper).stdout).toMatch(/^swapped \d+ times/);
      expect(await readdir(canary)).toEqual([]);
      for (const f of await readdir(out)) expect(await readFile(path.join(out, f), 'utf8')).toBe('branch file\n');
      expect(outs).toBeGreaterThan(0);
      expect(await readFile(path.join(work, 'secret'), 'utf8')).toBe('host secret\n');
    });

    it('lets an agent copy in, and refuses its copy out with words', async () => {
      const [name] = agentUserNames(instance().instance);
      const alice: TestUser = await testUser(name!);
      const readable = path.join(work, 'for-agent.txt');
      await writeFile(readable, 'for the agent\n');
      await chmod(work, 0o755);
      await chmod(readable, 0o644);
      const call = async (method: string, params: object) =>
        JSON.parse((await runAs(alice.name, CALL, [instance().agentSocketPath, method, JSON.stringify(params), 'call', 'test'])).stdout) as {
          error?: { code: string; message: string };
        };
      await withScope(client, alice.name, [ws.id], async () => {
        expect((await call('file.copyIn', { workspace: ws.id, from: readable, to: '/tmp' })).error).toBeUndefined();
        expect(await sh(client, ws, 'cat /tmp/for-agent.txt')).toBe('for the agent\n');
        // What the agent cannot read, it cannot copy in.
        await chmod(path.join(work, 'secret'), 0o600);
        expect((await call('file.copyIn', { workspace: ws.id, from: path.join(work, 'secret'), to: '/tmp' })).error?.message).toMatch(/Permission denied/);
        const out = await call('file.copyOut', { workspace: ws.id, from: '/tmp/for-agent.txt', to: '/tmp' });
        expect(out.error).toMatchObject({ code: 'E_FORBIDDEN', message: expect.stringContaining('copying out of a branch onto the host is for persons only') });
      });
    });
  });

  /** The image's lower: its read-only files in the pool. */
  async function lowerOf(name: string): Promise<string> {
    const img: Image | undefined = (await client.request('image.list', {})).find((i) => i.name === name);
    expect(img?.state).toBe('ready');
    const dir = `${instance().stateDir}/pool/images`;
    const entry = (await readdir(dir)).find((e) => e.startsWith(`${name}-`) && e.endsWith(img!.id!.slice(0, 16)));
    return path.join(dir, entry!);
  }
});

/** Swaps two names (renameat2 RENAME_EXCHANGE) as fast as it can for as many seconds as it is told. */
const SWAPPER = `
import ctypes, sys, time
libc = ctypes.CDLL(None, use_errno=True)
a, b = (p.encode() for p in sys.argv[1:3])
end, n = time.time() + float(sys.argv[3]), 0
while time.time() < end:
    n += libc.renameat2(-100, a, -100, b, 2) == 0
print(f'swapped {n} times')
`;

/** A Debian package with one program, built here (dpkg-deb). */
async function tinyPackage(dir: string): Promise<string> {
  const root = path.join(dir, 'pkg-root');
  await mkdir(path.join(root, 'DEBIAN'), { recursive: true });
  await mkdir(path.join(root, 'usr/bin'), { recursive: true });
  await writeFile(
    path.join(root, 'DEBIAN/control'),
    'Package: grove-test-tool\nVersion: 1.0\nArchitecture: all\nMaintainer: Grove tests <tests@grove.invalid>\nDescription: a tool the image tests install\n',
  );
  await writeFile(path.join(root, 'usr/bin/grove-test-tool'), '#!/bin/sh\necho grove test tool works\n');
  await chmod(path.join(root, 'usr/bin/grove-test-tool'), 0o755);
  const deb = path.join(dir, 'grove-test-tool.deb');
  await execa('dpkg-deb', ['--root-owner-group', '--build', root, deb]);
  return deb;
}

async function touch(file: string): Promise<string> {
  await writeFile(file, '');
  return file;
}

/** A copy of an OCI archive whose top layer has one byte changed (its digest in the manifest kept). */
async function tamperLayer(archive: string, dir: string): Promise<string> {
  const unpacked = await mkdtemp(path.join(dir, 'tamper-'));
  await execa('tar', ['-xf', archive, '-C', unpacked]);
  const index = JSON.parse(await readFile(path.join(unpacked, 'index.json'), 'utf8')) as { manifests: { digest: string }[] };
  const manifest = JSON.parse(await readFile(path.join(unpacked, 'blobs/sha256', index.manifests[0]!.digest.slice(7)), 'utf8')) as {
    layers: { digest: string }[];
  };
  const layer = path.join(unpacked, 'blobs/sha256', manifest.layers.at(-1)!.digest.slice(7));
  const bytes = await readFile(layer);
  bytes[bytes.length - 9] = bytes[bytes.length - 9]! ^ 0xff;
  await writeFile(layer, bytes);
  const out = path.join(dir, 'tampered-archive.tar');
  await execa('tar', ['-cf', out, '-C', unpacked, '.']);
  return out;
}
