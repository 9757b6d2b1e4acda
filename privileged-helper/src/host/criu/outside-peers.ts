// Who holds a connection a dump cannot take along. CRIU dumps the branch's
// process tree (its init and what descends from it) and refuses a Unix socket
// of the tree whose peer is held by a process outside it ("External socket is
// used"), naming neither: such a process is in the branch's namespaces but
// not under its init, as what a terminal or a running `grove exec` started is
// while it runs. Both ends are found here from the branch's network namespace
// (ss, which asks the kernel's sock_diag for each socket's peer) and /proc.
import { readFile, readlink } from 'node:fs/promises';
import { descendants } from '../proc.js';
import { run } from '../run.js';

/** A process in words: its pid in the branch and its command line, when the host still has it. */
export async function processInBranch(hostPid: number): Promise<string> {
  const cmdline = (await readFile(`/proc/${hostPid}/cmdline`, 'utf8').catch(() => ''))
    .split('\0')
    .filter(Boolean)
    .join(' ')
    .replace(/[^\x20-\x7e]/g, '?');
  const nspid = /^NSpid:\s+(.*)$/m
    .exec(await readFile(`/proc/${hostPid}/status`, 'utf8').catch(() => ''))?.[1]
    ?.trim()
    .split(/\s+/)
    .at(-1);
  if (!cmdline) return `host pid ${hostPid}, gone since`;
  return `process ${nspid ?? '?'} in the branch: ${cmdline.slice(0, 120)}`;
}

interface UnixSocket {
  peer: number;
  /** Host pids holding it, each checked against its descriptor. */
  holders: number[];
}

/**
 * Each connection between a process of the tree under `initPid` and one
 * outside it, in words ("X, outside the branch's process tree, is connected
 * to Y"); empty when none is found.
 */
export async function outsidePeers(initPid: number, netnsPath: string): Promise<string[]> {
  const tree = await descendants(initPid);
  tree.add(initPid);
  const sockets = await unixSockets(netnsPath);
  const told = new Set<string>();
  const found: string[] = [];
  for (const own of sockets.values()) {
    const peer = sockets.get(own.peer);
    const inside = own.holders.find((pid) => tree.has(pid));
    const outside = peer?.holders.find((pid) => !tree.has(pid));
    if (inside === undefined || outside === undefined || peer!.holders.some((pid) => tree.has(pid))) continue;
    const pair = `${outside}:${inside}`;
    if (told.has(pair)) continue;
    told.add(pair);
    found.push(`${await processInBranch(outside)}, outside the branch's process tree, is connected to ${await processInBranch(inside)}`);
  }
  return found;
}

/**
 * The Unix sockets of a network namespace by inode, with their peers and
 * holders. ss's lines are the branch's to shape (a socket's path, a
 * command's name): a line whose columns do not read as expected is passed
 * over, and a holder counts only if its descriptor is that very socket.
 */
async function unixSockets(netnsPath: string): Promise<Map<number, UnixSocket>> {
  const res = await run('nsenter', [`--net=${netnsPath}`, '--', 'ss', '-xpHn'], { allowFailure: true });
  const sockets = new Map<number, UnixSocket>();
  for (const line of res.stdout.split('\n')) {
    const columns = line.split('users:((')[0]!.trim().split(/\s+/);
    if (columns.length !== 8) continue;
    const [inode, peer] = [Number(columns[5]), Number(columns[7])];
    if (!Number.isInteger(inode) || !Number.isInteger(peer) || peer === 0) continue;
    const holders: number[] = [];
    for (const [, pid, fd] of line.matchAll(/pid=(\d+),fd=(\d+)/g)) {
      if ((await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')) === `socket:[${inode}]`) holders.push(Number(pid));
    }
    sockets.set(inode, { peer, holders });
  }
  return sockets;
}
