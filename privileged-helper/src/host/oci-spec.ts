// The OCI runtime spec of a workspace container: its own pid/mnt/uts/ipc
// namespaces, the pre-made network namespace, Docker's default capabilities
// (no CAP_NET_ADMIN or CAP_SYS_ADMIN: the workspace cannot touch its firewall
// or mounts), and an init that keeps no host file descriptors open, which CRIU
// needs to dump the tree later.
import { PROXY_ENV } from '../egress/workspace-config.js';

/** Docker's default capability set: what a workspace's processes (and exec'd commands) may use. */
export const DEFAULT_CAPS = [
  'CAP_CHOWN',
  'CAP_DAC_OVERRIDE',
  'CAP_FSETID',
  'CAP_FOWNER',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETGID',
  'CAP_SETUID',
  'CAP_SETFCAP',
  'CAP_SETPCAP',
  'CAP_NET_BIND_SERVICE',
  'CAP_SYS_CHROOT',
  'CAP_KILL',
  'CAP_AUDIT_WRITE',
];

export const SESSION_LOG = '/var/log/grove-session.log';
/** Every workspace process's environment; the proxy variables point its apps at the egress gate. */
export const BASE_ENV = ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin', 'HOME=/root', 'DISPLAY=:0', 'LANG=C.UTF-8', ...PROXY_ENV];

export interface ContainerSpecInput {
  rootfs: string;
  hostname: string;
  netnsPath: string;
}

export function containerSpec(input: ContainerSpecInput): object {
  const caps = { bounding: DEFAULT_CAPS, effective: DEFAULT_CAPS, permitted: DEFAULT_CAPS };
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
      noNewPrivileges: false,
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
      { destination: '/sys', type: 'sysfs', source: 'sysfs', options: ['nosuid', 'noexec', 'nodev', 'ro'] },
    ],
    linux: {
      namespaces: [
        { type: 'pid' },
        { type: 'ipc' },
        { type: 'uts' },
        { type: 'mount' },
        { type: 'network', path: input.netnsPath },
      ],
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
    },
  };
}
