// The fork's promises, checked in each child and in the source (issue 12's
// fidelity suite): what a process holds (threads, timers, a deleted-but-open
// file, flock, POSIX and OFD locks, a big heap, mappings of files the overlay
// numbers alike), what watches files (inotify),
// what the desktop shows (unsaved editor text, window positions), every file
// lock Chromium holds, loopback TCP kept and outside connections closed,
// messages in flight with the descriptors they carry, memory rewritten
// while the fork saves it, forks under CPU load, and the same state again after a rollback, after a
// promotion, and in forks of those. Each case prints its fork time, so a slow
// path shows.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { ForkReport, Workspace } from '../../src/protocol/entities.js';
import { GATE_ADDRESS, GATE_PORT } from '../../src/host/branch-network.js';
import { readRewriterReport, REWRITER, WHOLE, type RewriterReport } from './fixtures/rewriter.js';
import { blankEditor, connect, createWorkspace, darkPixels, EDITOR, EDITOR_TEXT, sh, track, waitFor } from './support.js';

/**
 * Each lock in /proc/locks with a pid (waiters left out): kind, access, the holder's command and pid, the range,
 * and the holder's descriptor of the locked file; sorted, one per line.
 */
const LOCK_LISTER = `
import glob, os
rows = []
for line in open('/proc/locks'):
    fields = line.split()
    if '->' in fields or fields[4] == '-1':
        continue
    _, kind, _, access, pid, file, start, end = fields[:8]
    inode = int(file.rsplit(':', 1)[1])
    try:
        comm = open(f'/proc/{pid}/comm').read().strip()
    except OSError:
        comm = '-'
    held = ''
    for fd in sorted(glob.glob(f'/proc/{pid}/fd/*')):
        try:
            if os.stat(fd).st_ino == inode:
                held = os.readlink(fd)
                break
        except OSError:
            pass
    rows.append(f'{kind} {access} {comm} {pid} {start}-{end} {held}')
print('\\n'.join(sorted(rows)))
`;

/**
 * A process that holds things a fork must carry, and reports on them over
 * HTTP on 127.0.0.1:PORT: 50 threads that count, a timer that ticks, a
 * deleted file it keeps open, an flock, a POSIX and an OFD lock (on files of
 * its own: /tmp/{flock,posix,ofd}-PORT.lock), and HEAP_MIB of
 * heap filled with a pattern whose checksum it checks again on each report.
 */
const HOLDER = `
import fcntl, hashlib, http.server, json, os, struct, sys, threading, time
port, heap_mib = int(sys.argv[1]), int(sys.argv[2])
counters = [0] * 50
def count(i):
    while True:
        counters[i] += 1
        time.sleep(0.01)
for i in range(50):
    threading.Thread(target=count, args=(i,), daemon=True).start()
ticks = 0
def tick():
    global ticks
    while True:
        ticks += 1
        time.sleep(0.1)
threading.Thread(target=tick, daemon=True).start()
ghost = open('/tmp/ghost', 'w+'); ghost.write('ghost-content'); ghost.flush(); os.unlink('/tmp/ghost')
flocked = open('/tmp/flock-%d.lock' % port, 'w'); fcntl.flock(flocked, fcntl.LOCK_EX)
posix = open('/tmp/posix-%d.lock' % port, 'w'); fcntl.lockf(posix, fcntl.LOCK_EX)
ofd = open('/tmp/ofd-%d.lock' % port, 'w'); fcntl.fcntl(ofd, fcntl.F_OFD_SETLK, struct.pack('hhxxxxqqixxxx', fcntl.F_WRLCK, 0, 0, 0, 0))
heap = bytearray(os.urandom(1 << 20)) * heap_mib
heap_sum = hashlib.sha256(heap).hexdigest()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ghost.seek(0)
        body = json.dumps({
            'threads': threading.active_count(),
            'countersMoving': min(counters) > 0,
            'ticks': ticks,
            'ghost': ghost.read(),
            'heapMiB': len(heap) >> 20,
            'heapIntact': hashlib.sha256(heap).hexdigest() == heap_sum,
        }).encode()
        self.send_response(200); self.send_header('content-length', str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
http.server.HTTPServer(('127.0.0.1', port), H).serve_forever()
`;

/**
 * Each tmpfs mount: where, its root's mode, owner and group, and its options;
 * then each entry in it (not for /dev/shm, where Chromium's files come and go):
 * its path, type, mode, owner, group, modification time and, for a link, its target.
 */
const TMPFS_LISTER = `
import os, stat
def entry(path, st):
    link = ' -> ' + os.readlink(path) if stat.S_ISLNK(st.st_mode) else ''
    return f'{path} {stat.filemode(st.st_mode)} {st.st_uid} {st.st_gid} {int(st.st_mtime)}{link}'
for line in open('/proc/self/mountinfo'):
    mount, sb = line.split(' - ')
    fstype, _, options = sb.split()
    if fstype != 'tmpfs':
        continue
    where = mount.split()[4]
    st = os.stat(where)
    print(where, oct(st.st_mode & 0o7777), st.st_uid, st.st_gid, options)
    entries = []
    for top, dirs, files in os.walk(where) if where != '/dev/shm' else []:
        dirs[:] = [d for d in dirs if not os.path.ismount(os.path.join(top, d))]
        entries += [os.path.join(top, name) for name in dirs + files if not os.path.ismount(os.path.join(top, name))]
    for path in sorted(entries):
        print('  ' + entry(path, os.lstat(path)))
`;

/** Appends the name of every file created in /tmp/watched to /tmp/watched.log (inotify through libc). */
const WATCHER = `
import ctypes, os, struct
libc = ctypes.CDLL('libc.so.6', use_errno=True)
fd = libc.inotify_init1(0)
os.makedirs('/tmp/watched', exist_ok=True)
libc.inotify_add_watch(fd, b'/tmp/watched', 0x100)  # IN_CREATE
while True:
    buf = os.read(fd, 4096)
    at = 0
    while at < len(buf):
        _, _, _, n = struct.unpack_from('iIII', buf, at)
        name = buf[at + 16:at + 16 + n].rstrip(b'\\0').decode()
        with open('/tmp/watched.log', 'a') as log: log.write(name + '\\n')
        at += 16 + n
`;

/**
 * TCP conversations, each reporting its state to /tmp/tcp-NAME.json:
 *  serve HOST PORT       echoes every line back, one process per connection;
 *  talk NAME HOST PORT   one connection for life, a numbered line every 0.1 s,
 *                        each reply checked; any error is reported and ends it;
 *  outside NAME          an idle connection to the egress gate (outside the
 *                        branch), reported closed as soon as it is; once
 *                        /tmp/tcp-NAME.go exists, one request over it.
 */
