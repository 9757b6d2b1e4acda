// Images of one's own and projects, through the app's controller against a
// fake helper: a Containerfile typed in the app is written to a private
// temporary folder for the build and removed after it, whatever happens;
// pulls and removals; every line of an image's output reaches its log and the
// renderers, and progress reaches the operation it is about.
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AppState, ImageLog, Workspace } from '../../src/api/contract.js';
import { Controller } from '../../src/app/controller.js';
import { startWebServer, type WebServer } from '../../src/app/server.js';
import { FakeHelper, connectRenderer } from './app-fake-helper.js';
import { until } from '../../../privileged-helper/test/until.js';
import { BOB, audit, branch, image } from './app-fixtures.js';

let dir: string;
let helper: FakeHelper;
let controller: Controller;
let web: WebServer;

beforeEach(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'grove-app-images-'));
  mkdirSync(path.join(dir, 'dist'));
  writeFileSync(path.join(dir, 'dist/index.html'), '<!doctype html><title>Grove</title>');
  helper = new FakeHelper(path.join(dir, 'helper.sock'), 'epoch-1');
  helper.workspaces = [branch('aaaaaaa1', 'one')];
  helper.images = [image('desktop', { origin: 'recipe', source: null, layers: 1 })];
  await helper.listen();
  controller = new Controller({ socketPath: helper.socketPath, retryMs: 50 });
  await controller.start();
  web = await startWebServer(controller, { rendererDir: path.join(dir, 'dist') });
});

afterEach(async () => {
  controller.stop();
  await web.close();
  await helper.stop().catch(() => undefined);
  rmSync(dir, { recursive: true, force: true });
});

async function connected() {
  const r = await connectRenderer(web, web.secret);
  await until(() => r.states.at(-1)?.connection.status === 'connected');
  return r;
}

/** A progress event of an image operation, as the helper streams buildah's and skopeo's lines. */
const imageLine = (image: string, job: string, stage: string, message: string) => ({ job, stage, message, done: stage === 'done', image });

/** What a build the fake helper ran saw of the files it was given. */
interface SeenBuild {
  params: Record<string, unknown>;
  text: string;
  dirMode: number;
  fileMode: number;
}

/** image.build that reads the Containerfile it is named (as the helper does, as the caller), streams two lines, and answers. */
function buildsAndStreams(seen: SeenBuild[], fail?: { code: string; message: string }): (p: Record<string, unknown>) => unknown {
  return (p) => {
    const file = p.containerfile as string;
    seen.push({ params: p, text: readFileSync(file, 'utf8'), dirMode: statSync(path.dirname(file)).mode & 0o777, fileMode: statSync(file).mode & 0o777 });
    const job = `image-build-${p.name as string}-1`;
    helper.emit('progress', imageLine(p.name as string, job, 'build', 'STEP 1/2: FROM grove/desktop'));
    helper.emit('progress', imageLine(p.name as string, job, 'build', 'STEP 2/2: RUN echo built > /opt/e2e.txt'));
    if (fail) throw Object.assign(new Error(fail.message), { code: fail.code });
    helper.emit('progress', imageLine(p.name as string, job, 'done', `image '${p.name as string}' is ready`));
    const built = image(p.name as string, { source: file });
    helper.images = [...helper.images, built];
    return built;
  };
}

