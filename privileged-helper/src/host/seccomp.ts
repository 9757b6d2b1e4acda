// The seccomp filter of every branch: an allow list of the system calls a
// desktop and the programs an agent runs there need. Everything else fails —
// with EPERM where refusing is the point (mounts, namespaces, keyrings, kernel
// modules…), with ENOSYS otherwise, so programs that probe for a newer call
// fall back as they would on an older kernel. It is at least as strict as
// Podman's default profile for the same capabilities (a unit test compares the
// two when Debian's copy of Podman's is in the cache) and stricter where a
// desktop needs less: no new namespaces, no mounts, no io_uring (which CRIU
// cannot dump either), no netlink audit or packet sockets.
//
// One definition, two renderings: the OCI spec's `linux.seccomp` for crun
// (the branch's init and everything it starts; CRIU restores the filter in
// forks and rollbacks) and a rule file for native/grove-enter.c (what `exec`
// and terminals start inside a branch).

const EPERM = 1;
const ENOSYS = 38;

export type ArgOp = 'eq' | 'ne' | 'lt' | 'le' | 'gt' | 'ge' | 'masked_eq';
export interface ArgRule {
  index: number;
  op: ArgOp;
  value: number;
  /** For masked_eq: the value the masked argument must equal (value is the mask). */
  value2?: number;
}

