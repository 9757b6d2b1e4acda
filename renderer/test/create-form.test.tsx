// @vitest-environment happy-dom
// Creating a workspace: the ready images to start from (one that is not a
// desktop disabled, with what it lacks), a project folder copied in and where
// it goes, the copy's progress while it is made, the Electron shell's folder
// dialog when there is one; a branch's origin next to its name; and the way
// to the Images view before there is any branch.
import { act } from 'react';
import { afterEach, describe, expect, it } from 'vitest';
import type { AppState, Operation } from '../../main/src/api/contract.js';
import { branch, image } from '../../main/test/unit/app-fixtures.js';
import { App } from '../src/components/App.js';
import { BranchDisk } from '../src/components/BranchDisk.js';
import { BranchOrigin } from '../src/components/BranchOrigin.js';
import { CreateForm } from '../src/components/CreateForm.js';
import { appState } from './app-state.js';
import { apiWith } from './fake-api.js';
import { button, choose, mount, typeInto, type Mounted } from './mount.js';

const IMAGES = [
  image('desktop', { origin: 'recipe', source: null }),
  image('mine'),
  image('tools', { origin: 'pull', missing: ['Xvnc', 'openbox'] }),
  image('broken', { state: 'failed' }),
];
const PROJECT = {
  hostPath: '/var/tmp/app',
  path: '/root/app',
  commit: '1a2b3c4d5e6f7a8b9c0d1a2b3c4d5e6f7a8b9c0d',
  gitBranch: 'main',
  copiedAt: '2026-01-01T00:20:00.000Z',
};
const state = (over: Partial<AppState> = {}) => appState([branch('aaaaaaa1', 'one')], 'connected', { images: IMAGES, ...over });

let view: Mounted;
afterEach(() => {
  view.unmount();
  delete (globalThis as { groveShell?: unknown }).groveShell;
});

const field = <T extends Element = HTMLInputElement>(label: string) => view.host.querySelector(`[aria-label="${label}"]`) as T | null;
const submit = () => act(async () => void view.host.querySelector('form')!.requestSubmit());

describe('CreateForm', () => {
  it('offers the ready images, Grove’s desktop first chosen; one that is not a desktop is disabled with what it lacks', () => {
    view = mount(<CreateForm />, state(), apiWith({}).api);
    const select = field<HTMLSelectElement>('image')!;
    expect(select.value).toBe('desktop');
    const options = [...select.options].map((o) => [o.value, o.disabled, o.textContent]);
    expect(options).toEqual([
      ['desktop', false, 'desktop'],
      ['mine', false, 'mine'],
      ['tools', true, 'tools (not a desktop: it lacks Xvnc, openbox)'],
    ]);
    expect(select.options[2]!.title).toBe('not a desktop: it lacks Xvnc, openbox');
  });

  it('sends the image and the project folder, with where it goes in the branch, and shows the copy as it goes', async () => {
    let finish: (v: unknown) => void = () => undefined;
    const { api, calls } = apiWith({ 'workspace.create': () => new Promise((r) => (finish = r)) });
    view = mount(<CreateForm />, state(), api);
    typeInto(field('workspace name')!, 'proj');
    choose(field<HTMLSelectElement>('image')!, 'mine');
    expect(field('project path in the branch')).toBeNull(); // only with a project
    typeInto(field('project folder')!, '/var/tmp/app');
    typeInto(field('project path in the branch')!, '/root/app');
    await submit();
    expect(calls).toEqual([['workspace.create', { name: 'proj', image: 'mine', project: { hostPath: '/var/tmp/app', path: '/root/app' } }]]);
    expect(button(view.host, 'Creating… (about a minute)').disabled).toBe(true);

    const copying: Operation = {
      id: 'op1',
      kind: 'workspace.create',
      target: 'proj',
      startedAt: 'x',
      status: 'running',
      stages: [{ stage: 'copy', message: '/var/tmp/app: 1.0 MiB of 3.0 MiB copied', at: 'y' }],
      error: null,
      finishedAt: null,
    };
    view.apply(state({ operations: [copying] }));
    expect(view.host.querySelector('[data-testid="create-progress"]')!.textContent).toBe('/var/tmp/app: 1.0 MiB of 3.0 MiB copied');
    await act(async () => finish(branch('ddddddd4', 'proj', { image: 'mine', project: PROJECT })));
    expect(field('workspace name')!.value).toBe('');
    expect(field('project folder')!.value).toBe('');
  });

  it('leaves the project and its path out when not given, and refuses a relative folder before sending', async () => {
    const { api, calls } = apiWith({ 'workspace.create': (p) => branch('ddddddd5', p.name as string) });
    view = mount(<CreateForm />, state(), api);
    typeInto(field('workspace name')!, 'plain');
    typeInto(field('project folder')!, 'app');
    expect(view.host.querySelector('.hint')!.textContent).toBe('a host path is absolute');
    expect(button(view.host, 'Create workspace').disabled).toBe(true);
    typeInto(field('project folder')!, '');
    await submit();
    expect(calls).toEqual([['workspace.create', { name: 'plain', image: 'desktop' }]]);
  });

  it("uses the Electron shell's folder dialog when the shell has one", async () => {
    view = mount(<CreateForm />, state(), apiWith({}).api);
    expect(view.host.textContent).not.toContain('Choose…');
    view.unmount();
    (globalThis as { groveShell?: unknown }).groveShell = { kind: 'electron', pickFolder: async () => '/home/me/project' };
    view = mount(<CreateForm />, state(), apiWith({}).api);
    await act(async () => button(view.host, 'Choose…').click());
    expect(field('project folder')!.value).toBe('/home/me/project');
  });
});

