// Read latency of inherited files: one python3 read loop, run inside a branch
// (exec.run) or on the host over a naively stacked overlay (naive-overlay.ts),
// so both layouts are measured by the same code. A warm loop of
// open+read+close over a set of small files, and one cold-ish sequential read
// of a big file after dropping that file's own page cache (POSIX_FADV_DONTNEED
// on the reader's inode; pages a running process maps stay cached, so the
// script prefers a big file nobody maps and says which it used).
import type { HelperClient } from '../../main/src/helper-client/client.js';
import type { ReadLatency, ReadLayout } from './result-schema.js';

/** Directories the script looks in: the first with ≥ 16 small files, the biggest file of the others. */
export interface ReadPlaces {
  small: string[];
  big: string[];
}

/** Files every branch inherits from the desktop image. */
export const IMAGE_FILES: ReadPlaces = {
  small: ['/usr/share/X11/xkb/symbols', '/usr/share/zoneinfo/Europe', '/usr/share/common-licenses', '/etc'],
  big: ['/usr/lib/x86_64-linux-gnu', '/usr/lib/chromium', '/usr/lib', '/usr/bin'],
};

/** Runs `python3 ARGV…` where the files are and returns its exit code and output. */
export type ScriptRunner = (argv: string[]) => Promise<{ exitCode: number; stdout: string; stderr: string }>;

const SCRIPT = String.raw`
import json, os, sys, time
rounds = int(sys.argv[1])
small_dirs = sys.argv[2].split(':')
big_dirs = sys.argv[3].split(':')

def regular_files(d):
    try:
        names = sorted(os.listdir(d))
    except OSError:
        return []
    out = []
    for n in names:
        p = os.path.join(d, n)
        if os.path.isfile(p) and not os.path.islink(p) and 0 < os.path.getsize(p) <= 65536:
            out.append(p)
    return out

small = []
for d in small_dirs:
    small = regular_files(d)[:64]
    if len(small) >= 16:
        break

def read(p):
    with open(p, 'rb') as f:
        return len(f.read())

for p in small:
    read(p)
t0 = time.perf_counter_ns()
for _ in range(rounds):
    for p in small:
        read(p)
small_ns = time.perf_counter_ns() - t0

mapped = set()
for pid in os.listdir('/proc'):
    if pid.isdigit():
        try:
            with open('/proc/%s/maps' % pid) as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) == 6:
                        mapped.add(parts[5].strip())
        except OSError:
            pass

candidates = []
for d in big_dirs:
    try:
        for n in os.listdir(d):
            p = os.path.join(d, n)
            if os.path.isfile(p) and not os.path.islink(p):
                candidates.append((os.path.getsize(p), p))
    except OSError:
        pass
candidates.sort(reverse=True)
unmapped = [c for c in candidates if c[1] not in mapped and c[0] >= 8 << 20]
size, big = (unmapped or candidates)[0]

fd = os.open(big, os.O_RDONLY)
os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
t0 = time.perf_counter_ns()
total = 0
while True:
    b = os.read(fd, 1 << 20)
    if not b:
        break
    total += len(b)
big_ns = time.perf_counter_ns() - t0
os.close(fd)
print(json.dumps({'smallFiles': len(small), 'smallReads': rounds * len(small), 'smallNs': small_ns,
                  'bigFile': big, 'bigBytes': total, 'bigMapped': big in mapped, 'bigNs': big_ns}))
`;

export async function measureReadLatency(
  runScript: ScriptRunner,
  where: { layout: ReadLayout; depth: number; files: ReadPlaces },
  rounds: number,
): Promise<ReadLatency> {
  const res = await runScript(['-c', SCRIPT, String(rounds), where.files.small.join(':'), where.files.big.join(':')]);
  if (res.exitCode !== 0) throw new Error(`read-latency script exited ${res.exitCode}: ${res.stderr.slice(-500)}`);
  const r = JSON.parse(res.stdout.trim().split('\n').pop()!) as {
    smallFiles: number;
    smallReads: number;
    smallNs: number;
    bigFile: string;
    bigBytes: number;
    bigMapped: boolean;
    bigNs: number;
  };
  const mib = r.bigBytes / (1 << 20);
  const bigMs = r.bigNs / 1e6;
  return {
    layout: where.layout,
    depth: where.depth,
    us: r.smallReads > 0 ? r.smallNs / 1000 / r.smallReads : Number.NaN,
    smallFiles: r.smallFiles,
    smallReads: r.smallReads,
    bigFile: r.bigFile,
    bigFileMiB: mib,
    bigFileMapped: r.bigMapped,
    bigReadMs: bigMs,
    bigReadMiBps: bigMs > 0 ? mib / (bigMs / 1000) : Number.NaN,
  };
}

/** python3 inside a branch. */
export function inBranch(client: HelperClient, workspace: string): ScriptRunner {
  return async (argv) => {
    const res = await client.request('exec.run', { workspace, argv: ['python3', ...argv], timeoutMs: 300_000 });
    return { exitCode: res.exitCode, stdout: res.stdout, stderr: res.stderr };
  };
}