/** Allowed as they are. */
const ALLOWED: readonly string[] = [
  // files and directories
  'access',
  'faccessat',
  'faccessat2',
  'open',
  'openat',
  'openat2',
  'creat',
  'close',
  'close_range',
  'read',
  'readv',
  'pread64',
  'preadv',
  'preadv2',
  'write',
  'writev',
  'pwrite64',
  'pwritev',
  'pwritev2',
  'lseek',
  'stat',
  'fstat',
  'lstat',
  'newfstatat',
  'statx',
  'statfs',
  'fstatfs',
  'getdents',
  'getdents64',
  'getcwd',
  'chdir',
  'fchdir',
  'mkdir',
  'mkdirat',
  'rmdir',
  'rename',
  'renameat',
  'renameat2',
  'link',
  'linkat',
  'unlink',
  'unlinkat',
  'symlink',
  'symlinkat',
  'readlink',
  'readlinkat',
  'chmod',
  'fchmod',
  'fchmodat',
  'chown',
  'fchown',
  'fchownat',
  'lchown',
  'truncate',
  'ftruncate',
  'fallocate',
  'fadvise64',
  'readahead',
  'fsync',
  'fdatasync',
  'sync',
  'syncfs',
  'sync_file_range',
  'umask',
  'utime',
  'utimes',
  'utimensat',
  'futimesat',
  'copy_file_range',
  'sendfile',
  'splice',
  'tee',
  'flock',
  'fcntl',
  'dup',
  'dup2',
  'dup3',
  'pipe',
  'pipe2',
  'mknod',
  'mknodat', // devices still need CAP_MKNOD (dropped) and the devices cgroup's allow list
  'getxattr',
  'lgetxattr',
  'fgetxattr',
  'setxattr',
  'lsetxattr',
  'fsetxattr',
  'listxattr',
  'llistxattr',
  'flistxattr',
  'removexattr',
  'lremovexattr',
  'fremovexattr',
  'inotify_init',
  'inotify_init1',
  'inotify_add_watch',
  'inotify_rm_watch',
  'fanotify_mark',
  'memfd_create',
  'memfd_secret',
  // waiting and events
  'select',
  'pselect6',
  'poll',
  'ppoll',
  'epoll_create',
  'epoll_create1',
  'epoll_ctl',
  'epoll_ctl_old',
  'epoll_wait',
  'epoll_wait_old',
  'epoll_pwait',
  'epoll_pwait2',
  'eventfd',
  'eventfd2',
  'signalfd',
  'signalfd4',
  'timerfd_create',
  'timerfd_settime',
  'timerfd_gettime',
  'futex',
  'get_robust_list',
  'set_robust_list',
  'io_setup',
  'io_destroy',
  'io_submit',
  'io_cancel',
  'io_getevents',
  // memory
  'brk',
  'mmap',
  'munmap',
  'mremap',
  'mprotect',
  'madvise',
  'mincore',
  'msync',
  'mlock',
  'mlock2',
  'munlock',
  'mlockall',
  'munlockall',
  'remap_file_pages',
  'membarrier',
  'mbind',
  'get_mempolicy',
  'set_mempolicy',
  'pkey_alloc',
  'pkey_free',
  'pkey_mprotect',
  // processes and threads (clone is below: only without new namespaces)
  'fork',
  'vfork',
  'execve',
  'execveat',
  'exit',
  'exit_group',
  'wait4',
  'waitid',
  'getpid',
  'getppid',
  'gettid',
  'set_tid_address',
  'getpgid',
  'setpgid',
  'getpgrp',
  'getsid',
  'setsid',
  'arch_prctl',
  'modify_ldt',
  'get_thread_area',
  'set_thread_area',
  'prctl',
  'rseq',
  'ptrace',
  'process_vm_readv',
  'process_vm_writev',
  'process_mrelease',
  'pidfd_open',
  'pidfd_getfd',
  'pidfd_send_signal',
  'sched_yield',
  'sched_getaffinity',
  'sched_setaffinity',
  'sched_getattr',
  'sched_setattr',
  'sched_getparam',
  'sched_setparam',
  'sched_getscheduler',
  'sched_setscheduler',
  'sched_get_priority_max',
  'sched_get_priority_min',
  'sched_rr_get_interval',
  'getpriority',
  'setpriority',
  'ioprio_get',
  'ioprio_set',
  'getrlimit',
  'setrlimit',
  'prlimit64',
  'getrusage',
  'times',
  'getcpu',
  'seccomp',
  'landlock_create_ruleset',
  'landlock_add_rule',
  'landlock_restrict_self',
  // identity
  'getuid',
  'geteuid',
  'getgid',
  'getegid',
  'getresuid',
  'getresgid',
  'getgroups',
  'setuid',
  'setgid',
  'setreuid',
  'setregid',
  'setresuid',
  'setresgid',
  'setfsuid',
  'setfsgid',
  'setgroups',
  'capget',
  'capset',
  // signals
  'kill',
  'tkill',
  'tgkill',
  'rt_sigaction',
  'rt_sigprocmask',
  'rt_sigreturn',
  'rt_sigpending',
  'rt_sigsuspend',
  'rt_sigtimedwait',
  'rt_sigqueueinfo',
  'rt_tgsigqueueinfo',
  'sigaltstack',
  'pause',
  'restart_syscall',
  'alarm',
  // time
  'time',
  'gettimeofday',
  'clock_gettime',
  'clock_getres',
  'clock_nanosleep',
  'nanosleep',
  'clock_adjtime',
  'adjtimex',
  'getitimer',
  'setitimer',
  'timer_create',
  'timer_settime',
  'timer_gettime',
  'timer_getoverrun',
  'timer_delete',
  // sockets (socket itself is below: not packet sockets, not netlink audit)
  'socketpair',
  'bind',
  'listen',
  'accept',
  'accept4',
  'connect',
  'shutdown',
  'getsockname',
  'getpeername',
  'getsockopt',
  'setsockopt',
  'sendto',
  'sendmsg',
  'sendmmsg',
  'recvfrom',
  'recvmsg',
  'recvmmsg',
  // System V and POSIX IPC (the branch's own ipc namespace)
  'shmget',
  'shmat',
  'shmdt',
  'shmctl',
  'semget',
  'semop',
  'semtimedop',
  'semctl',
  'msgget',
  'msgsnd',
  'msgrcv',
  'msgctl',
  'mq_open',
  'mq_unlink',
  'mq_timedsend',
  'mq_timedreceive',
  'mq_notify',
  'mq_getsetattr',
  // the system
  'uname',
  'sysinfo',
  'getrandom',
];

