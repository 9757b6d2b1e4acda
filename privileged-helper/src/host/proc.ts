// Processes are identified by (pid, start time): a pid alone may have been
// reused by the time we act on it, so nothing is signalled without both.
import { readdir, readFile, readlink } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The process's start time in clock ticks since boot, or null if it is gone:
 * exited and reaped, or a zombie (exited, and its parent, once a branch's init
 * is reparented to the host's, may never reap it).
 */
export async function startTime(pid: number): Promise<number | null> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // comm may contain spaces and parentheses: fields count from the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return fields[0] === 'Z' ? null : Number(fields[19]);
  } catch {
    return null;
  }
}

export async function isSameProcess(pid: number, start: number): Promise<boolean> {
  return (await startTime(pid)) === start;
}

/** Sends a signal only if pid is still the process that started at `start`. */
export async function signalIfSame(pid: number, start: number, signal: NodeJS.Signals): Promise<boolean> {
  if (!(await isSameProcess(pid, start))) return false;
  try {
    process.kill(pid, signal);
    return true;
  } catch {
    return false;
  }
}

export async function waitGone(pid: number, start: number, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!(await isSameProcess(pid, start))) return true;
    await sleep(50);
  }
  return !(await isSameProcess(pid, start));
}

/** The pid namespace a process lives in ('pid:[4026532251]'), or null if it is gone. */
export async function pidNamespace(pid: number): Promise<string | null> {
  return readlink(`/proc/${pid}/ns/pid`).catch(() => null);
}

/**
 * The running processes in each of the given pid namespaces, from one pass
 * over /proc (one pass serves any number of branches). Processes that exit
 * meanwhile are left out, and so are zombies: ended, though their namespace
 * stays readable until their parent (for a branch's init, the host's init,
 * in its own time) reaps them.
 */
export async function pidsByNamespace(namespaces: ReadonlySet<string>): Promise<Map<string, number[]>> {
  const found = new Map<string, number[]>();
  const entries = (await readdir('/proc')).filter((e) => /^\d+$/.test(e));
  await Promise.all(
    entries.map(async (entry) => {
      const ns = await pidNamespace(Number(entry));
      if (ns === null || !namespaces.has(ns) || (await startTime(Number(entry))) === null) return;
      found.set(ns, [...(found.get(ns) ?? []), Number(entry)]);
    }),
  );
  return found;
}

/**
 * Waits until no process is left in a pid namespace. Its init exiting makes the
 * kernel kill the rest, but their exits can lag behind the init's own.
 */
export async function waitPidNamespaceEmpty(ns: string, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (!(await pidsByNamespace(new Set([ns]))).has(ns)) return true;
    if (Date.now() > deadline) return false;
    await sleep(100);
  }
}

/** Is the process in a user namespace of its own (its uid map is not the host's identity map)? */
export async function inOwnUserNamespace(pid: number): Promise<boolean> {
  const map = (await readFile(`/proc/${pid}/uid_map`, 'utf8')).trim().split(/\s+/).map(Number);
  return !(map.length === 3 && map[0] === 0 && map[1] === 0 && map[2] === 2 ** 32 - 1);
}

/** Every process's children, by host pid (this kernel has no /proc/PID/task/TID/children). */
export async function childMap(): Promise<Map<number, number[]>> {
  const children = new Map<number, number[]>();
  // Some walks that use this run unawaited (exec's killTree, hangUp): they must not reject, and /proc is always there.
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const stat = await readFile(`/proc/${name}/stat`, 'utf8').catch(() => '');
    // comm may contain spaces and parentheses: fields count from the last ')'.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (!Number.isInteger(ppid) || ppid <= 0) continue;
    const list = children.get(ppid) ?? [];
    list.push(Number(name));
    children.set(ppid, list);
  }
  return children;
}

/** Every descendant of `root` by host pid (not root itself), from one look at /proc. */
export async function descendants(root: number): Promise<Set<number>> {
  const children = await childMap();
  const result = new Set<number>();
  const queue = [root];
  while (queue.length > 0) {
    for (const c of children.get(queue.pop()!) ?? []) {
      if (!result.has(c)) {
        result.add(c);
        queue.push(c);
      }
    }
  }
  return result;
}