const CONVERSER = `
import json, os, socket, sys, time
def status(name, **state):
    with open('/tmp/tcp-%s.tmp' % name, 'w') as f: json.dump(state, f)
    os.rename('/tmp/tcp-%s.tmp' % name, '/tmp/tcp-%s.json' % name)
role = sys.argv[1]
if role == 'serve':
    host, port = sys.argv[2], int(sys.argv[3])
    srv = socket.socket(socket.AF_INET6 if ':' in host else socket.AF_INET)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((host, port)); srv.listen()
    while True:
        conn, _ = srv.accept()
        if os.fork() == 0:
            for line in conn.makefile('rb'): conn.sendall(b'echo ' + line)
            os._exit(0)
        conn.close()
elif role == 'talk':
    name, host, port = sys.argv[2], sys.argv[3], int(sys.argv[4])
    conn = socket.create_connection((host, port)); replies = conn.makefile('rb'); n = 0
    try:
        while True:
            n += 1
            conn.sendall(b'%d\\n' % n)
            reply = replies.readline()
            if reply != b'echo %d\\n' % n: raise RuntimeError('reply %r to line %d' % (reply, n))
            status(name, n=n, port=conn.getsockname()[1])
            time.sleep(0.1)
    except Exception as e:
        status(name, n=n, error=repr(e))
elif role == 'outside':
    name = sys.argv[2]
    conn = socket.create_connection(('${GATE_ADDRESS}', ${GATE_PORT}))
    status(name, state='open')
    while not os.path.exists('/tmp/tcp-%s.go' % name):
        try:
            if conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b'':
                status(name, state='closed', why='end of stream'); sys.exit()
        except BlockingIOError: pass
        except OSError as e:
            status(name, state='closed', why=repr(e)); sys.exit()
        time.sleep(0.1)
    conn.sendall(b'GET http://fidelity.invalid/ HTTP/1.1\\r\\nHost: fidelity.invalid\\r\\n\\r\\n')
    status(name, state='answered', line=conn.recv(200).split(b'\\r\\n')[0].decode())
`;

/**
 * Two processes joined by a socket pair, each with a message to the other in
 * flight that carries descriptors: the child's, of a file it keeps at
 * descriptor 77; the parent's, of a file it closed once sent and of one end
 * of another socket pair, which it closed too (that end is then held by the
 * message alone). Each then makes /tmp/scm-SIDE.sent. Nobody reads until
 * /tmp/scm.go exists; then each writes what it received to
 * /tmp/scm-SIDE.txt: the message, the file's contents, and for the parent
 * what came back over the pair whose end it sent.
 */
const PASSER = `
import os, socket, time
def report(side, text):
    with open('/tmp/scm-%s.tmp' % side, 'w') as f: f.write(text)
    os.rename('/tmp/scm-%s.tmp' % side, '/tmp/scm-%s.txt' % side)
def receive(sock):
    while not os.path.exists('/tmp/scm.go'): time.sleep(0.1)
    msg, fds, _, _ = socket.recv_fds(sock, 100, 4)
    return msg.decode(), fds
parent_end, child_end = socket.socketpair()
kept, sent = socket.socketpair()
if os.fork() == 0:
    parent_end.close(); kept.close(); sent.close()
    with open('/tmp/scm-child.src', 'w') as f: f.write('kept by the child')
    os.dup2(os.open('/tmp/scm-child.src', os.O_RDONLY), 77)
    socket.send_fds(child_end, [b'to parent'], [77])
    open('/tmp/scm-child.sent', 'w').close()
    msg, fds = receive(child_end)
    socket.socket(fileno=fds[1]).sendall(b'back over the sent pair')
    report('child', '%s: %s' % (msg, os.pread(fds[0], 100, 0).decode()))
else:
    child_end.close()
    with open('/tmp/scm-parent.src', 'w') as f: f.write('closed by the parent')
    fd = os.open('/tmp/scm-parent.src', os.O_RDONLY)
    socket.send_fds(parent_end, [b'to child'], [fd, sent.fileno()])
    os.close(fd); sent.close()
    open('/tmp/scm-parent.sent', 'w').close()
    msg, fds = receive(parent_end)
    report('parent', '%s: %s; %s' % (msg, os.pread(fds[0], 100, 0).decode(), kept.recv(100).decode()))
    os.wait()
`;

/**
 * A single-threaded server on 127.0.0.1:8501, as many dev servers are, and
 * two clients of it, as a browser with live reload has:
 *  serve   one connection at a time: a `stream` request is answered with an
 *          event every 0.1 s until /tmp/inflight.release exists, any other with `page`;
 *  stream  the live-reload stream, read until the server ends it;
 *  fetch   the next request, which waits in the server's queue, not yet
 *          accepted, while the stream lasts. It reports to /tmp/inflight.json
 *          (its tries, each error, and whether it got its page), and on any
 *          error tries again, as a browser does.
 */
const BUSY_SERVER = `
import json, os, socket, sys, time
PORT = 8501
def status(**state):
    with open('/tmp/inflight.tmp', 'w') as f: json.dump(state, f)
    os.rename('/tmp/inflight.tmp', '/tmp/inflight.json')
role = sys.argv[1]
if role == 'serve':
    srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(('127.0.0.1', PORT)); srv.listen(8)
    while True:
        conn, _ = srv.accept()
        try:
            if conn.recv(100).startswith(b'stream'):
                while not os.path.exists('/tmp/inflight.release'):
                    conn.sendall(b'event\\n'); time.sleep(0.1)
            else:
                conn.sendall(b'page\\n')
        except OSError:
            pass
        conn.close()
elif role == 'stream':
    conn = socket.create_connection(('127.0.0.1', PORT)); conn.sendall(b'stream\\n')
    while conn.recv(100): pass
elif role == 'fetch':
    tries, errors = 0, []
    while True:
        tries += 1
        try:
            conn = socket.create_connection(('127.0.0.1', PORT)); conn.sendall(b'page\\n')
            status(tries=tries, errors=errors, state='waiting')
            reply = conn.recv(100)
            if reply == b'page\\n':
                status(tries=tries, errors=errors, state='served'); break
            errors.append('reply %r' % reply)
        except OSError as e:
            errors.append(repr(e))
        status(tries=tries, errors=errors, state='retrying')
        time.sleep(0.2)
`;

/** How many connections wait, not yet accepted, in the queue of the server listening on 127.0.0.1:PORT (/proc/net/tcp). */
const pendingAt = (port: number) => `
for line in open('/proc/net/tcp').readlines()[1:]:
    fields = line.split()
    if fields[1] == '0100007F:%04X' % ${port} and fields[3] == '0A':
        print(int(fields[4].split(':')[1], 16))
`;

interface InFlight {
  tries?: number;
  errors?: string[];
  state?: string;
}

/**
 * docs/fork-generation.md's watcher of the fork generation, as a program
 * would run it: on each change it reseeds its random numbers, and here also
 * logs the generation it then reads and its next random number to
 * /tmp/generation.log. It makes /tmp/generation.ready once it watches.
 */
const GENERATION_WATCHER = `
import ctypes, os, random
libc = ctypes.CDLL(None); fd = libc.inotify_init(); libc.inotify_add_watch(fd, b'/run/grove', 0x80)  # IN_MOVED_TO
open('/tmp/generation.ready', 'w').close()
while os.read(fd, 4096):
    random.seed()
    with open('/tmp/generation.log', 'a') as log: log.write('%s %d\\n' % (open('/run/grove/generation').read().strip(), random.getrandbits(64)))
`;