/** Namespace flags of clone(2): none may be asked for. */
const CLONE_NEW_ANY = 0x7e020000;
const AF_NETLINK = 16;
const AF_PACKET = 17;
const AF_VSOCK = 40;
const NETLINK_AUDIT = 9;
/** ioctl's request is an unsigned int: the kernel drops the upper half of the register, which the filter sees. */
const IOCTL_REQUEST = 0xffffffff;
/**
 * btrfs's ioctls that make a subvolume (BTRFS_IOC_SNAP_CREATE, SUBVOL_CREATE,
 * SNAP_CREATE_V2, SUBVOL_CREATE_V2). Any user may make one in a directory it
 * can write, and /root is the branch's own btrfs directory: a subvolume made
 * there is charged to a quota of its own, not to the branch's disk limit
 * (host/disk-quota.ts), and the branch's files could no longer be deleted.
 */
const BTRFS_SUBVOLUME_CREATE = [0x50009401, 0x5000940e, 0x50009417, 0x50009418];

/** Allowed only with these arguments (several rules for one call: any may match). */
const CONDITIONAL: readonly { name: string; args: readonly ArgRule[] }[] = [
  // Threads and processes, never with new namespaces: a user namespace would
  // give a process capabilities again (over the new namespace's mounts).
  { name: 'clone', args: [{ index: 0, op: 'masked_eq', value: CLONE_NEW_ANY, value2: 0 }] },
  // Any socket but packet sockets (raw frames would skip the branch's firewall),
  // vsock (it ignores network namespaces: the hypervisor's services, past the
  // firewall and the gate) and the kernel's audit log. The families between
  // packet and vsock one by one: libseccomp takes one comparison per argument.
  { name: 'socket', args: [{ index: 0, op: 'lt', value: AF_NETLINK }] },
  {
    name: 'socket',
    args: [
      { index: 0, op: 'eq', value: AF_NETLINK },
      { index: 2, op: 'ne', value: NETLINK_AUDIT },
    ],
  },
  ...familiesBetween(AF_PACKET, AF_VSOCK).map((family) => ({ name: 'socket', args: [{ index: 0, op: 'eq' as const, value: family }] })),
  { name: 'socket', args: [{ index: 0, op: 'gt', value: AF_VSOCK }] },
  // personality: the usual persona and its queries only (0xffffffff asks).
  ...[0, 0x8, 0x20000, 0x20008, 0xffffffff].map((value) => ({ name: 'personality', args: [{ index: 0, op: 'eq' as const, value }] })),
  // Every ioctl but those REFUSED_WHEN names, under a condition always true:
  // libseccomp drops a call's conditional refusals when it is allowed without one.
  { name: 'ioctl', args: [{ index: 0, op: 'ge', value: 0 }] },
];

/** Refused with EPERM with these arguments only, out of a call CONDITIONAL allows otherwise. */
const REFUSED_WHEN: readonly { name: string; args: readonly ArgRule[] }[] = BTRFS_SUBVOLUME_CREATE.map((request) => ({
  name: 'ioctl',
  args: [{ index: 1, op: 'masked_eq', value: IOCTL_REQUEST, value2: request }],
}));

function familiesBetween(low: number, high: number): number[] {
  return Array.from({ length: high - low - 1 }, (_, i) => low + 1 + i);
}