describe('building an image from the app', () => {
  it('writes a typed Containerfile into a private temporary folder, builds from it (the context too), and removes it', async () => {
    const seen: SeenBuild[] = [];
    helper.handlers.set('image.build', buildsAndStreams(seen));
    const r = await connected();
    const text = 'FROM grove/desktop\nRUN echo built > /opt/e2e.txt\n';
    const reply = await r.call('image.build', { name: 'mine', containerfileText: text, buildArgs: { VERSION: '2' } });
    expect(reply.error).toBeUndefined();
    expect(reply.result).toMatchObject({ name: 'mine', state: 'ready' });

    const [build] = seen;
    const file = build!.params.containerfile as string;
    // The helper got paths only: the file this controller wrote, its folder as the context, the build args as given.
    expect(build!.params).toEqual({ name: 'mine', containerfile: file, context: path.dirname(file), buildArgs: { VERSION: '2' } });
    expect(path.dirname(path.dirname(file))).toBe(os.tmpdir());
    expect(path.basename(path.dirname(file))).toMatch(/^grove-typed-in-app-/);
    expect(build!.text).toBe(text);
    expect(build!.dirMode).toBe(0o700);
    expect(build!.fileMode).toBe(0o600);
    expect(existsSync(path.dirname(file))).toBe(false);

    // The image list is read again: the new image is in the state; the operation keeps the newest line of each stage.
    const s = await until(() => r.states.find((x) => x.images.some((i) => i.name === 'mine') && x.operations.at(-1)?.status === 'done'));
    expect(s.operations.at(-1)!.stages.map((st) => [st.stage, st.message])).toEqual([
      ['build', 'STEP 2/2: RUN echo built > /opt/e2e.txt'],
      ['done', "image 'mine' is ready"],
    ]);
    expect(s.activity.filter((a) => a.action === 'build image').map((a) => [a.target, a.outcome, a.detail])).toEqual([
      ['mine', 'started', ''],
      ['mine', 'ok', 'ready, 2 layers'],
    ]);
    // Every line reached the renderer as it came, and the log keeps them for a renderer that opens later.
    const lines = r.events.filter((e) => e.event === 'image.output').map((e) => (e.data as { line: { message: string } }).line.message);
    expect(lines).toEqual(['STEP 1/2: FROM grove/desktop', 'STEP 2/2: RUN echo built > /opt/e2e.txt', "image 'mine' is ready"]);
    const logs = (await r.call('image.logs', {})).result as Record<string, ImageLog>;
    expect(logs.mine!.job).toBe('image-build-mine-1');
    expect(logs.mine!.lines.map((l) => l.message)).toEqual(lines);
    r.ws.close();
  });

  it("keeps the context the person gave, removes the temporary folder when the build fails, and says the helper's words", async () => {
    const seen: SeenBuild[] = [];
    helper.handlers.set('image.build', buildsAndStreams(seen, { code: 'E_HOST', message: 'buildah: RUN exited with 127' }));
    const r = await connected();
    const reply = await r.call('image.build', { name: 'mine', containerfileText: 'FROM grove/desktop\nRUN nope\n', context: '/home/me/app' });
    expect(reply.error).toEqual({ code: 'E_HOST', message: 'buildah: RUN exited with 127' });
    const file = seen[0]!.params.containerfile as string;
    expect(seen[0]!.params.context).toBe('/home/me/app');
    expect(existsSync(path.dirname(file))).toBe(false);
    const s = await until(() => r.states.find((x) => x.operations.at(-1)?.status === 'failed'));
    expect(s.operations.at(-1)).toMatchObject({ kind: 'image.build', target: 'mine', error: 'buildah: RUN exited with 127' });
    expect(s.activity.at(-1)).toMatchObject({ actor: 'you', action: 'build image', target: 'mine', outcome: 'failed', detail: 'buildah: RUN exited with 127' });
    r.ws.close();
  });

  it('passes a Containerfile named by its host path as it is, and refuses one both typed and named', async () => {
    const params: Record<string, unknown>[] = [];
    helper.handlers.set('image.build', (p) => (params.push(p), image(p.name as string)));
    const r = await connected();
    expect((await r.call('image.build', { name: 'mine', containerfile: '/home/me/app/Containerfile', buildArgs: { A: 'b' } })).error).toBeUndefined();
    expect(params).toEqual([{ name: 'mine', containerfile: '/home/me/app/Containerfile', buildArgs: { A: 'b' } }]);
    const both = await r.call('image.build', { name: 'mine', containerfile: '/home/me/app/Containerfile', containerfileText: 'FROM x' });
    expect(both.error?.code).toBe('E_INVALID_PARAMS');
    expect(both.error?.message).toContain('either typed or named');
    expect((await r.call('image.build', { name: 'mine', containerfile: 'Containerfile' })).error?.message).toContain('absolute');
    expect(params).toHaveLength(1);
    r.ws.close();
  });

  it('builds the desktop from its recipe with its name only', async () => {
    const params: Record<string, unknown>[] = [];
    helper.handlers.set('image.build', (p) => (params.push(p), image('desktop', { origin: 'recipe' })));
    const r = await connected();
    expect((await r.call('image.build', { name: 'desktop' })).result).toMatchObject({ name: 'desktop' });
    expect(params).toEqual([{ name: 'desktop' }]);
    r.ws.close();
  });
});