describe("a branch's origin", () => {
  it('names its image and the project copied in: host folder, git commit and branch, where it is', () => {
    view = mount(<BranchOrigin branch={branch('ddddddd4', 'proj', { image: 'mine', project: PROJECT })} />, state(), apiWith({}).api);
    expect(view.host.textContent).toBe('image mine · project /root/app from /var/tmp/app (git 1a2b3c4d5e6f on main)');
    view.unmount();
    view = mount(<BranchOrigin branch={branch('aaaaaaa1', 'one')} />, state(), apiWith({}).api);
    expect(view.host.textContent).toBe('image desktop');
  });
});

describe("a branch's disk", () => {
  it('says what its files wrote against its limit, and marks it full when writes in it fail', () => {
    const limits = { memoryBytes: 2 * 2 ** 30, pids: 2048, cpuWeight: 100, diskBytes: 64 * 2 ** 20 };
    view = mount(<BranchDisk branch={branch('aaaaaaa1', 'one', { limits, disk: { usedBytes: 12 * 2 ** 20, full: false } })} />, state(), apiWith({}).api);
    expect(view.host.textContent).toBe('disk 12 MiB of 64 MiB');
    expect(view.host.querySelector('[data-testid="disk-full"]')).toBeNull();
    view.unmount();
    view = mount(<BranchDisk branch={branch('aaaaaaa1', 'one', { limits, disk: { usedBytes: 64 * 2 ** 20, full: true } })} />, state(), apiWith({}).api);
    expect(view.host.textContent).toBe('disk 64 MiB of 64 MiB — full: writes in it faildisk full');
    expect(view.host.querySelector('[data-testid="disk-full"]')).not.toBeNull();
  });
});

describe('before the first workspace', () => {
  it('leads to the Images view and back', async () => {
    view = mount(<App />, appState([], 'connected', { images: IMAGES }), apiWith({ 'image.logs': () => ({}) }).api);
    expect(view.host.querySelector('h2')!.textContent).toBe('Create your first workspace');
    await act(async () => button(view.host, 'Start from an image of your own: build or pull one…').click());
    expect(view.host.querySelectorAll('[data-testid="image-row"]')).toHaveLength(4);
    act(() => button(view.host, '← Create a workspace').click());
    expect(view.host.querySelector('h2')!.textContent).toBe('Create your first workspace');
  });
});
