import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { KernelTier, MODULE, type KernelTierPaths } from '../../src/host/kernel-tier.js';

// The states of a host this one cannot take (modules switched off, the module
// loaded) are laid out as the files the decision reads.
describe('KernelTier', () => {
  const dirs: string[] = [];
  afterEach(async () => {
    for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
  });

  async function host(files: Record<string, string>, dirsToMake: string[] = []): Promise<KernelTierPaths> {
    const root = await mkdtemp(path.join(os.tmpdir(), 'grove-kernel-tier-'));
    dirs.push(root);
    for (const [file, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(root, file)), { recursive: true });
      await writeFile(path.join(root, file), text);
    }
    for (const dir of dirsToMake) await mkdir(path.join(root, dir), { recursive: true });
    return { proc: path.join(root, 'proc'), sys: path.join(root, 'sys'), module: path.join(root, 'grove_share.ko'), tool: path.join(root, 'grove-share') };
  }

  it('says a kernel without module support copies memory, and why', async () => {
    const state = await new KernelTier(await host({}, ['proc', 'sys'])).current();
    expect(state).toMatchObject({ loaded: false, sharing: false });
    expect(state.memory).toBe(`copied by CRIU from the dump (KSM merges the copies later): this kernel (${os.release()}) was built without module support`);
  });

  it('says when module loading is switched off', async () => {
    const state = await new KernelTier(await host({ 'proc/modules': '', 'proc/sys/kernel/modules_disabled': '1\n' })).current();
    expect(state).toMatchObject({ loaded: false, memory: expect.stringContaining('kernel.modules_disabled = 1') });
  });

  it('says when no module was built for the running kernel', async () => {
    const paths = await host({ 'proc/modules': '', 'proc/sys/kernel/modules_disabled': '0\n' });
    const state = await new KernelTier(paths).current();
    expect(state).toMatchObject({ loaded: false, memory: expect.stringContaining(`no ${MODULE}.ko built for ${os.release()} at ${paths.module}`) });
  });

  it('shares memory once the module is loaded and its holder built', async () => {
    const state = await new KernelTier(await host({ 'proc/modules': `${MODULE} 16384 0 - Live 0x0\n`, 'grove-share': '' }, [`sys/module/${MODULE}`])).current();
    expect(state).toEqual({ loaded: true, sharing: true, memory: expect.stringMatching(/^shared copy-on-write from a capture of the source \(grove_share\)/) });
  });

  it('copies while the holder is not built, and says so', async () => {
    const paths = await host({ 'proc/modules': `${MODULE} 16384 0 - Live 0x0\n` }, [`sys/module/${MODULE}`]);
    const state = await new KernelTier(paths).current();
    expect(state).toMatchObject({ loaded: true, sharing: false, memory: expect.stringContaining(`its holder ${paths.tool} is not built`) });
  });

  it('reads this host as it is, in the doctor too', async () => {
    const tier = new KernelTier({ proc: '/proc', sys: '/sys', module: '/nonexistent/grove_share.ko', tool: '/nonexistent/grove-share' });
    const expected = existsSync('/proc/modules') ? 'no grove_share.ko built' : 'was built without module support';
    expect((await tier.current()).memory).toContain(expected);
    expect(await tier.doctorCheck()).toEqual({ name: 'kernel tier', ok: true, detail: `grove_share not loaded; fork memory ${(await tier.current()).memory}` });
  });
});
