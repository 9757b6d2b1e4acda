// What went wrong, from a failed CRIU run's log: its first real error, with
// the noise every run prints on this host left out, the process it was about
// (a restore's lines carry the task's pid inside the tree; a dump names the
// host pid it was dumping) and, for the causes seen here, what to do about
// it. Pure, so it is unit-tested (test/unit/criu-errors.test.ts).

/** Printed by every run on this host, whatever happened: never the cause. */
const NOISE = [
  /rlimit: Can't setup RLIMIT_NOFILE for self/,
  /tun: Unable to create tun/,
  /cgroupd: recv req error/,
  /Dumping FAILED|Restoring FAILED/,
  /exited, status=/, // a child task gave up: its own error comes first
  /Can't wait or bad status/,
];

/** CRIU ran out of room where it writes (its images, a ghost file's copy). */
const NO_SPACE = /No space left on device|ENOSPC/;

/** Causes with advice: what the person or agent can do. */
const ADVICE: [RegExp, string][] = [
  [NO_SPACE, 'the pool is full: discard branches or versions, then try again'],
  [/netlink: The socket has data to read/, 'a program had not read its network events yet; try again in a moment'],
  [
    /Unseizable non-zombie|Can't seize|Timeout reached/,
    'a process could not be stopped in time (it may be stopped, traced or very busy); try again, or end it',
  ],
  [
    /Connected TCP socket|Connected UNIX socket to outside|External socket is used/,
    'a process holds a connection CRIU cannot take along; close it (or end the process) and try again',
  ],
  [/Can't dump (?:ghost|deleted) file|ghost-limit/, 'a process holds a big deleted file open; close it and try again'],
  [/device|Can't dump .*(?:char|block)/i, 'a process holds a device the branch cannot take along; end it and try again'],
  [/Can't dump file \d+ of that type/, 'a process holds a kind of file a fork cannot take along (named above); close it or end the process, then try again'],
  [/Can't lookup mount=\d+ for fd=\d+/, 'a process holds a file from outside the branch (named above); close it or end the process, then try again'],
  [/Control messages in queue/, "a process has not read a message that carries its sender's credentials (named above); try again in a moment, or end it"],
];

/**
 * Dumps worth another try a moment later:
 * - a netlink socket with messages its process has not read yet (Chromium's
 *   network-change watcher, a moment after an address or route event);
 * - a task still in tracing stop (state t), as the tasks of a tree CRIU has
 *   just restored can be for a moment (seen in a checkpoint right after a
 *   rollback). One a debugger really holds stays so, and the last try says so;
 * - a socket in flight (held only by a message not read yet) with data of
 *   its own not sent yet, which CRIU cannot dump (seen with mousepad, GTK, a
 *   moment after it handed a socket to another process, which then reads it);
 * - a message waiting on a socket that asked for its senders' credentials
 *   (SO_PASSCRED): CRIU can keep descriptors in flight, not credentials (seen
 *   with Chromium's crash handler under qemu, a moment after a renderer
 *   registered with it).
 */
export function transientDumpFailure(log: string): boolean {
  return /netlink: The socket has data to read|Unseizable non-zombie \d+ found, state t,|Non-empty write queue on an in-flight socket|Control messages in queue, not supported/.test(
    log,
  );
}

export interface CriuFailure {
  /** The first real error line, without CRIU's timestamp and pid prefix. */
  cause: string;
  /** The pid the error is about: inside the tree (restore) or on the host (dump), if the log says. */
  pid: { inside: number } | { host: number } | null;
  advice: string | null;
  /** One of its errors says it ran out of space. */
  noSpace: boolean;
}

/** A CRIU log's error lines, in order, without the noise every run prints. */
export function criuErrors(log: string): string[] {
  return log.split('\n').filter((l) => /\bError\b/.test(l) && !NOISE.some((n) => n.test(l)));
}

/**
 * The indented error lines right after the first: what CRIU adds to that
 * error (a failed page read's page and mappings, criu-patches/0005), so
 * that the error a person sees carries it and not only the log.
 */
function detailsOf(errors: string[]): string[] {
  const details: string[] = [];
  for (const line of errors.slice(1)) {
    const detail = /\bError \([^)]*\): {3}(.*)$/.exec(line)?.[1];
    if (detail === undefined) break;
    details.push(detail.replace(/\s+/g, ' ').trim());
  }
  return details;
}

/**
 * Advice for a failed page read (criu-patches/0005) into a file mapping whose
 * file now ends before the page: the file was made shorter after the process
 * mapped it. A process that maps a file of the image and a branch that then
 * shortens it do that: the branch's copy takes the path, the process keeps
 * the image's file, and CRIU saves the mapping as of the path (overlayfs
 * gives the copy the same inode number), so no restore of it can succeed.
 * For a file deleted before the dump it is the copy saved with the dump
 * that ends before the page, as the restore's warning says (0013).
 */
function shortenedMappedFile(log: string): string | null {
  const read = /Can't read pages data \(-14\) into 0x([0-9a-f]+)\+0x[0-9a-f]+ \(\d+ iovs\): vma 0x([0-9a-f]+)-0x[0-9a-f]+ .* pgoff 0x([0-9a-f]+)/.exec(log);
  if (!read) return null;
  const [at, start, pgoff] = read.slice(1).map((hex) => BigInt(`0x${hex}`)) as [bigint, bigint, bigint];
  const failedAt = at - start + pgoff;
  const mapped = new RegExp(`mapped now: ${start.toString(16)}-[0-9a-f]+ \\S+ \\S+ \\S+ \\d+ +(/.*) \\(file size 0x([0-9a-f]+)\\)`).exec(log);
  if (mapped && failedAt >= BigInt(`0x${mapped[2]}`)) {
    return `a process maps ${mapped[1]} past its end: the file was made shorter after the process mapped it; restart that process (or put the file back as it was), then try again`;
  }
  // A deleted file has no path to measure: the restore said how long the copy it made of it is (criu-patches/0013).
  const copy = new RegExp(
    `Mapping ${start.toString(16)}-[0-9a-f]+ at 0x[0-9a-f]+ of (/.*), a file deleted before the dump, reaches past the end of its restored copy \\(0x([0-9a-f]+) bytes\\)`,
  ).exec(log);
  if (copy && failedAt >= BigInt(`0x${copy[2]}`)) {
    return `a process maps ${copy[1]}, a file deleted before the dump, past the end of the copy saved with it (0x${copy[2]} bytes, the page that failed at 0x${failedAt.toString(16)}); restart that process, then try again`;
  }
  return null;
}

export function criuFailure(log: string): CriuFailure | null {
  const errors = criuErrors(log);
  const first = errors[0];
  if (first === undefined) return null;
  const line = first.replace(/^\(\d+\.\d+\)\s*/, '');
  // A restored task's lines start with its pid, the restorer's (pie) with "pie: " before it.
  const inside = /^\s*(?:pie: )?(\d+): /.exec(line);
  const cause = [
    line
      .replace(/^\s*(?:pie: )?\d+: /, '')
      .replace(/^Error \([^)]*\):\s*/, '')
      .trim(),
    ...detailsOf(errors),
  ].join('; ');
  const all = errors.join('\n');
  const host = /\(pid: (\d+)\)/.exec(all);
  const pid = inside ? { inside: Number(inside[1]) } : host ? { host: Number(host[1]) } : null;
  const advice = shortenedMappedFile(log) ?? ADVICE.find(([re]) => re.test(all))?.[1] ?? null;
  return { cause, pid, advice, noSpace: NO_SPACE.test(all) };
}