interface Conversation {
  n?: number;
  port?: number;
  error?: string;
  state?: string;
  why?: string;
  line?: string;
}

/** Maps files of the branch and of its image that the overlay numbers alike, and reports what each mapping shows. */
const ALIKE_FILES = path.join(import.meta.dirname, 'fixtures/alike-files.py');

/** What one of ALIKE_FILES' mappings shows: /proc/self/maps' path and inode number, and bytes of it (hex). */
interface AlikeMapping {
  path: string;
  ino: number;
  first: string;
  written?: string;
  third?: string;
}

interface HolderReport {
  threads: number;
  countersMoving: boolean;
  ticks: number;
  ghost: string;
  heapMiB: number;
  heapIntact: boolean;
}

describe('fork fidelity: what the source holds, each child holds', () => {
  let c: HelperClient;
  let source: Workspace;
  const made: string[] = [];
  /** Children of the current case: removed after it, so what they run (busy loops, heaps) does not weigh on the next. */
  const forked: string[] = [];

  const report = async (ws: Workspace, port: number): Promise<HolderReport> =>
    JSON.parse(
      await sh(c, ws, `python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:${port}/", timeout=10).read().decode())'`),
    ) as HolderReport;
  const conversation = async (ws: Workspace, name: string): Promise<Conversation> =>
    JSON.parse((await sh(c, ws, `cat /tmp/tcp-${name}.json 2>/dev/null || echo {}`)) || '{}') as Conversation;
  /** The local port of each loopback conversation (CONVERSER talk), as it started in the source. */
  const talkers: Record<'v4' | 'v6', number> = { v4: 0, v6: 0 };
  /** Each loopback conversation goes on in the branch, on the very connection it started on, every reply right. */
  const talking = async (ws: Workspace) => {
    for (const name of ['v4', 'v6'] as const) {
      const then = (await conversation(ws, name)).n ?? 0;
      await expect.poll(async () => (await conversation(ws, name)).n ?? 0, { timeout: 15_000, message: `${ws.name} ${name}` }).toBeGreaterThan(then + 10);
      expect(await conversation(ws, name), `${ws.name} ${name}`).toEqual({ n: expect.any(Number), port: talkers[name] });
    }
  };
  /** Are the holder's lock files held? (flock -n / a POSIX test lock from a fresh process.) */
  const locks = async (ws: Workspace, port = 8301) => ({
    flock: (await sh(c, ws, `flock -n /tmp/flock-${port}.lock true && echo free || echo held`)).trim(),
    posix: (
      await sh(
        c,
        ws,
        `python3 -c "import fcntl; f=open('/tmp/posix-${port}.lock','w')
try:
    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB); print('free')
except OSError: print('held')"`,
      )
    ).trim(),
    ofd: (
      await sh(
        c,
        ws,
        `python3 -c "import fcntl, struct; f=open('/tmp/ofd-${port}.lock','w')
try:
    fcntl.fcntl(f, fcntl.F_OFD_SETLK, struct.pack('hhxxxxqqixxxx', fcntl.F_WRLCK, 0, 0, 0, 0)); print('free')
except OSError: print('held')"`,
      )
    ).trim(),
  });
  const windowGeometry = async (ws: Workspace) =>
    (
      await sh(
        c,
        ws,
        'for w in $(DISPLAY=:0 xdotool search --onlyvisible --class "mousepad|xterm"); do DISPLAY=:0 xdotool getwindowgeometry "$w" | tail -n +2; done',
      )
    ).trim();
  /** Every fork of the suite, in order: printed as one table at the end. */
  const forkTimes: { label: string; copies: number; ms: number; reportMs: number }[] = [];
  const forkReport = async (ws: Workspace, label: string, copies = 2): Promise<ForkReport> => {
    const t0 = Date.now();
    const r = await c.request('branch.fork', { workspace: ws.id, copies });
    forked.push(...(await Promise.all(r.children.map(track))).map((x) => x.id));
    const ms = Date.now() - t0;
    const reportMs = Math.round(r.timings.total ?? -1);
    forkTimes.push({ label, copies, ms, reportMs });
    process.stderr.write(`[fidelity] ${label}: fork into ${copies} took ${ms} ms (report total ${reportMs} ms)\n`);
    return r;
  };
  const fork = async (ws: Workspace, label: string, copies = 2): Promise<Workspace[]> => (await forkReport(ws, label, copies)).children;

  beforeAll(async () => {
    c = await connect('fidelity');
    source = await createWorkspace(c, 'fidelity');
    made.push(source.id);
    await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', 'cat > /tmp/holder.py'], stdin: HOLDER });
    await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', 'cat > /tmp/watcher.py'], stdin: WATCHER });
    await sh(c, source, 'nohup python3 /tmp/holder.py 8301 64 >/tmp/holder.log 2>&1 & nohup python3 /tmp/watcher.py >/tmp/watcher.out 2>&1 &');
    await waitFor(
      'the holder to report',
      () =>
        report(source, 8301)
          .then((r) => r.heapIntact)
          .catch(() => false),
      30_000,
    );
    await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', 'cat > /tmp/converse.py'], stdin: CONVERSER });
    await sh(
      c,
      source,
      [
        'nohup python3 /tmp/converse.py serve 127.0.0.1 8401 >/tmp/serve4.log 2>&1 &',
        'nohup python3 /tmp/converse.py serve ::1 8402 >/tmp/serve6.log 2>&1 &',
        'sleep 0.5',
        'nohup python3 /tmp/converse.py talk v4 127.0.0.1 8401 >/tmp/talk4.log 2>&1 &',
        'nohup python3 /tmp/converse.py talk v6 ::1 8402 >/tmp/talk6.log 2>&1 &',
      ].join('\n'),
    );
    for (const name of ['v4', 'v6'] as const) {
      await waitFor(`the ${name} conversation`, () => conversation(source, name).then((s) => (s.n ?? 0) > 3), 15_000);
      talkers[name] = (await conversation(source, name)).port!;
    }
    await waitFor(
      'the watcher to log',
      () => sh(c, source, 'touch /tmp/watched/from-source && cat /tmp/watched.log 2>/dev/null || true').then((l) => l.includes('from-source')),
      15_000,
    );
  });

  afterEach(async () => {
    for (const id of forked.splice(0).reverse()) await c.request('workspace.delete', { workspace: id }).catch(() => undefined);
  });

  afterAll(async () => {
    const width = Math.max(4, ...forkTimes.map((f) => f.label.length));
    const rows = forkTimes.map(
      (f) => `${f.label.padEnd(width)}  ${String(f.copies).padStart(6)}  ${String(f.ms).padStart(8)}  ${String(f.reportMs).padStart(9)}`,
    );
    process.stderr.write(['[fidelity] fork times', `${'case'.padEnd(width)}  copies  took, ms  report, ms`, ...rows, ''].join('\n'));
    for (const id of made.reverse()) await c?.request('workspace.delete', { workspace: id }).catch(() => undefined);
    c?.close();
  });

  it('carries threads, timers, a deleted-but-open file and held locks into each child', async () => {
    expect(await locks(source)).toEqual({ flock: 'held', posix: 'held', ofd: 'held' });
    const before = await report(source, 8301);
    const children = await fork(source, 'process state');
    for (const branch of [...children, source]) {
      const now = await report(branch, 8301);
      expect(now, branch.name).toMatchObject({ countersMoving: true, ghost: 'ghost-content', heapMiB: 64, heapIntact: true });
      expect(now.threads, branch.name).toBeGreaterThanOrEqual(52); // main + 50 counters + the timer
      // The timer goes on from where it was at the fork.
      expect(now.ticks, branch.name).toBeGreaterThan(before.ticks);
      await expect.poll(async () => (await report(branch, 8301)).ticks, { timeout: 5000 }).toBeGreaterThan(now.ticks);
      expect(await locks(branch), branch.name).toEqual({ flock: 'held', posix: 'held', ofd: 'held' });
    }
  });

  it("fires each child's file watcher for its own writes only", async () => {
    const children = await fork(source, 'inotify');
    for (const [i, child] of children.entries()) await sh(c, child, `touch /tmp/watched/from-child-${i}`);
    for (const [i, child] of children.entries()) {
      await expect.poll(() => sh(c, child, 'cat /tmp/watched.log'), { timeout: 10_000 }).toContain(`from-child-${i}`);
      const log = await sh(c, child, 'cat /tmp/watched.log');
      expect(log).not.toContain(`from-child-${1 - i}`);
      expect(log).toContain('from-source'); // what it saw before the fork
    }
    expect(await sh(c, source, 'cat /tmp/watched.log')).not.toContain('from-child');
  });

  it('shows unsaved editor text in each child, with every window where it was', async () => {
    const blank = await blankEditor(c, source);
    await c.request('desktop.click', { workspace: source.id, ...EDITOR });
    await c.request('desktop.type', { workspace: source.id, text: '██████████\n██████████' });
    await expect.poll(() => darkPixels(c, source, EDITOR_TEXT), { timeout: 10_000 }).toBeGreaterThan(blank + 1000);
    const geometry = await windowGeometry(source);
    expect(geometry).toMatch(/Position: \d+,\d+/);
    const children = await fork(source, 'desktop');
    for (const child of children) {
      await expect.poll(() => darkPixels(c, child, EDITOR_TEXT), { timeout: 15_000, message: child.name }).toBeGreaterThan(blank + 1000);
      expect(await windowGeometry(child), child.name).toBe(geometry);
    }
    // Input to one child reaches neither its sibling nor the source.
    const [typedIn, sibling] = children as [Workspace, Workspace];
    const [siblingBefore, sourceBefore, typedBefore] = (await Promise.all([sibling, source, typedIn].map((b) => darkPixels(c, b, EDITOR_TEXT)))) as [
      number,
      number,
      number,
    ];
    await c.request('desktop.type', { workspace: typedIn.id, text: '\n██████████\n██████████' });
    await expect.poll(() => darkPixels(c, typedIn, EDITOR_TEXT), { timeout: 10_000 }).toBeGreaterThan(typedBefore + 1000);
    // A typed line is over 1000 dark pixels; a blinking caret is a few dozen.
    expect(Math.abs((await darkPixels(c, sibling, EDITOR_TEXT)) - siblingBefore)).toBeLessThan(300);
    expect(Math.abs((await darkPixels(c, source, EDITOR_TEXT)) - sourceBefore)).toBeLessThan(300);
  });

  it('keeps a 1 GiB heap intact in each child', async () => {
    // Room for the heap beside the desktop (the default is 2 GiB); the children inherit it.
    await c.request('workspace.limits', { workspace: source.id, memoryBytes: 4 * 1024 ** 3 });
    await sh(c, source, 'nohup python3 /tmp/holder.py 8302 1024 >/tmp/big.log 2>&1 &');
    try {
      await expect.poll(() => report(source, 8302).catch(() => null), { timeout: 120_000, interval: 1000 }).toMatchObject({ heapMiB: 1024, heapIntact: true });
      const children = await fork(source, '1 GiB heap');
      for (const branch of [...children, source])
        expect(await report(branch, 8302), branch.name).toMatchObject({ heapMiB: 1024, heapIntact: true, ghost: 'ghost-content' });
    } finally {
      // [.] keeps pkill from matching the shell that runs it.
      await sh(c, source, 'pkill -f "holder[.]py 8302" || true');
    }
  });

  it('gives each child its memory as it was at the fork while the source rewrites it, with zeros where it had discarded', async () => {
    // The source runs on while its pages are saved (criu-patches/0022): every page it rewrites then must reach the children as it was.
    const rewriter = (ws: Workspace): Promise<RewriterReport | null> => readRewriterReport(() => sh(c, ws, 'cat /tmp/rewriter.json 2>/dev/null || echo null'));
    await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', 'cat > /tmp/rewriter.py'], stdin: await readFile(REWRITER, 'utf8') });
    await sh(c, source, 'nohup python3 /tmp/rewriter.py /tmp/rewriter.json wipeonfork >/tmp/rewriter.log 2>&1 &');
    try {
      await waitFor('the rewriter to report', async () => ((await rewriter(source))?.rounds ?? 0) >= 20, 30_000);
      const children = await fork(source, 'memory rewritten while it is saved');
      for (const branch of [...children, source]) {
        const then = (await rewriter(branch))?.rounds ?? 0;
        await expect.poll(async () => (await rewriter(branch))?.rounds ?? 0, { timeout: 15_000, message: branch.name }).toBeGreaterThan(then + 40);
        expect(await rewriter(branch), branch.name).toEqual(WHOLE);
      }
    } finally {
      await sh(c, source, 'pkill -f "rewriter[.]py" || true');
    }
  });

  it('forks under full CPU load', async () => {
    await sh(c, source, 'for i in 1 2 3 4; do nohup sh -c "while :; do :; done" >/dev/null 2>&1 & done');
    try {
      const children = await fork(source, 'under CPU load');
      for (const branch of [...children, source]) expect(await report(branch, 8301), branch.name).toMatchObject({ heapIntact: true, countersMoving: true });
    } finally {
      await sh(c, source, 'pkill -f "while [:]; do" || true');
    }
  });

  it('rolls back to the same state, and forks right after the rollback', async () => {
    const version = await c.request('branch.checkpoint', { workspace: source.id, label: 'fidelity' });
    await sh(c, source, 'pkill -f "holder[.]py 8301"; rm -f /tmp/flock-8301.lock');
    const rolledBack = await track(await c.request('branch.rollback', { workspace: source.id, version: version.id }));
    expect(await report(rolledBack, 8301)).toMatchObject({ ghost: 'ghost-content', heapIntact: true, countersMoving: true });
    expect(await locks(rolledBack)).toEqual({ flock: 'held', posix: 'held', ofd: 'held' });
    await talking(rolledBack);
    const children = await fork(rolledBack, 'right after a rollback');
    for (const child of children) {
      expect(await report(child, 8301), child.name).toMatchObject({ ghost: 'ghost-content', heapIntact: true });
      expect(await locks(child), child.name).toEqual({ flock: 'held', posix: 'held', ofd: 'held' });
      await talking(child);
    }
  });

  it('forks after a terminal session exited and left a daemon behind', async () => {
    const exits: string[] = [];
    await c.subscribe(['exec.exit']);
    c.on('exec.exit', (e) => exits.push(e.session));
    const terminal = await c.request('exec.open', {
      workspace: source.id,
      cols: 80,
      rows: 24,
      argv: ['sh', '-c', 'nohup python3 /tmp/holder.py 8303 8 >/dev/null 2>&1 & sleep 0.5; exit 0'],
    });
    await expect.poll(() => exits.includes(terminal.session), { timeout: 30_000 }).toBe(true); // the session ended on its own
    await expect.poll(() => report(source, 8303).catch(() => null), { timeout: 30_000 }).toMatchObject({ heapIntact: true });
    const children = await fork(source, 'after a -t session left a daemon');
    for (const branch of [...children, source]) expect(await report(branch, 8303), branch.name).toMatchObject({ heapMiB: 8, heapIntact: true });
  });

  it('takes a terminal, what it started and its scrollback into each child and through a rollback, to attach to there; the source keeps using it', async () => {
    const output = new Map<string, string>();
    await c.subscribe(['exec.output']);
    c.on('exec.output', (o) => output.set(o.session, (output.get(o.session) ?? '') + o.data));
    const shows = (session: string, text: string, message: string) =>
      expect.poll(() => output.get(session) ?? '', { timeout: 15_000, message }).toContain(text);
    /** Attaches to the terminal's copy in the branch: its scrollback comes first, then it runs what is typed. */
    const attachIn = async (ws: Workspace, holder: string) => {
      const attached = await c.request('exec.open', { workspace: ws.id, attach: holder, cols: 80, rows: 24 });
      try {
        await shows(attached.session, 'started-42', `${ws.name}'s scrollback`);
        await c.request('exec.write', { session: attached.session, data: `echo in-$((6*7))-${ws.name}\n` });
        await shows(attached.session, `in-42-${ws.name}`, ws.name);
      } finally {
        await c.request('exec.close', { session: attached.session });
      }
    };
    /** The app started with & from the terminal: its server answers, and its window is on the branch's desktop. */
    const appRuns = async (ws: Workspace) => {
      expect(await report(ws, 8304), ws.name).toMatchObject({ heapMiB: 8, heapIntact: true });
      expect((await sh(c, ws, 'DISPLAY=:0 xdotool search --name from-a-terminal')).trim(), ws.name).toMatch(/^\d+$/);
    };
    const terminal = await c.request('exec.open', { workspace: source.id, cols: 80, rows: 24 });
    try {
      await c.request('exec.write', {
        session: terminal.session,
        data: 'python3 /tmp/holder.py 8304 8 >/dev/null 2>&1 &\nxterm -T from-a-terminal >/dev/null 2>&1 &\necho started-$((6*7))\n',
      });
      await shows(terminal.session, 'started-42', 'the source');
      await expect.poll(() => report(source, 8304).catch(() => null), { timeout: 30_000 }).toMatchObject({ heapIntact: true });
      await waitFor('the xterm window', () => sh(c, source, 'DISPLAY=:0 xdotool search --name from-a-terminal || true').then((o) => o.trim() !== ''), 15_000);
      const version = await c.request('branch.checkpoint', { workspace: source.id, label: 'a terminal open' });
      const forkedWith = await forkReport(source, 'a terminal open with an app started from it');
      expect(forkedWith.leftBehind).toEqual([]);
      expect(forkedWith.carried).toEqual([expect.stringMatching(/^terminal t[0-9a-f]{8} \(\/bin\/bash -l\) goes into each child/)]);
      const holder = /terminal (t[0-9a-f]{8})/.exec(forkedWith.carried[0]!)![1]!;
      for (const child of forkedWith.children) {
        await appRuns(child);
        await attachIn(child, holder);
      }
      await c.request('exec.write', { session: terminal.session, data: 'echo still-$((6*7))\n' });
      await shows(terminal.session, 'still-42', 'the source');
      await appRuns(source);
      const rolledBack = await track(await c.request('branch.rollback', { workspace: source.id, version: version.id }));
      await appRuns(rolledBack);
      await attachIn(rolledBack, holder);
    } finally {
      await c.request('exec.close', { session: terminal.session }).catch(() => undefined);
      // The terminal's copy the rollback brought back, detached, and what it started.
      await sh(c, source, 'pkill -f "import errno[,] fcntl"; pkill -f "holder[.]py 8304"; pkill -f "xterm -T from-a-[t]erminal"; true');
    }
    const quiet = await forkReport(source, 'no terminal open', 1);
    expect(quiet.carried).toEqual([]);
  });

  it('keeps loopback TCP connections (IPv4 and IPv6) talking in each child, and closes the ones to the outside there only', async () => {
    await sh(c, source, 'nohup python3 /tmp/converse.py outside gate >/tmp/outside.log 2>&1 &');
    await expect.poll(async () => (await conversation(source, 'gate')).state, { timeout: 15_000 }).toBe('open');
    const children = await fork(source, 'loopback TCP');
    for (const branch of [...children, source]) await talking(branch);
    for (const child of children) {
      await expect.poll(async () => (await conversation(child, 'gate')).state, { timeout: 15_000, message: child.name }).toBe('closed');
    }
    expect((await conversation(source, 'gate')).state).toBe('open');
    await sh(c, source, 'touch /tmp/tcp-gate.go');
    await expect.poll(async () => (await conversation(source, 'gate')).line ?? '', { timeout: 15_000 }).toMatch(/^HTTP\/1\.[01] \d{3}/);
  });

  it('forks and checkpoints a single-threaded server with a connection not yet accepted; its client tries again in each child and after a rollback', async () => {
    const inFlight = async (ws: Workspace): Promise<InFlight> =>
      JSON.parse((await sh(c, ws, 'cat /tmp/inflight.json 2>/dev/null || echo {}')) || '{}') as InFlight;
    /** Once the stream ends, the request gets its page: in the source on its first try, in a restored tree on another. */
    const served = async (ws: Workspace, tries: 'first' | 'again') => {
      await sh(c, ws, 'touch /tmp/inflight.release');
      await expect.poll(async () => (await inFlight(ws)).state, { timeout: 15_000, message: ws.name }).toBe('served');
      const seen = await inFlight(ws);
      if (tries === 'first') expect(seen, ws.name).toEqual({ tries: 1, errors: [], state: 'served' });
      else expect(seen.tries, `${ws.name}: ${JSON.stringify(seen)}`).toBeGreaterThan(1);
    };
    await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', 'cat > /tmp/busy-server.py'], stdin: BUSY_SERVER });
    await sh(
      c,
      source,
      [
        'rm -f /tmp/inflight.*',
        'nohup python3 /tmp/busy-server.py serve >/tmp/busy-serve.log 2>&1 &',
        'sleep 0.5',
        'nohup python3 /tmp/busy-server.py stream >/tmp/busy-stream.log 2>&1 &',
        'sleep 0.5',
        'nohup python3 /tmp/busy-server.py fetch >/tmp/busy-fetch.log 2>&1 &',
      ].join('\n'),
    );
    try {
      await expect.poll(async () => (await inFlight(source)).state, { timeout: 15_000 }).toBe('waiting');
      const pending = async (ws: Workspace) => (await c.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', pendingAt(8501)] })).stdout.trim();
      expect(await pending(source)).toBe('1'); // CRIU refused such a server: "In-flight connection (l)"
      const version = await c.request('branch.checkpoint', { workspace: source.id, label: 'a connection not yet accepted' });
      const children = await fork(source, 'a connection not yet accepted');
      expect(await pending(source)).toBe('1');
      for (const child of children) await served(child, 'again');
      await served(source, 'first');
      const rolledBack = await track(await c.request('branch.rollback', { workspace: source.id, version: version.id }));
      await served(rolledBack, 'again');
    } finally {
      await sh(c, source, 'pkill -f "busy-server[.]py" || true; rm -f /tmp/inflight.*');
    }
  });

  it('tells each child, and a rolled-back branch, of its new generation, and not the source; each child has its own MAC address', async () => {
    const generation = async (ws: Workspace) => (await sh(c, ws, 'cat /run/grove/generation')).trim();
    const seen = async (ws: Workspace) => (await sh(c, ws, 'cat /tmp/generation.log 2>/dev/null || true')).trim().split('\n').filter(Boolean);
    const mac = async (ws: Workspace) => (await sh(c, ws, 'cat /sys/class/net/eth0/address')).trim();
    /** The branch's watcher saw one change, to the generation after `before` (the counter one up, a new id), and no more. */
    const toldOnce = async (ws: Workspace, before: string) => {
      await expect.poll(() => seen(ws), { timeout: 15_000, message: ws.name }).toHaveLength(1);
      const now = await generation(ws);
      const [counter, id] = before.split(' ');
      expect(now, ws.name).toMatch(new RegExp(`^${Number(counter) + 1} (?!${id})[0-9a-f]{32}$`));
      expect((await seen(ws))[0], ws.name).toMatch(new RegExp(`^${now} \\d+$`));
      await new Promise((r) => setTimeout(r, 1000));
      expect(await seen(ws), ws.name).toHaveLength(1);
      return now;
    };
    await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', 'cat > /tmp/generation-watcher.py'], stdin: GENERATION_WATCHER });
    await sh(c, source, 'rm -f /tmp/generation.*; nohup python3 /tmp/generation-watcher.py >/tmp/generation-watcher.out 2>&1 &');
    try {
      await waitFor('the watcher to watch', () => sh(c, source, 'test -e /tmp/generation.ready && echo yes || true').then((o) => o.includes('yes')), 15_000);
      const before = await generation(source);
      expect(before).toMatch(/^\d+ [0-9a-f]{32}$/);
      const children = await fork(source, 'generation watcher');
      const renewed: string[] = [];
      for (const child of children) renewed.push(await toldOnce(child, before));
      expect(new Set(renewed).size).toBe(children.length);
      expect(await seen(source)).toEqual([]);
      expect(await generation(source)).toBe(before);
      const macs = await Promise.all([source, ...children].map(mac));
      for (const m of macs) expect(m).toMatch(/^02:67:00:00:[0-9a-f]{2}:[0-9a-f]{2}$/);
      expect(new Set(macs).size).toBe(macs.length);
      const version = await c.request('branch.checkpoint', { workspace: source.id, label: 'generation' });
      const rolledBack = await track(await c.request('branch.rollback', { workspace: source.id, version: version.id }));
      expect(await toldOnce(rolledBack, before)).not.toBe(before);
    } finally {
      await sh(c, source, 'pkill -f "generation-watcher[.]py" || true; rm -f /tmp/generation.*');
    }
  });

  it('delivers messages in flight that carry descriptors, each to its reader, in each child and the source', async () => {
    await c.request('exec.run', { workspace: source.id, argv: ['sh', '-c', 'cat > /tmp/passer.py'], stdin: PASSER });
    await sh(c, source, 'rm -f /tmp/scm.go /tmp/scm-*; nohup python3 /tmp/passer.py >/tmp/passer.log 2>&1 &');
    await waitFor(
      'both messages to be sent',
      () => sh(c, source, 'ls /tmp/scm-parent.sent /tmp/scm-child.sent >/dev/null 2>&1 && echo yes || true').then((o) => o.includes('yes')),
      15_000,
    );
    const children = await fork(source, 'descriptors in flight');
    for (const branch of [...children, source]) {
      await sh(c, branch, 'touch /tmp/scm.go');
      const read = () => sh(c, branch, 'for side in parent child; do cat /tmp/scm-$side.txt 2>/dev/null; echo; done').then((t) => t.trim());
      await expect
        .poll(read, { timeout: 15_000, message: branch.name })
        .toBe('to parent: kept by the child; back over the sent pair\nto child: closed by the parent');
    }
  });

  it('keeps every file lock Chromium holds, by the same process, in each child', async () => {
    // Kind, access and range of each lock, with the pid and command that hold it and the file it is on. OFD
    // locks have no pid and /proc/locks lists them from every namespace: the holder's is checked by locks().
    // One Python process per listing: a shell loop spawned a stat per descriptor and took over a minute on a slow VM.
    const heldLocks = async (ws: Workspace) => {
      const res = await c.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', LOCK_LISTER], timeoutMs: 60_000 });
      if (res.exitCode !== 0) throw new Error(`listing the locks failed: ${res.stderr}`);
      return res.stdout.trim().split('\n');
    };
    await expect.poll(async () => (await heldLocks(source)).filter((l) => l.includes('chrom')).length, { timeout: 60_000 }).toBeGreaterThan(10);
    const before = await heldLocks(source);
    // The SQLite databases Chromium also maps (History, Web Data, ...) are the ones CRIU used to drop (criu-patches/0003).
    expect(before.filter((l) => l.includes('1073741824-') && l.includes('/Default/History')).length).toBe(1);
    const children = await fork(source, `${before.length} file locks`);
    for (const child of children) expect(await heldLocks(child), child.name).toEqual(before);
  });

  it('keeps each tmpfs as it was: the empty ones, /dev with its nodes and links, and /dev/shm whose group the branch changed', async () => {
    // An empty tmpfs whose root is as its mount makes it is saved without a tar (criu-patches/0014); one whose
    // root's group differs is not, or the child would get the mount's. /dev, empty files (the host's nodes are
    // bound over them, so what shows is the host's), directories and links, is archived by CRIU itself (0016).
    const tmpfsMounts = async (ws: Workspace) => {
      const res = await c.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', TMPFS_LISTER] });
      if (res.exitCode !== 0) throw new Error(`listing the tmpfs mounts failed: ${res.stderr}`);
      // A restore may mount them in another order; each entry stays under its mount.
      return res.stdout
        .trim()
        .split(/\n(?! )/)
        .sort()
        .join('\n');
    };
    const group = (await sh(c, source, 'stat -c %g /dev/shm')).trim();
    await sh(c, source, 'chgrp 100 /dev/shm');
    try {
      const before = await tmpfsMounts(source);
      expect(before).toMatch(/^\/dev\/shm 0o1777 \d+ 100 /m);
      expect(before.split('\n').filter((l) => l.startsWith('/')).length, before).toBeGreaterThanOrEqual(4); // /dev, /dev/shm and the two crun masks
      expect(before).toMatch(/^ {2}\/dev\/ptmx lrwxrwxrwx \d+ \d+ \d+ -> pts\/ptmx$/m);
      const children = await fork(source, 'tmpfs mounts');
      for (const child of children) expect(await tmpfsMounts(child), child.name).toBe(before);
    } finally {
      await sh(c, source, `chgrp ${group} /dev/shm`);
    }
  });

  it('gives each mapping its own file where the overlay shows a file of the branch and one of its image with one inode number', async () => {
    // Lower and upper are btrfs subvolumes, each numbering its own inodes, and CRIU took a device and inode number
    // for one file (criu-patches/0017): a mapping came back as the other file, and an image library's written pages,
    // borrowed into a deleted file of Chromium's in /tmp, failed the restore past that file's end. The fixture
    // deletes one of the image's documents for its third pair; the source keeps that deletion.
    await c.request('exec.run', { workspace: source.id, argv: ['tee', '/tmp/alike-files.py'], stdin: await readFile(ALIKE_FILES, 'utf8') });
    const pid = (await sh(c, source, 'rm -f /tmp/alike.json; nohup python3 /tmp/alike-files.py >/tmp/alike.log 2>&1 & echo $!')).trim();
    /** Each mapping as the fixture reports it on a signal, but for its inode number (a restored deleted file has a new one). */
    const shown = async (ws: Workspace) => {
      const out = await sh(
        c,
        ws,
        `rm -f /tmp/alike.json; kill -USR1 ${pid}; for i in $(seq 100); do [ -e /tmp/alike.json ] && break; sleep 0.1; done; cat /tmp/alike.json`,
      );
      const mappings = JSON.parse(out) as Record<string, AlikeMapping>;
      return Object.fromEntries(Object.entries(mappings).map(([name, { ino: _ino, ...seen }]) => [name, seen]));
    };
    try {
      await waitFor(
        'the fixture to map its files',
        async () => {
          const state = (await sh(c, source, `test -e /tmp/alike.json && echo ready || kill -0 ${pid} 2>/dev/null || cat /tmp/alike.log`)).trim();
          if (state !== 'ready' && state !== '') throw new Error(`the fixture stopped: ${state}`);
          return state === 'ready';
        },
        60_000,
      );
      const mapped = JSON.parse(await sh(c, source, 'cat /tmp/alike.json')) as Record<string, AlikeMapping>;
      for (const pair of ['apart', 'adjacent', 'deleted']) {
        const image = mapped[`${pair} image`]!;
        const branch = mapped[`${pair} branch`]!;
        expect(branch.ino, pair).toBe(image.ino);
        expect(branch.path, pair).toMatch(/^\/tmp\/alike\/\d+/);
        expect(image.path, pair).not.toMatch(/^\/tmp\//);
        expect(Buffer.from(branch.first, 'hex').toString('latin1'), pair).toMatch(/^branch-\d+/);
        expect(image.written, pair).toBe('W');
      }
      expect(mapped['deleted branch']!.path).toMatch(/ \(deleted\)$/);
      expect(mapped['deleted image']!.path).toMatch(/^\/usr\/share\/.* \(deleted\)$/);
      const before = await shown(source);
      const children = await fork(source, 'files the overlay numbers alike');
      for (const child of children) expect(await shown(child), child.name).toEqual(before);
    } finally {
      await sh(c, source, `kill ${pid}; rm -rf /tmp/alike /tmp/alike.json`);
    }
  });

  it('shows the survivors of a discarded middle branch under their nearest living ancestor', async () => {
    const [first] = await fork(source, 'chain, generation 1', 1);
    const [second] = await fork(first!, 'chain, generation 2', 1);
    const [third] = await fork(second!, 'chain, generation 3', 1);
    await c.request('workspace.delete', { workspace: second!.id });
    forked.splice(forked.indexOf(second!.id), 1);
    const tree = await c.request('workspace.list', {});
    expect(tree.find((w) => w.id === third!.id)?.parent).toBe(first!.id);
    expect(tree.find((w) => w.id === first!.id)?.parent).toBe(source.id);
    expect(await report(third!, 8301)).toMatchObject({ heapIntact: true, ghost: 'ghost-content' });
  });

  it('promotes a child that keeps all it held, and forks it as the source was forked', async () => {
    const [child] = await fork(source, 'before a promotion', 1);
    const promoted = await c.request('branch.promote', { workspace: child!.id, oldMain: 'keep' });
    expect(promoted).toMatchObject({ id: child!.id, main: true, state: 'running' });
    expect(await report(promoted, 8301)).toMatchObject({ ghost: 'ghost-content', heapIntact: true, countersMoving: true });
    expect(await locks(promoted)).toEqual({ flock: 'held', posix: 'held', ofd: 'held' });
    await talking(promoted);
    for (const grandchild of await fork(promoted, 'the promoted branch')) {
      expect(await report(grandchild, 8301), grandchild.name).toMatchObject({ ghost: 'ghost-content', heapIntact: true, countersMoving: true });
      expect(await locks(grandchild), grandchild.name).toEqual({ flock: 'held', posix: 'held', ofd: 'held' });
      await talking(grandchild);
    }
  });

  it('takes a foreground exec under way (xdotool --sync) into each child and through a rollback, each copy detached, its output in the log', async () => {
    const window = 'grove-sync-window';
    const waiting = c.request('exec.run', {
      workspace: source.id,
      argv: ['sh', '-c', `echo waiting; xdotool search --sync --name ${window}`],
      env: { DISPLAY: ':0' },
      timeoutMs: 600_000,
    });
    /** The run's copy in the branch runs on detached until a window of that name shows, then its log has what it printed. */
    const endsDetached = async (ws: Workspace, run: string) => {
      expect((await c.request('exec.log', { workspace: ws.id })).runs, ws.name).toEqual([
        { id: run, command: expect.stringContaining('xdotool'), exitStatus: null },
      ]);
      await sh(c, ws, `DISPLAY=:0 nohup xterm -T ${window} >/dev/null 2>&1 &`);
      await expect
        .poll(async () => (await c.request('exec.log', { workspace: ws.id, run })).runs[0]?.exitStatus, { timeout: 30_000, message: ws.name })
        .toBe(0);
      expect((await c.request('exec.log', { workspace: ws.id, run })).output, ws.name).toMatch(/^waiting\n\d+\n$/);
    };
    try {
      await waitFor('xdotool to be connected', () => sh(c, source, 'pgrep -x xdotool || true').then((o) => o.trim() !== ''), 15_000);
      const version = await c.request('branch.checkpoint', { workspace: source.id, label: 'an exec under way' });
      const forkedWith = await forkReport(source, 'a foreground xdotool --sync exec');
      expect(forkedWith.leftBehind).toEqual([]);
      expect(forkedWith.carried).toEqual([expect.stringMatching(/^exec e[0-9a-f]{8} \(sh -c echo waiting; xdotool .*\) goes on in each child, detached/)]);
      const run = /exec (e[0-9a-f]{8})/.exec(forkedWith.carried[0]!)![1]!;
      for (const child of forkedWith.children) await endsDetached(child, run);
      // The source's run is still its caller's: it ends when the source shows such a window, and answers.
      await sh(c, source, `DISPLAY=:0 nohup xterm -T ${window} >/dev/null 2>&1 &`);
      expect(await waiting).toMatchObject({ exitCode: 0, stdout: expect.stringMatching(/^waiting\n\d+\n$/), stderr: '', timedOut: false });
      expect((await c.request('exec.log', { workspace: source.id })).runs).toEqual([]);
      const rolledBack = await track(await c.request('branch.rollback', { workspace: source.id, version: version.id }));
      await endsDetached(rolledBack, run);
    } finally {
      await sh(c, source, `pkill -x xdotool; pkill -f "xterm -T ${window.slice(0, -1)}[${window.at(-1)}]"; true`);
      await waiting.catch(() => undefined);
    }
  });

  it('takes a terminal with tmux attached in it into each child and through a rollback, to attach to there', async () => {
    const output = new Map<string, string>();
    await c.subscribe(['exec.output']);
    c.on('exec.output', (o) => output.set(o.session, (output.get(o.session) ?? '') + o.data));
    const shows = (session: string, text: string, message: string) =>
      expect.poll(() => output.get(session) ?? '', { timeout: 15_000, message }).toContain(text);
    /** The terminal's copy, attached: tmux's screen first, then what is typed goes through tmux to its shell. */
    const attachIn = async (ws: Workspace, holder: string) => {
      const attached = await c.request('exec.open', { workspace: ws.id, attach: holder, cols: 80, rows: 24 });
      try {
        await shows(attached.session, 'before-42', `${ws.name}'s scrollback`);
        await c.request('exec.write', { session: attached.session, data: `echo in-$((6*7))-${ws.name}\r` });
        await shows(attached.session, `in-42-${ws.name}`, ws.name);
        expect((await sh(c, ws, 'tmux capture-pane -p -t fidelity')).trim(), ws.name).toContain(`in-42-${ws.name}`);
      } finally {
        await c.request('exec.close', { session: attached.session });
      }
    };
    const terminal = await c.request('exec.open', { workspace: source.id, cols: 80, rows: 24 });
    try {
      await c.request('exec.write', { session: terminal.session, data: 'tmux new-session -s fidelity\r' });
      await waitFor('tmux to be attached', () => sh(c, source, 'tmux list-clients 2>/dev/null || true').then((o) => o.trim() !== ''), 15_000);
      await c.request('exec.write', { session: terminal.session, data: 'echo before-$((6*7))\r' });
      await shows(terminal.session, 'before-42', 'the source');
      const version = await c.request('branch.checkpoint', { workspace: source.id, label: 'tmux attached' });
      const forkedWith = await forkReport(source, 'tmux attached in a terminal');
      expect(forkedWith.leftBehind).toEqual([]);
      expect(forkedWith.carried).toEqual([expect.stringMatching(/^terminal t[0-9a-f]{8} \(\/bin\/bash -l\) goes into each child/)]);
      const holder = /terminal (t[0-9a-f]{8})/.exec(forkedWith.carried[0]!)![1]!;
      for (const child of forkedWith.children) await attachIn(child, holder);
      await c.request('exec.write', { session: terminal.session, data: 'echo still-$((6*7))\r' });
      await shows(terminal.session, 'still-42', 'the source');
      expect(await sh(c, source, 'tmux capture-pane -p -t fidelity')).not.toContain('in-42');
      const rolledBack = await track(await c.request('branch.rollback', { workspace: source.id, version: version.id }));
      await attachIn(rolledBack, holder);
    } finally {
      await c.request('exec.close', { session: terminal.session }).catch(() => undefined);
      await sh(c, source, 'tmux kill-server; pkill -f "import errno[,] fcntl"; true');
    }
  });

  it('names both ends of a connection from outside the process tree when CRIU refuses it, says what to do, and forks once it ends', async () => {
    // What grove starts is inside the branch's tree; a person's nsenter from the host is not, and its connection to the X server cannot be dumped.
    const init = (await c.request('workspace.get', { workspace: source.id })).pid!; // a rollback gave the source a new one
    const outside = spawn(
      'nsenter',
      ['--target', String(init), '--all', '--root', '--wd', 'env', 'DISPLAY=:0', 'xdotool', 'search', '--sync', '--name', 'grove-no-such-window'],
      { stdio: 'ignore' },
    );
    try {
      await waitFor('xdotool to be connected', () => sh(c, source, 'pgrep -x xdotool || true').then((o) => o.trim() !== ''), 15_000);
      const failure = await c.request('branch.fork', { workspace: source.id, copies: 2 }).then(
        () => 'the fork went through',
        (e: Error) => e.message,
      );
      process.stderr.write(`[fidelity] refused: ${failure}\n`);
      expect(failure).toMatch(/External socket is used \(/); // what
      expect(failure).toMatch(
        /process \d+ in the branch: xdotool search --sync --name grove-no-such-window, outside the branch's process tree, is connected to process \d+ in the branch: \S*Xvnc :0/,
      ); // who, and its peer
      expect(failure).toMatch(/end that process .*nohup COMMAND/); // what to do
    } finally {
      outside.kill('SIGKILL');
      await sh(c, source, 'pkill -x xdotool || true');
    }
    expect((await c.request('workspace.list', {})).filter((w) => w.parent === source.id && !forked.includes(w.id))).toEqual([]);
    const children = await fork(source, 'after an outside connection ended');
    for (const branch of [...children, source]) expect(await report(branch, 8301), branch.name).toMatchObject({ heapIntact: true, countersMoving: true });
  });

  it('refuses to fork a branch that holds what cannot be forked, says who holds what and what to do, and leaves it running', async () => {
    // A Landlock ruleset (a sandboxing program's): any process may make one, CRIU cannot take it along.
    const holder =
      "import ctypes, struct, time; l = ctypes.CDLL(None); l.syscall(444, ctypes.create_string_buffer(struct.pack('Q', 1)), 8, 0); time.sleep(3600)";
    await sh(
      c,
      source,
      `nohup python3 -c "${holder}" >/dev/null 2>&1 &
sleep 1`,
    );
    try {
      const failure = await c.request('branch.fork', { workspace: source.id, copies: 2 }).then(
        () => 'the fork went through',
        (e: Error) => e.message,
      );
      process.stderr.write(`[fidelity] refused: ${failure}\n`);
      expect(failure).toMatch(/landlock-ruleset/); // what
      expect(failure).toMatch(/process \d+ in the branch: python3 -c import ctypes/); // who
      expect(failure).toMatch(/close it or end the process/); // what to do
    } finally {
      await sh(c, source, 'pkill -f "time[.]sleep.3600" || true');
    }
    expect(await report(source, 8301)).toMatchObject({ heapIntact: true, countersMoving: true });
    expect((await c.request('workspace.list', {})).filter((w) => w.parent === source.id && !forked.includes(w.id))).toEqual([]);
  });
});
