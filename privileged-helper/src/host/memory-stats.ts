// Memory as the kernel accounts it: per process from /proc/PID/smaps_rollup
// (PSS splits each shared page among its sharers, so branches' PSS add up to
// what they really use) and /proc/PID/ksm_stat (pages KSM merged); host-wide
// from /proc/meminfo and ksmd's counters in /sys/kernel/mm/ksm. The parsers are
// pure; the readers tolerate processes that exit while they are read.
import { open, readFile } from 'node:fs/promises';
import path from 'node:path';
import { run } from './run.js';
import type { HostMemory } from '../protocol/entities.js';

export interface ProcessMemory {
  pssBytes: number;
  rssBytes: number;
  swapBytes: number;
}

export interface ProcessKsm {
  /** Pages of this process that KSM merged with identical ones. */
  mergingPages: number;
  /** Bytes KSM saves for this process, less its bookkeeping (may be negative). */
  profitBytes: number;
  /** Whether all of its anonymous memory is mergeable (PR_SET_MEMORY_MERGE, which grove-enter --ksm sets). */
  mergeAny: boolean;
}

export type HostMemoryCounters = Pick<HostMemory, 'totalBytes' | 'availableBytes'>;

/** `Key:   123 kB` lines (smaps_rollup, meminfo) and `key 123` / `key: yes` lines (ksm_stat) as a map. */
function fields(text: string): Map<string, string> {
  const map = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_()0-9]+):?\s+(\S+)/.exec(line);
    if (m) map.set(m[1]!, m[2]!);
  }
  return map;
}

const kib = (map: Map<string, string>, key: string): number => Number(map.get(key) ?? 0) * 1024;

export function parseSmapsRollup(text: string): ProcessMemory {
  const f = fields(text);
  return { pssBytes: kib(f, 'Pss'), rssBytes: kib(f, 'Rss'), swapBytes: kib(f, 'Swap') };
}

export function parseKsmStat(text: string): ProcessKsm {
  const f = fields(text);
  return {
    mergingPages: Number(f.get('ksm_merging_pages') ?? 0),
    profitBytes: Number(f.get('ksm_process_profit') ?? 0),
    mergeAny: f.get('ksm_merge_any') === 'yes',
  };
}

export function parseMeminfo(text: string): HostMemoryCounters {
  const f = fields(text);
  return { totalBytes: kib(f, 'MemTotal'), availableBytes: kib(f, 'MemAvailable') };
}

/**
 * A small /proc file in one read: open, read, close (readFile would also stat
 * and read again for the end, which matters at hundreds of files per poll).
 */
async function readSmall(file: string): Promise<string> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.allocUnsafe(8192);
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    return buf.toString('utf8', 0, bytesRead);
  } finally {
    await fh.close();
  }
}

/** The process's memory and KSM state, or null if it exited meanwhile. */
export async function readProcess(pid: number): Promise<(ProcessMemory & ProcessKsm) | null> {
  try {
    const [smaps, ksm] = await Promise.all([readSmall(`/proc/${pid}/smaps_rollup`), readSmall(`/proc/${pid}/ksm_stat`)]);
    return { ...parseSmapsRollup(smaps), ...parseKsmStat(ksm) };
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return null;
    throw err;
  }
}

export async function readHostMemory(): Promise<HostMemoryCounters> {
  return parseMeminfo(await readFile('/proc/meminfo', 'utf8'));
}

export async function readKsmd(): Promise<HostMemory['ksm']> {
  const read = async (name: string) => Number((await readFile(path.join('/sys/kernel/mm/ksm', name), 'utf8')).trim());
  const [pagesShared, pagesSharing, pagesUnshared, fullScans, scanning] = await Promise.all(
    ['pages_shared', 'pages_sharing', 'pages_unshared', 'full_scans', 'run'].map(read),
  );
  return { pagesShared: pagesShared!, pagesSharing: pagesSharing!, pagesUnshared: pagesUnshared!, fullScans: fullScans!, run: scanning! };
}

let pageSize: Promise<number> | null = null;

/** The kernel's page size (KSM counts pages); asked once. */
export function pageBytes(): Promise<number> {
  pageSize ??= run('getconf', ['PAGESIZE']).then((r) => Number(r.stdout.trim()));
  return pageSize;
}
