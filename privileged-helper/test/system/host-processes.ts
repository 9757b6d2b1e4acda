// The host's processes, for tests that run our CRIU on plain host processes
// (outside any workspace): find them, wait until a pid is free again for a
// restore, and end them.
import { readdir, readFile, readlink } from 'node:fs/promises';

interface HostProcess {
  pid: number;
  state: string;
  pgrp: number;
  session: number;
  cmdline: string;
}

/** Every process on the host, from /proc/PID/stat and cmdline. */
async function hostProcesses(): Promise<HostProcess[]> {
  const found: HostProcess[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const [stat, cmdline] = await Promise.all([
      readFile(`/proc/${entry}/stat`, 'utf8').catch(() => ''),
      readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => ''),
    ]);
    const [state, , pgrp, session] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (state) found.push({ pid: Number(entry), state, pgrp: Number(pgrp), session: Number(session), cmdline });
  }
  return found;
}

/** Every process not yet dead (zombies excepted) whose command line names SCRIPT, with its arguments. */
export async function commandsOf(script: string): Promise<{ pid: number; argv: string[] }[]> {
  return (await hostProcesses()).filter((p) => p.cmdline.includes(script) && p.state !== 'Z').map((p) => ({ pid: p.pid, argv: p.cmdline.split('\0') }));
}

/** Every process not yet dead (zombies excepted) whose command line names SCRIPT. */
export async function processesOf(script: string): Promise<number[]> {
  return (await commandsOf(script)).map((p) => p.pid);
}

/** Is PID still taken: a process, or the process group or session of one? (A restore needs it free.) */
export async function pidTaken(pid: number): Promise<boolean> {
  return (await hostProcesses()).some((p) => p.pid === pid || p.pgrp === pid || p.session === pid);
}

/** SIGKILL, if it is still there. */
export function killIfThere(pid: number): void {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/** The processes in the pid namespace of host process PID (a workspace's init), with their state and command, by pid. */
export async function processesInTree(pid: number): Promise<{ pid: number; state: string; command: string }[]> {
  const ns = await readlink(`/proc/${pid}/ns/pid`);
  const found: { pid: number; state: string; command: string }[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || (await readlink(`/proc/${entry}/ns/pid`).catch(() => '')) !== ns) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    if (state && state !== 'Z') found.push({ pid: Number(entry), state, command: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) });
  }
  return found.sort((a, b) => a.pid - b.pid);
}
