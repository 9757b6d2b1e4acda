// The /proc and sysfs parsers behind perf.get, on text as Linux 6.18 writes it.
import { describe, expect, it } from 'vitest';
import { parseKsmStat, parseMeminfo, parseSmapsRollup, readProcess } from '../../src/host/memory-stats.js';

const SMAPS_ROLLUP = `561f59260000-7ffc6ab67000 ---p 00000000 00:00 0                          [rollup]
Rss:              148212 kB
Pss:               61234 kB
Pss_Dirty:         40112 kB
Pss_Anon:          39800 kB
Pss_File:          21434 kB
Pss_Shmem:             0 kB
Shared_Clean:      81480 kB
Shared_Dirty:       2200 kB
Private_Clean:      4096 kB
Private_Dirty:     60436 kB
Referenced:       148212 kB
Anonymous:         60112 kB
KSM:               12288 kB
LazyFree:              0 kB
AnonHugePages:         0 kB
ShmemPmdMapped:        0 kB
FilePmdMapped:         0 kB
Shared_Hugetlb:        0 kB
Private_Hugetlb:       0 kB
Swap:                 64 kB
SwapPss:              32 kB
Locked:                0 kB
`;

const KSM_STAT = `ksm_rmap_items 5120
ksm_zero_pages 17
ksm_merging_pages 3072
ksm_process_profit 12255232
ksm_merge_any: yes
ksm_mergeable: yes
`;

const MEMINFO = `MemTotal:       24683620 kB
MemFree:        21535288 kB
MemAvailable:   24061808 kB
Buffers:          335128 kB
Cached:          2395036 kB
SwapCached:            0 kB
Active(anon):     412332 kB
HugePages_Total:       0
Hugepagesize:       2048 kB
`;

describe('memory parsers', () => {
  it('reads Pss, Rss and Swap of smaps_rollup in bytes (not SwapPss or Pss_Anon)', () => {
    expect(parseSmapsRollup(SMAPS_ROLLUP)).toEqual({ pssBytes: 61234 * 1024, rssBytes: 148212 * 1024, swapBytes: 64 * 1024 });
  });

  it('reads merging pages, profit and merge_any of ksm_stat', () => {
    expect(parseKsmStat(KSM_STAT)).toEqual({ mergingPages: 3072, profitBytes: 12255232, mergeAny: true });
    expect(parseKsmStat(KSM_STAT.replace('ksm_merge_any: yes', 'ksm_merge_any: no').replace('12255232', '-40960'))).toMatchObject({
      mergeAny: false,
      profitBytes: -40960,
    });
  });

  it('reads MemTotal and MemAvailable of meminfo in bytes', () => {
    expect(parseMeminfo(MEMINFO)).toEqual({ totalBytes: 24683620 * 1024, availableBytes: 24061808 * 1024 });
  });

  it('gives zeros for an empty rollup (a zombie has no mappings)', () => {
    expect(parseSmapsRollup('')).toEqual({ pssBytes: 0, rssBytes: 0, swapBytes: 0 });
  });
});

describe('readProcess', () => {
  it('reads a live process and answers null for one that is gone', async () => {
    const self = await readProcess(process.pid);
    expect(self!.pssBytes).toBeGreaterThan(0);
    expect(self!.rssBytes).toBeGreaterThanOrEqual(self!.pssBytes);
    expect(await readProcess(2 ** 22 + 1)).toBeNull(); // above pid_max: never a process
  });
});
