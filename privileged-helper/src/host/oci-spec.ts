// The OCI runtime spec of a workspace container: its own user namespace (its
// root is the tree's unprivileged host ids, registry/id-ranges.ts), its own
// pid/mnt/uts/ipc namespaces, the pre-made network namespace, the branch's capabilities (no
// CAP_NET_ADMIN or CAP_SYS_ADMIN: the workspace cannot touch its firewall or
// mounts), no_new_privs and the branch's seccomp filter (seccomp.ts), and an
// init that keeps no host file descriptors open, which CRIU needs to dump the
// tree later. Its cgroups are the helper's (cgroups.ts): crun runs inside them.
import { PROXY_ENV } from './branch-network.js';
import type { IdRange } from './idmap.js';
import { ociSeccomp } from './seccomp.js';

/**
 * What a branch's processes (and exec'd commands) may use: Docker's default
 * set without what a desktop does not need and an escape would — CAP_MKNOD
 * (device nodes: the pool's loop device), CAP_NET_RAW (raw and packet sockets
 * skip the branch's firewall), CAP_SYS_CHROOT, CAP_AUDIT_WRITE, CAP_SETFCAP.
 * CAP_DAC_OVERRIDE stays: root tools (apt among them) expect it, and it
 * reaches only the branch's own files.
 */
export const BRANCH_CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_KILL',
];

/**
 * What `grove bench` compares the cage with (GROVE_BENCH_UNCAGED, its own
 * helper instance only): Docker's default set, no no_new_privs, no seccomp.
 */
const UNCAGED_CAPS = [...BRANCH_CAPS, 'CAP_MKNOD', 'CAP_NET_RAW', 'CAP_SYS_CHROOT', 'CAP_AUDIT_WRITE', 'CAP_SETFCAP'];

export const SESSION_LOG = '/var/log/grove-session.log';
/** Every workspace process's environment; the proxy variables point its apps at the egress gate. */
export const BASE_ENV = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'HOME=/root', 'DISPLAY=:0', 'LANG=C.UTF-8', ...PROXY_ENV];

export interface ContainerSpecInput {
  rootfs: string;
  hostname: string;
  netnsPath: string;
  /** False only for the benchmark's uncaged comparison. */
  caged: boolean;
  /** The tree's host ids (its user namespace); null for a tree made before user namespaces. */
  idRange: IdRange | null;
  /** A sysfs of the network namespace, on the host (host/netns-sysfs.ts): /sys in a user namespace. */
  netnsSysfs: string;
}

export function containerSpec(input: ContainerSpecInput): object {
  const set = input.caged ? BRANCH_CAPS : UNCAGED_CAPS;
  const caps = { bounding: set, effective: set, permitted: set };
  return {
    ociVersion: '1.0.2',
    process: {
      terminal: false,
      user: { uid: 0, gid: 0 },
      // Redirect stdio away from crun's pipes first, then tini reaps and session.sh starts the desktop.
      args: ['/bin/sh', '-c', `exec </dev/null >>${SESSION_LOG} 2>&1; exec /usr/bin/tini -- /usr/local/lib/grove/session.sh`],
      env: [...BASE_ENV, 'TERM=xterm-256color'],
      cwd: '/root',
      capabilities: caps,
      rlimits: [{ type: 'RLIMIT_NOFILE', hard: 16384, soft: 16384 }],
      // No setuid/setgid gains, ever (and the seccomp filter needs it).
      noNewPrivileges: input.caged,
    },
    root: { path: input.rootfs, readonly: false },
    hostname: input.hostname,
    mounts: [
      { destination: '/proc', type: 'proc', source: 'proc', options: ['nosuid', 'noexec', 'nodev'] },
      { destination: '/dev', type: 'tmpfs', source: 'tmpfs', options: ['nosuid', 'strictatime', 'mode=755', 'size=65536k'] },
      {
        destination: '/dev/pts',
        type: 'devpts',
        source: 'devpts',
        options: ['nosuid', 'noexec', 'newinstance', 'ptmxmode=0666', 'mode=0620', 'gid=5'],
      },
      { destination: '/dev/shm', type: 'tmpfs', source: 'shm', options: ['nosuid', 'noexec', 'nodev', 'mode=1777', 'size=256m'] },
      { destination: '/dev/mqueue', type: 'mqueue', source: 'mqueue', options: ['nosuid', 'noexec', 'nodev'] },
      sysMount(input),
    ],
    linux: {
      namespaces: [
        ...(input.idRange ? [{ type: 'user' }] : []),
        { type: 'pid' },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'mount' },
        { type: 'network', path: input.netnsPath },
      ],
      ...(input.idRange ? idMappings(input.idRange) : {}),
      maskedPaths: [
        '/proc/acpi',
        '/proc/kcore',
        '/proc/keys',
        '/proc/latency_stats',
        '/proc/timer_list',
        '/proc/timer_stats',
        '/proc/sched_debug',
        '/proc/scsi',
        '/sys/firmware',
      ],
      readonlyPaths: ['/proc/asound', '/proc/bus', '/proc/fs', '/proc/irq', '/proc/sys', '/proc/sysrq-trigger'],
      ...(input.caged ? { seccomp: ociSeccomp() } : {}),
    },
  };
}

/** Container ids 0.. are the tree's host ids hostBase.., for users and groups alike. */
function idMappings(range: IdRange) {
  const map = [{ containerID: 0, hostID: range.hostBase, size: range.size }];
  return { uidMappings: map, gidMappings: map };
}

/**
 * sysfs may be mounted only by the owner of the network namespace, which the
 * host made: in a user namespace the branch gets a read-only bind of the
 * sysfs the host mounted from its network namespace instead (CRIU restores
 * it from the same kind of mount). Either way it lists only the branch's own
 * network devices.
 */
function sysMount(input: ContainerSpecInput) {
  return input.idRange
    ? { destination: '/sys', type: 'bind', source: input.netnsSysfs, options: ['bind', 'nosuid', 'noexec', 'nodev', 'ro'] }
    : { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] };
}
