// @vitest-environment happy-dom
// The Images view: every image with what it is made of and, for one that is
// not a desktop, what it lacks; a build from the editor or a host path, sent
// as the contract says and checked before it goes; a pull; a removal asked
// first; and the build's output as it streams in.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { ImageLogLine, RequestName } from '../../main/src/api/contract.js';
import { branch, image } from '../../main/test/unit/app-fixtures.js';
import { ApiError } from '../src/api/client.js';
import { CONTAINERFILE_START } from '../src/components/ImageForms.js';
import { ImagesView } from '../src/components/Images.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { button, mount, typeInto, type Mounted } from './mount.js';

const DESKTOP = image('desktop', {
  origin: 'recipe',
  source: null,
  layers: 1,
  sizeBytes: 3 * 2 ** 30,
  sharedBytes: null,
  digest: null,
  reference: 'localhost/grove/desktop:latest',
});
const MINE = image('mine');
const TOOLS = image('tools', {
  origin: 'pull',
  source: 'docker://registry.test/tools:1',
  missing: ['Xvnc', 'openbox'],
  sizeBytes: 80 * 2 ** 20,
  sharedBytes: 0,
});
const line = (seq: number, stage: string, message: string): ImageLogLine => ({ seq, stage, message, at: '2026-01-01T00:00:00.000Z' });

let view: Mounted;
afterEach(() => view.unmount());

function open(answers: Partial<Record<RequestName, (p: Record<string, unknown>) => unknown>> = {}) {
  const fake = apiWith({ 'image.logs': () => ({}), ...answers });
  view = mount(<ImagesView />, appState([branch('aaaaaaa1', 'one')], 'connected', { images: [DESKTOP, MINE, TOOLS] }), fake.api);
  return fake.calls;
}

const row = (name: string) => view.host.querySelector<HTMLElement>(`[data-testid="image-row"][data-image="${name}"]`)!;
const field = <T extends Element = HTMLInputElement>(label: string) => view.host.querySelector<T & Element>(`[aria-label="${label}"]`)! as unknown as T;
const submit = (testid: string) => act(async () => void view.host.querySelector<HTMLFormElement>(`[data-testid="${testid}"]`)!.requestSubmit());

describe('the list', () => {
  it('shows each image: state, where it comes from, size, layers, shared bytes, short digest; what a non-desktop lacks', () => {
    open();
    expect([...view.host.querySelectorAll('[data-testid="image-row"]')].map((r) => r.getAttribute('data-image'))).toEqual(['desktop', 'mine', 'tools']);
    const mine = row('mine').textContent!;
    expect(mine).toContain('localhost/grove/mine:latest');
    expect(mine).toContain('ready');
    expect(mine).toContain('Containerfile /home/me/mine/Containerfile');
    expect(mine).toContain('1.2 GiB');
    expect(mine).toContain('1.1 GiB'); // shared with other images
    expect(row('mine').querySelector('.mono[title]')!.textContent).toBe('sha256:ab12ab12ab12');
    expect(row('desktop').textContent).toContain("Grove's recipe");
    expect(row('tools').textContent).toContain('pulled from docker://registry.test/tools:1');
    expect(row('tools').querySelector('[data-testid="image-missing"]')!.textContent).toBe('not a desktop: it lacks Xvnc, openbox');
    expect(row('mine').querySelector('[data-testid="image-missing"]')).toBeNull();
  });

  it("asks before removing an image, in plain words, and never offers to remove Grove's own", async () => {
    const calls = open({ 'image.remove': (p) => ({ removed: p.name }) });
    expect([...row('desktop').querySelectorAll('button')].map((b) => b.textContent)).toEqual(['Log']);
    act(() => button(row('tools'), 'Remove').click());
    const asked = view.store.getState().confirm!;
    expect(asked.title).toBe('Remove image tools?');
    expect(asked.body).toContain('refuses while a branch or a version still uses it');
    expect(asked.danger).toBe(true);
    expect(calls.some(([m]) => m === 'image.remove')).toBe(false);
    await act(async () => view.store.getState().answer(true));
    expect(calls.at(-1)).toEqual(['image.remove', { name: 'tools' }]);
  });

  it("says the helper's words when it refuses a removal", async () => {
    open({
      'image.remove': () => {
        throw new ApiError('E_CONFLICT', "image 'mine' is used by 'one': discard those first");
      },
    });
    act(() => button(row('mine'), 'Remove').click());
    await act(async () => view.store.getState().answer(true));
    expect(view.store.getState().errors.map((e) => e.text)).toEqual(["Could not remove the image: image 'mine' is used by 'one': discard those first"]);
  });
});