/** Refused with EPERM, so a program is told plainly that the sandbox says no. */
const REFUSED: readonly string[] = [
  'mount',
  'umount2',
  'pivot_root',
  'open_tree',
  'move_mount',
  'fsopen',
  'fsconfig',
  'fsmount',
  'fspick',
  'mount_setattr',
  'chroot',
  'unshare',
  'setns',
  'sethostname',
  'setdomainname',
  'init_module',
  'finit_module',
  'delete_module',
  'kexec_load',
  'kexec_file_load',
  'reboot',
  'swapon',
  'swapoff',
  'acct',
  'keyctl',
  'add_key',
  'request_key',
  'syslog',
  'bpf',
  'perf_event_open',
  'userfaultfd',
  'lookup_dcookie',
  'name_to_handle_at',
  'open_by_handle_at',
  'quotactl',
  'quotactl_fd',
  'iopl',
  'ioperm',
  'settimeofday',
  'clock_settime',
  'vhangup',
  'kcmp',
  'process_madvise',
  'move_pages',
  'migrate_pages',
  'vmsplice',
  'fanotify_init',
  'io_uring_setup',
  'io_uring_enter',
  'io_uring_register',
];

export interface SeccompProfile {
  defaultErrno: number;
  allowed: readonly string[];
  conditional: typeof CONDITIONAL;
  errno: readonly { names: readonly string[]; errno: number }[];
  /** Refused with EPERM with these arguments only. */
  refusedWhen: typeof REFUSED_WHEN;
}

export const BRANCH_SECCOMP: SeccompProfile = {
  defaultErrno: ENOSYS,
  allowed: ALLOWED,
  conditional: CONDITIONAL,
  // clone3 is left to the default, ENOSYS: glibc then falls back to clone(2),
  // whose flags the filter can see (clone3 passes them in memory it cannot).
  errno: [{ names: REFUSED, errno: EPERM }],
  refusedWhen: REFUSED_WHEN,
};

const OCI_OP: Record<ArgOp, string> = {
  eq: 'SCMP_CMP_EQ',
  ne: 'SCMP_CMP_NE',
  lt: 'SCMP_CMP_LT',
  le: 'SCMP_CMP_LE',
  gt: 'SCMP_CMP_GT',
  ge: 'SCMP_CMP_GE',
  masked_eq: 'SCMP_CMP_MASKED_EQ',
};

/** `linux.seccomp` of the OCI runtime spec. */
export function ociSeccomp(p: SeccompProfile = BRANCH_SECCOMP): object {
  return {
    defaultAction: 'SCMP_ACT_ERRNO',
    defaultErrnoRet: p.defaultErrno,
    architectures: ['SCMP_ARCH_X86_64', 'SCMP_ARCH_X86', 'SCMP_ARCH_X32'],
    syscalls: [
      { names: [...p.allowed], action: 'SCMP_ACT_ALLOW' },
      ...p.conditional.map((c) => ({ names: [c.name], action: 'SCMP_ACT_ALLOW', args: c.args.map(ociArg) })),
      ...p.errno.map((e) => ({ names: [...e.names], action: 'SCMP_ACT_ERRNO', errnoRet: e.errno })),
      ...p.refusedWhen.map((r) => ({ names: [r.name], action: 'SCMP_ACT_ERRNO', errnoRet: EPERM, args: r.args.map(ociArg) })),
    ],
  };
}

function ociArg(a: ArgRule): object {
  return { index: a.index, value: a.value, valueTwo: a.value2 ?? 0, op: OCI_OP[a.op] };
}

/** The rule file native/grove-enter.c reads (its format is described there). */
export function enterSeccompRules(p: SeccompProfile = BRANCH_SECCOMP): string {
  const arg = (a: ArgRule) => (a.op === 'masked_eq' ? `${a.index} masked_eq ${a.value} ${a.value2 ?? 0}` : `${a.index} ${a.op} ${a.value}`);
  return [
    `default ${p.defaultErrno}`,
    ...p.allowed.map((n) => `allow ${n}`),
    ...p.conditional.map((c) => `allow ${c.name} ${c.args.map(arg).join(' ')}`),
    ...p.errno.flatMap((e) => e.names.map((n) => `errno ${e.errno} ${n}`)),
    ...p.refusedWhen.map((r) => `errno ${EPERM} ${r.name} ${r.args.map(arg).join(' ')}`),
    '',
  ].join('\n');
}