describe('pulling and removing images', () => {
  it('pulls with a reference, streaming into the log; removes and forgets the log; a refusal says why', async () => {
    helper.handlers.set('image.pull', (p) => {
      for (const [stage, message] of [
        ['fetch', `fetching ${p.ref as string}`],
        ['fetch', 'Copying blob sha256:1234'],
        ['unpack', 'unpacking the layers into the pool'],
        ['done', "image 'tools' is stored, but a workspace cannot start from it: it lacks Xvnc"],
      ]) {
        helper.emit('progress', imageLine('tools', 'image-pull-tools-1', stage!, message!));
      }
      return image('tools', { origin: 'pull', source: p.ref as string, missing: ['Xvnc'] });
    });
    helper.handlers.set('image.remove', (p) => {
      if (p.name === 'used') throw Object.assign(new Error("image 'used' is used by 'one': discard those first"), { code: 'E_CONFLICT' });
      return { removed: p.name };
    });
    const r = await connected();
    // Credentials are not the app's to send: a registry that wants them is the CLI's (it reads auth.json).
    expect(
      (await r.call('image.pull', { name: 'tools', ref: 'docker://registry.test/tools:1', credentials: { username: 'a', password: 'b' } })).error?.code,
    ).toBe('E_INVALID_PARAMS');
    expect((await r.call('image.pull', { name: 'tools', ref: 'registry.test/tools:1' })).error?.code).toBe('E_INVALID_PARAMS');
    expect((await r.call('image.pull', { name: 'tools', ref: 'docker://registry.test/tools:1' })).result).toMatchObject({ name: 'tools', missing: ['Xvnc'] });
    const pulled = await until(() => r.states.find((x) => x.operations.at(-1)?.status === 'done'));
    expect(pulled.operations.at(-1)).toMatchObject({ kind: 'image.pull', target: 'tools' });
    expect(pulled.operations.at(-1)!.stages.map((st) => st.stage)).toEqual(['fetch', 'unpack', 'done']);
    expect(pulled.activity.at(-1)).toMatchObject({ action: 'pull image', target: 'tools', outcome: 'ok', detail: 'not a desktop: it lacks Xvnc' });
    expect(((await r.call('image.logs', {})).result as Record<string, ImageLog>).tools!.lines).toHaveLength(4);

    expect((await r.call('image.remove', { name: 'tools' })).result).toEqual({ removed: 'tools' });
    expect((await r.call('image.logs', {})).result).toEqual({});
    const refused = await r.call('image.remove', { name: 'used' });
    expect(refused.error).toEqual({ code: 'E_CONFLICT', message: "image 'used' is used by 'one': discard those first" });
    const s = await until(() => r.states.find((x) => x.activity.at(-1)?.outcome === 'failed'));
    expect(s.activity.filter((a) => a.action === 'remove image' && a.outcome !== 'started').map((a) => [a.target, a.outcome])).toEqual([
      ['tools', 'ok'],
      ['used', 'failed'],
    ]);
    r.ws.close();
  });
});

