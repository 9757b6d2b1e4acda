import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { BRANCH_CAPS } from '../../src/host/oci-spec.js';
import { BRANCH_SECCOMP, enterSeccompRules, ociSeccomp } from '../../src/host/seccomp.js';

interface PodmanRule {
  names: string[];
  action: string;
  args?: unknown[] | null;
  includes?: { caps?: string[]; arches?: string[] };
  excludes?: { caps?: string[] };
}

/** What Podman's default profile allows a container with our capabilities on x86_64 (fetched by build/host/setup.sh). */
function podmanAllows(): { always: Set<string>; withArgs: Set<string> } {
  const file = path.join(loadConfig().cacheDir, 'podman-seccomp.json');
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { syscalls: PodmanRule[] };
  const always = new Set<string>();
  const withArgs = new Set<string>();
  for (const r of profile.syscalls) {
    if (r.action !== 'SCMP_ACT_ALLOW') continue;
    const caps = r.includes?.caps ?? [];
    if (!caps.every((c) => BRANCH_CAPS.includes(c))) continue;
    if ((r.excludes?.caps ?? []).some((c) => BRANCH_CAPS.includes(c))) continue;
    const arches = r.includes?.arches;
    if (arches && !arches.includes('amd64')) continue;
    for (const n of r.names) (r.args?.length ? withArgs : always).add(n);
  }
  return { always, withArgs };
}

describe("the branches' seccomp filter", () => {
  it("is at least as strict as Podman's default profile for the same capabilities", () => {
    const podman = podmanAllows();
    const notInPodman = BRANCH_SECCOMP.allowed.filter((n) => !podman.always.has(n));
    expect(notInPodman).toEqual([]);
    // What we allow only with some arguments, Podman allows at all.
    for (const c of BRANCH_SECCOMP.conditional) expect(podman.always.has(c.name) || podman.withArgs.has(c.name), c.name).toBe(true);
    // And stricter where a desktop needs less.
    for (const n of ['mount', 'unshare', 'setns', 'keyctl', 'io_uring_setup', 'ptrace']) {
      expect(BRANCH_SECCOMP.allowed.includes(n), n).toBe(n === 'ptrace');
    }
  });

  it('allows each call in one place only', () => {
    const refused = BRANCH_SECCOMP.errno.flatMap((e) => e.names);
    const conditional = new Set(BRANCH_SECCOMP.conditional.map((c) => c.name));
    const all = [...BRANCH_SECCOMP.allowed, ...conditional, ...refused];
    expect(all.length).toBe(new Set(all).size);
    // A refusal with arguments holds only beside a conditional allow (libseccomp drops it beside an unconditional one).
    for (const r of BRANCH_SECCOMP.refusedWhen) expect(conditional.has(r.name), r.name).toBe(true);
  });

  it('refuses the ioctls that make a btrfs subvolume (out of the disk limit), whatever the upper half of the request, and no other', () => {
    const requests = BRANCH_SECCOMP.refusedWhen.filter((r) => r.name === 'ioctl').map((r) => r.args);
    // SNAP_CREATE, SUBVOL_CREATE, SNAP_CREATE_V2, SUBVOL_CREATE_V2 (linux/btrfs.h).
    expect(requests).toEqual([0x50009401, 0x5000940e, 0x50009417, 0x50009418].map((value2) => [{ index: 1, op: 'masked_eq', value: 0xffffffff, value2 }]));
    expect(BRANCH_SECCOMP.conditional.filter((c) => c.name === 'ioctl')).toEqual([{ name: 'ioctl', args: [{ index: 0, op: 'ge', value: 0 }] }]);
  });

  it('renders for crun as the OCI spec wants it', () => {
    const oci = ociSeccomp() as {
      defaultAction: string;
      defaultErrnoRet: number;
      syscalls: { names: string[]; action: string; args?: { op: string }[]; errnoRet?: number }[];
    };
    expect(oci).toMatchObject({ defaultAction: 'SCMP_ACT_ERRNO', defaultErrnoRet: 38 });
    expect(oci.syscalls.find((s) => s.names.includes('clone'))!.args).toEqual([{ index: 0, value: 0x7e020000, valueTwo: 0, op: 'SCMP_CMP_MASKED_EQ' }]);
    expect(oci.syscalls.find((s) => s.names.includes('mount'))).toMatchObject({ action: 'SCMP_ACT_ERRNO', errnoRet: 1 });
    expect(oci.syscalls.find((s) => s.names.includes('clone3'))).toBeUndefined(); // the default: ENOSYS
    expect(oci.syscalls.filter((s) => s.names.includes('ioctl')).map((s) => [s.action, s.errnoRet, s.args])).toContainEqual([
      'SCMP_ACT_ERRNO',
      1,
      [{ index: 1, value: 0xffffffff, valueTwo: 0x5000940e, op: 'SCMP_CMP_MASKED_EQ' }],
    ]);
  });

  it('renders for grove-enter one rule a line', () => {
    const lines = enterSeccompRules().split('\n');
    expect(lines[0]).toBe('default 38');
    expect(lines).toContain('allow read');
    expect(lines).toContain('allow clone 0 masked_eq 2114060288 0');
    expect(lines).toContain('allow socket 0 eq 16 2 ne 9');
    // Every family but packet (17) and vsock (40): below netlink, 18-39 one by one, above vsock.
    expect(lines).toContain('allow socket 0 lt 16');
    expect(lines).toContain('allow socket 0 eq 18');
    expect(lines).toContain('allow socket 0 eq 39');
    expect(lines).toContain('allow socket 0 gt 40');
    for (const admitsPacketOrVsock of ['allow socket 0 eq 17', 'allow socket 0 eq 40', 'allow socket 0 gt 17'])
      expect(lines).not.toContain(admitsPacketOrVsock);
    expect(lines).toContain('errno 1 mount');
    expect(lines).toContain('allow ioctl 0 ge 0');
    expect(lines).not.toContain('allow ioctl');
    expect(lines).toContain(`errno 1 ioctl 1 masked_eq ${0xffffffff} ${0x5000940e}`);
    expect(lines.some((l) => l.endsWith(' clone3'))).toBe(false);
  });
});
