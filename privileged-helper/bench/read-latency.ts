// Read latency of files a branch inherited from the image, measured inside the
// branch (exec.run → python3): a warm loop of open+read+close over a set of
// small files, and one cold-ish sequential read of a big file after dropping
// that file's own page cache (POSIX_FADV_DONTNEED on the branch's inode;
// pages a running process maps stay cached, so the script prefers a big file
// nobody maps and says which it used).
import type { HelperClient } from '../../main/src/helper-client/client.js';

export interface ReadLatency {
  layout: 'grove';
  depth: number;
  /** Microseconds per open+read+close of one small inherited file (warm cache). */
  us: number;
  smallFiles: number;
  smallReads: number;
  bigFile: string;
  bigFileMiB: number;
  bigFileMapped: boolean;
  /** Cold-ish sequential read of the big file: total ms and MiB/s. */
  bigReadMs: number;
  bigReadMiBps: number;
}

const SCRIPT = String.raw`
import json, os, sys, time
rounds = int(sys.argv[1])

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
for d in ('/usr/share/X11/xkb/symbols', '/usr/share/zoneinfo/Europe', '/usr/share/common-licenses', '/etc'):
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
for d in ('/usr/lib/x86_64-linux-gnu', '/usr/lib/chromium', '/usr/lib', '/usr/bin'):
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

export async function measureReadLatency(client: HelperClient, workspace: string, depth: number, rounds: number): Promise<ReadLatency> {
  const res = await client.request('exec.run', { workspace, argv: ['python3', '-c', SCRIPT, String(rounds)], timeoutMs: 300_000 });
  if (res.exitCode !== 0) throw new Error(`read-latency script exited ${res.exitCode} in ${workspace}: ${res.stderr.slice(-500)}`);
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
    layout: 'grove',
    depth,
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