describe('progress', () => {
  it("streams another client's build into the image's log (a new job starts it again) and reads the images when it is done", async () => {
    const r = await connected();
    helper.emit('progress', imageLine('theirs', 'image-build-theirs-1', 'build', 'STEP 1/1: FROM grove/desktop'));
    helper.emit('progress', imageLine('theirs', 'image-build-theirs-2', 'build', 'STEP 1/3: FROM grove/desktop'));
    helper.emit('progress', imageLine('theirs', 'image-build-theirs-2', 'build', 'STEP 2/3: RUN make'));
    await until(() => r.events.filter((e) => e.event === 'image.output').length === 3);
    const logs = (await r.call('image.logs', {})).result as Record<string, ImageLog>;
    expect(logs.theirs).toMatchObject({ job: 'image-build-theirs-2', lines: [{ message: 'STEP 1/3: FROM grove/desktop' }, { message: 'STEP 2/3: RUN make' }] });
    // The lines carry a sequence that grows, so a renderer can merge what it read with what it was sent.
    const seqs = logs.theirs!.lines.map((l) => l.seq);
    expect(seqs[1]).toBeGreaterThan(seqs[0]!);
    // None of it is an operation of this app's.
    expect(r.states.at(-1)!.operations).toEqual([]);

    helper.images = [...helper.images, image('theirs')];
    helper.emit('audit', audit(1, BOB, 'image.build', 'theirs'), BOB);
    const s = await until(() => r.states.find((x) => x.images.some((i) => i.name === 'theirs')));
    expect(s.activity.at(-1)).toMatchObject({ actor: 'person', who: { user: 'bob' }, action: 'build image', target: 'theirs', outcome: 'ok' });
    r.ws.close();
  });

  it("creates a workspace from an image with a project, showing the copy's progress on that branch's operation only", async () => {
    const project = {
      hostPath: '/var/tmp/app',
      path: '/root/app',
      commit: '1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d',
      gitBranch: 'main',
      copiedAt: '2026-01-01T00:20:00.000Z',
    };
    const params: Record<string, unknown>[] = [];
    helper.handlers.set('workspace.create', (p) => {
      params.push(p);
      const copy = (message: string, workspace = 'proj') =>
        helper.emit('progress', { job: `copy-${workspace}-1`, stage: 'copy', message, done: false, workspace });
      copy('/var/tmp/app: 1.0 MiB of 3.0 MiB copied');
      copy('/var/tmp/elsewhere: 9.0 MiB copied', 'other');
      copy('/var/tmp/app: 3.0 MiB of 3.0 MiB copied');
      const made: Workspace = branch('ddddddd4', 'proj', { image: 'mine', project });
      helper.workspaces = [...helper.workspaces, made];
      return made;
    });
    const r = await connected();
    const reply = await r.call('workspace.create', { name: 'proj', image: 'mine', project: { hostPath: '/var/tmp/app', path: '/root/app' } });
    expect(reply.result).toMatchObject({ name: 'proj', project: { hostPath: '/var/tmp/app', gitBranch: 'main' } });
    expect(params).toEqual([{ name: 'proj', image: 'mine', project: { hostPath: '/var/tmp/app', path: '/root/app' } }]);
    const s = await until(() => r.states.find((x: AppState) => x.operations.at(-1)?.status === 'done'));
    expect(s.operations.at(-1)!.stages.map((st) => [st.stage, st.message])).toEqual([['copy', '/var/tmp/app: 3.0 MiB of 3.0 MiB copied']]);
    expect(s.activity.at(-1)).toMatchObject({
      action: 'create workspace',
      target: 'proj',
      outcome: 'ok',
      detail: 'created proj (ddddddd4) from mine, with /var/tmp/app (git 1a2b3c4d5e6f on main) in /root/app',
    });
    // Only the branch's own name and image go to the helper; ports are not the app's to ask for.
    expect((await r.call('workspace.create', { name: 'x', ports: [8080] })).error?.code).toBe('E_INVALID_PARAMS');
    expect((await r.call('workspace.create', { name: 'x', project: { hostPath: 'relative/path' } })).error?.code).toBe('E_INVALID_PARAMS');
    r.ws.close();
  });
});
