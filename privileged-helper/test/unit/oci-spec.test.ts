import { describe, expect, it } from 'vitest';
import { BASE_ENV, containerSpec, SESSION_LOG } from '../../src/host/oci-spec.js';

interface Spec {
  ociVersion: string;
  process: {
    terminal: boolean;
    user: { uid: number; gid: number };
    args: string[];
    env: string[];
    cwd: string;
    capabilities: Record<'bounding' | 'effective' | 'permitted', string[]> & Record<string, string[] | undefined>;
    noNewPrivileges: boolean;
  };
  root: { path: string; readonly: boolean };
  hostname: string;
  mounts: { destination: string; type: string; source: string; options: string[] }[];
  linux: { namespaces: { type: string; path?: string }[]; maskedPaths: string[]; readonlyPaths: string[]; seccomp?: object };
}

const input = {
  rootfs: '/pool/workspaces/0123abcd',
  hostname: 'alpha',
  netnsPath: '/run/netns/grove-t1-0123abcd',
  caged: true,
  idRange: null,
  netnsSysfs: '/run/grove-roots/grove-t1-0123abcd.sys',
};
const spec = containerSpec(input) as Spec;

describe('containerSpec', () => {
  it('uses the given rootfs and hostname', () => {
    expect(spec.root).toEqual({ path: input.rootfs, readonly: false });
    expect(spec.hostname).toBe('alpha');
  });

  it('grants neither CAP_SYS_ADMIN nor CAP_NET_ADMIN in any capability set', () => {
    const sets = Object.values(spec.process.capabilities).filter((s): s is string[] => Array.isArray(s));
    expect(sets.length).toBeGreaterThanOrEqual(3);
    for (const set of sets) {
      expect(set).not.toContain('CAP_SYS_ADMIN');
      expect(set).not.toContain('CAP_NET_ADMIN');
      expect(set).not.toContain('CAP_SYS_MODULE');
      expect(set).not.toContain('CAP_SYS_PTRACE');
      expect(set.every((c) => /^CAP_[A-Z_]+$/.test(c))).toBe(true);
    }
    // Effective and permitted never exceed the bounding set.
    const bounding = new Set(spec.process.capabilities.bounding);
    for (const c of [...spec.process.capabilities.effective, ...spec.process.capabilities.permitted]) expect(bounding.has(c)).toBe(true);
  });

  it('joins the pre-made network namespace by path instead of creating one', () => {
    const net = spec.linux.namespaces.filter((n) => n.type === 'network');
    expect(net).toEqual([{ type: 'network', path: input.netnsPath }]);
  });

  it('gives the container fresh pid, mount, ipc and uts namespaces', () => {
    for (const type of ['pid', 'mount', 'ipc', 'uts']) {
      const ns = spec.linux.namespaces.filter((n) => n.type === type);
      expect(ns, type).toHaveLength(1);
      // A path would join an existing namespace; these must be new.
      expect(ns[0]!.path, type).toBeUndefined();
    }
  });

  it('redirects stdio away from the runtime’s pipes before exec’ing tini', () => {
    const [shell, flag, script] = spec.process.args;
    expect(shell).toBe('/bin/sh');
    expect(flag).toBe('-c');
    expect(spec.process.args).toHaveLength(3);
    const redirect = script!.indexOf('exec </dev/null');
    const tini = script!.indexOf('exec /usr/bin/tini');
    expect(redirect).toBeGreaterThanOrEqual(0);
    expect(tini).toBeGreaterThan(redirect);
    const redirectPart = script!.slice(redirect, tini);
    expect(redirectPart).toContain(`>>${SESSION_LOG}`);
    expect(redirectPart).toContain('2>&1');
    // tini is exec'd (replacing the shell) and runs the session script as its child.
    expect(script!.slice(tini)).toMatch(/^exec \/usr\/bin\/tini -- \S+session\.sh$/);
  });

  it('runs as root with the base environment plus a terminal type, and no terminal', () => {
    expect(spec.process.user).toEqual({ uid: 0, gid: 0 });
    expect(spec.process.terminal).toBe(false);
    expect(spec.process.env).toEqual([...BASE_ENV, 'TERM=xterm-256color']);
    expect(spec.process.env.find((e) => e.startsWith('PATH='))).toBeDefined();
  });

  it('mounts /sys read-only and masks sensitive /proc paths', () => {
    const sys = spec.mounts.find((m) => m.destination === '/sys');
    expect(sys?.options).toContain('ro');
    expect(spec.linux.maskedPaths).toEqual(expect.arrayContaining(['/proc/kcore', '/proc/keys', '/sys/firmware']));
    expect(spec.linux.readonlyPaths).toEqual(expect.arrayContaining(['/proc/sys', '/proc/sysrq-trigger']));
  });

  it('returns a fresh spec each call that does not share state with another workspace', () => {
    const other = containerSpec({ ...input, rootfs: '/pool/workspaces/ffffffff', hostname: 'beta', netnsPath: '/run/netns/grove-t1-ffffffff' }) as Spec;
    expect(other.root.path).toBe('/pool/workspaces/ffffffff');
    expect(other.linux.namespaces.find((n) => n.type === 'network')?.path).toBe('/run/netns/grove-t1-ffffffff');
    expect(spec.linux.namespaces.find((n) => n.type === 'network')?.path).toBe(input.netnsPath);
    // The spec survives a JSON round trip unchanged (it is written to config.json).
    expect(JSON.parse(JSON.stringify(spec))).toEqual(spec);
  });

  it("drops the cage only when asked (the benchmark's uncaged comparison)", () => {
    const uncaged = containerSpec({ ...input, caged: false }) as Spec;
    expect(uncaged.process.noNewPrivileges).toBe(false);
    expect(uncaged.linux.seccomp).toBeUndefined();
    expect(uncaged.process.capabilities.bounding).toEqual(expect.arrayContaining(['CAP_MKNOD', 'CAP_NET_RAW']));
    expect(spec.process.capabilities.bounding).not.toContain('CAP_MKNOD');
  });

  it("runs a tree's root as its own host ids in a user namespace, with its network namespace's sysfs bound read-only", () => {
    const userns = containerSpec({ ...input, idRange: { hostBase: 16_777_216, size: 65_536 } }) as Spec & {
      linux: { uidMappings: unknown[]; gidMappings: unknown[] };
    };
    expect(userns.linux.namespaces[0]).toEqual({ type: 'user' });
    const map = [{ containerID: 0, hostID: 16_777_216, size: 65_536 }];
    expect(userns.linux.uidMappings).toEqual(map);
    expect(userns.linux.gidMappings).toEqual(map);
    expect(userns.mounts.find((m) => m.destination === '/sys')).toEqual({
      destination: '/sys',
      type: 'bind',
      source: input.netnsSysfs,
      options: ['bind', 'nosuid', 'noexec', 'nodev', 'ro'],
    });
    expect(spec.linux.namespaces.map((n) => n.type)).not.toContain('user');
  });
});