describe('building', () => {
  it('starts the editor from grove/desktop and sends what is typed, with build args, as the contract says', async () => {
    let finish: (v: unknown) => void = () => undefined;
    const calls = open({ 'image.build': () => new Promise((r) => (finish = r)) });
    const editor = field<HTMLTextAreaElement>('Containerfile');
    expect(editor.value).toBe(CONTAINERFILE_START);
    expect(editor.value.startsWith('FROM grove/desktop\n')).toBe(true);
    typeInto(field('image name'), 'e2e-img');
    typeInto(editor, 'FROM grove/desktop\nRUN echo built-in-e2e > /opt/e2e.txt\n');
    typeInto(field<HTMLTextAreaElement>('build arguments'), 'VERSION=2\n\nMODE=fast');
    await submit('build-form');
    expect(calls.at(-1)).toEqual([
      'image.build',
      { name: 'e2e-img', containerfileText: 'FROM grove/desktop\nRUN echo built-in-e2e > /opt/e2e.txt\n', buildArgs: { VERSION: '2', MODE: 'fast' } },
    ]);
    expect(button(view.host, 'Building…').disabled).toBe(true);

    // Its output streams into the log panel as the controller sends it.
    const panel = () => view.host.querySelector<HTMLElement>('[data-testid="image-log-panel"]')!;
    expect(panel().dataset.image).toBe('e2e-img');
    act(() => view.store.getState().addImageOutput({ image: 'e2e-img', job: 'image-build-e2e-img-1', line: line(7, 'build', 'STEP 1/2: FROM grove/desktop') }));
    act(() => view.store.getState().addImageOutput({ image: 'other', job: 'image-build-other-1', line: line(8, 'build', 'not this one') }));
    act(() =>
      view.store
        .getState()
        .addImageOutput({ image: 'e2e-img', job: 'image-build-e2e-img-1', line: line(9, 'build', 'STEP 2/2: RUN echo built-in-e2e > /opt/e2e.txt') }),
    );
    expect([...panel().querySelectorAll('[data-testid="image-log"] > div')].map((d) => d.textContent)).toEqual([
      'build STEP 1/2: FROM grove/desktop',
      'build STEP 2/2: RUN echo built-in-e2e > /opt/e2e.txt',
    ]);
    await act(async () => finish(image('e2e-img')));
    expect(button(view.host, 'Build').disabled).toBe(false);
  });

  it('builds from a Containerfile on the host with a context folder, and says what is wrong before sending', async () => {
    const calls = open({ 'image.build': (p) => image(p.name as string) });
    typeInto(field('image name'), 'tools2');
    act(() => view.host.querySelectorAll<HTMLInputElement>('[role="radiogroup"] input')[1]!.click());
    expect(field('Containerfile')).toBeNull();
    typeInto(field('Containerfile path'), 'app/Containerfile');
    expect(view.host.querySelector('[data-testid="build-form"] .hint')!.textContent).toBe('a host path is absolute');
    expect(button(view.host, 'Build').disabled).toBe(true);
    typeInto(field('Containerfile path'), '/home/me/app/Containerfile');
    typeInto(field('build context'), '/home/me/app');
    typeInto(field<HTMLTextAreaElement>('build arguments'), 'NOEQUALS');
    expect(view.host.querySelector('[data-testid="build-form"] .hint')!.textContent).toBe('build argument line 1 is not KEY=VALUE');
    typeInto(field<HTMLTextAreaElement>('build arguments'), '');
    await submit('build-form');
    expect(calls.filter(([m]) => m === 'image.build')).toEqual([
      ['image.build', { name: 'tools2', containerfile: '/home/me/app/Containerfile', context: '/home/me/app' }],
    ]);
  });

  it("shows the helper's message when a build fails, in a notice and under its output", async () => {
    open({
      'image.build': () => {
        throw new ApiError('E_HOST', 'buildah: RUN exited with 127');
      },
    });
    typeInto(field('image name'), 'bad');
    await submit('build-form');
    expect(view.store.getState().errors.map((e) => e.text)).toEqual([
      "Could not build the image: a system tool on the host failed (buildah: RUN exited with 127). The helper's log has the details.",
    ]);
    view.apply(
      appState([], 'connected', {
        images: [DESKTOP],
        operations: [
          {
            id: 'op1',
            kind: 'image.build',
            target: 'bad',
            startedAt: 'x',
            status: 'failed',
            stages: [],
            error: 'buildah: RUN exited with 127',
            finishedAt: 'y',
          },
        ],
      }),
    );
    expect(view.host.querySelector('[data-testid="image-log-panel"] .op-error')!.textContent).toBe('buildah: RUN exited with 127');
  });
});

describe('pulling and the log', () => {
  it('pulls by name and reference, refusing a reference the helper would not take', async () => {
    const calls = open({ 'image.pull': (p) => image(p.name as string, { origin: 'pull' }) });
    typeInto(field('pulled image name'), 'tools3');
    typeInto(field('image reference'), 'registry.test/tools:2');
    expect(view.host.querySelector('[data-testid="pull-form"] .hint')!.textContent).toContain('docker://HOST/REPO');
    typeInto(field('image reference'), 'docker://registry.test/tools:2');
    await submit('pull-form');
    expect(calls.at(-1)).toEqual(['image.pull', { name: 'tools3', ref: 'docker://registry.test/tools:2' }]);
  });

  it('reads the logs when it opens and shows the one asked for, merged with what streamed meanwhile', async () => {
    const calls = open({ 'image.logs': () => ({ mine: { job: 'j1', lines: [line(1, 'build', 'STEP 1/2'), line(2, 'build', 'STEP 2/2')] } }) });
    await act(async () => undefined);
    expect(calls[0]).toEqual(['image.logs', {}]);
    act(() => view.store.getState().addImageOutput({ image: 'mine', job: 'j1', line: line(3, 'done', "image 'mine' is ready") }));
    act(() => button(row('mine'), 'Log').click());
    expect([...view.host.querySelectorAll('[data-testid="image-log"] > div')].map((d) => d.textContent)).toEqual([
      'build STEP 1/2',
      'build STEP 2/2',
      "done image 'mine' is ready",
    ]);
  });
});
