// A non-interactive exec held inside the branch, as a terminal is
// (terminal-holder.ts): a small Python program, started through grove-enter,
// leaves its starter at once so the branch's init is its parent, and runs the
// command under it. The command and all it starts are then part of the
// branch's process tree, which a fork and a checkpoint take along: a running
// `grove exec WS -- sleep 60`, or an xdotool --sync connected to the X server,
// goes into every child instead of being left out (or making the dump fail).
//
// The helper talks to it as to a terminal's holder, through two FIFOs in
// /run/grove/execs/ID and a relay inside the branch (the starter's shell
// turns into it: RUN), in frames (a kind byte, a 4-byte big-endian length,
// the payload):
//   to the holder    c the command, first, on the starter's stdin (its argv as JSON: on the holder's
//                    own command line, \`pgrep -f\` and \`pkill -f\` of the command would find the holder)
//                    i input · e end of input · k kill the command and all it started
//   from the holder  o stdout · e stderr · x exit status (decimal; negative: the signal that ended it)
// Every byte of output also goes to a log beside the FIFOs, kept to two files
// of LOG_BYTES at most (the newest output). A copy in a fork's child or a
// rolled-back branch has no relay: its input FIFO has no writer and its
// output FIFO no reader, and it is detached from then on — the command runs
// on, its output only in the log, which `grove exec --log` reads. An attached
// run's log goes when it ends (its caller got everything); a detached one's
// stays, with its exit status, and each new run keeps the newest KEEP_ENDED.

/** A run's id: the name of its log in the branch, the same in the source and in each child. */
export const RUN_ID = /^e[0-9a-f]{8}$/;

export const RUNS_DIR = '/run/grove/execs';

/** How much of a run's output its log keeps: the newest, in `log` and the file before it, `log.1`. */
export const LOG_BYTES = 1 << 20;

/** argv after `python3 -c RUN_HOLDER`: the run's ID; the command comes in a 'c' frame on stdin. */
export const RUN_HOLDER = String.raw`
import json, os, select, shutil, signal, struct, sys, time
def read_exactly(n):
    data = b''
    while len(data) < n:
        chunk = os.read(0, n - len(data))
        if not chunk:
            sys.exit(1)
        data += chunk
    return data
head = read_exactly(5)
if head[:1] != b'c':
    sys.exit(1)
rid, argv = sys.argv[1], json.loads(read_exactly(struct.unpack('>I', head[1:5])[0]))
base = '${RUNS_DIR}'
home = base + '/' + rid
LOG_BYTES = ${LOG_BYTES}
KEEP_ENDED = 16
os.makedirs(base, mode=0o755, exist_ok=True)
ended = []
for other in os.listdir(base):
    try:
        ended.append((os.stat(base + '/' + other + '/status').st_mtime, other))
    except OSError:
        pass
for _, other in sorted(ended)[:-KEEP_ENDED]:
    shutil.rmtree(base + '/' + other, ignore_errors=True)
os.mkdir(home, 0o700)
with open(home + '/command', 'w') as f:
    f.write(' '.join(argv)[-300:])
for name in ('in', 'out'):
    os.mkfifo(home + '/' + name, 0o600)
ready_r, ready_w = os.pipe()
if os.fork():
    os.close(ready_w)
    os._exit(0 if os.read(ready_r, 1) == b'1' else 1)
os.close(ready_r)
os.setsid()
for fd in (0, 1, 2):
    os.dup2(os.open('/dev/null', os.O_RDWR), fd)
fin = os.open(home + '/in', os.O_RDONLY | os.O_NONBLOCK)
os.write(ready_w, b'1'); os.close(ready_w)
for _ in range(3000):
    try:
        fout = os.open(home + '/out', os.O_WRONLY | os.O_NONBLOCK)
        os.set_blocking(fout, True)
        break
    except OSError:
        time.sleep(0.01)
else:
    shutil.rmtree(home, ignore_errors=True)
    sys.exit(1)
in_r, in_w = os.pipe()
out_r, out_w = os.pipe()
err_r, err_w = os.pipe()
pid = os.fork()
if pid == 0:
    os.setsid()
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_DFL)
    for fd, to in ((in_r, 0), (out_w, 1), (err_w, 2)):
        os.dup2(fd, to)
    os.closerange(3, 256)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        os.write(2, ('%s: %s\n' % (argv[0], e.strerror)).encode())
    os._exit(127)
for fd in (in_r, out_w, err_w):
    os.close(fd)
os.set_blocking(in_w, False)
def open_log():
    try:
        return open(home + '/log', 'ab', buffering=0)
    except OSError:
        return None
log = open_log()
attached = True
def detach():
    global attached
    if attached:
        attached = False
        open(home + '/detached', 'w').close()
def send(kind, payload=b''):
    data = kind + struct.pack('>I', len(payload)) + payload
    while attached and data:
        try:
            data = data[os.write(fout, data):]
        except OSError:
            detach()
def record(data):
    # The log is on the branch's disk: a full one (its quota) ends the log, never the run,
    # whose caller still gets every byte through the FIFO.
    global log
    if log is None:
        return
    try:
        log.write(data)
        if log.tell() >= LOG_BYTES:
            log.close()
            os.replace(home + '/log', home + '/log.1')
            log = open_log()
    except OSError:
        log = None
def children():
    tree = {}
    for entry in os.listdir('/proc'):
        try:
            stat = open('/proc/%s/stat' % entry).read()
            tree.setdefault(int(stat[stat.rindex(')') + 2:].split()[1]), []).append(int(entry))
        except (OSError, ValueError):
            pass
    return tree
def kill_tree():
    seen = set()
    for _ in range(64):
        tree, found, todo = children(), set(), [pid]
        while todo:
            p = todo.pop()
            found.add(p)
            todo.extend(tree.get(p, []))
        fresh = found - seen
        if not fresh:
            break
        for p in fresh:
            try:
                os.kill(p, signal.SIGSTOP)
            except OSError:
                pass
        seen |= fresh
        time.sleep(0.01)
    for p in seen:
        try:
            os.kill(p, signal.SIGKILL)
        except OSError:
            pass
outputs = {out_r: b'o', err_r: b'e'}
frames, pending, input_ends, status = bytearray(), bytearray(), False, None
while outputs or status is None:
    wanted = [in_w] if in_w is not None and pending else []
    readable, writable, _ = select.select(list(outputs) + ([fin] if attached else []), wanted, [], 0.2)
    for fd in readable:
        data = os.read(fd, 32768)
        if fd != fin:
            if data:
                record(data)
                send(outputs[fd], data)
            else:
                del outputs[fd]
                os.close(fd)
        elif not data:
            detach()
            input_ends = True
        else:
            frames.extend(data)
            while len(frames) >= 5 and len(frames) >= 5 + struct.unpack('>I', frames[1:5])[0]:
                size = struct.unpack('>I', frames[1:5])[0]
                kind, payload = frames[:1], bytes(frames[5:5 + size])
                del frames[:5 + size]
                if kind == b'i':
                    pending.extend(payload)
                elif kind == b'e':
                    input_ends = True
                elif kind == b'k':
                    kill_tree()
    if writable:
        try:
            del pending[:os.write(in_w, pending)]
        except BlockingIOError:
            pass
        except OSError:
            pending.clear()
    if in_w is not None and input_ends and not pending:
        os.close(in_w)
        in_w = None
    if status is None:
        done, how = os.waitpid(pid, os.WNOHANG)
        if done:
            status = os.waitstatus_to_exitcode(how)
send(b'x', str(status).encode())
if attached:
    shutil.rmtree(home, ignore_errors=True)
else:
    try:
        with open(home + '/status', 'w') as f:
            f.write(str(status))
    except OSError:
        pass
`;

/** RUN's exit when the holder did not start (the command did not run either). */
export const HOLDER_MISSING_EXIT = 125;

/** What the helper sends a run's holder. */
export type RunFrame = 'c' | 'i' | 'e' | 'k';

/**
 * Starts the holder (argv after \`sh -c RUN\`: RUN_HOLDER and the run's id;
 * it reads the command's frame from stdin, exactly) and, once it runs, relays: its output FIFO to stdout, stdin to its
 * input FIFO. The input FIFO's writer is open before the output FIFO's
 * reader, which the holder waits for: from then on, an end of its input is
 * the relay gone. Exits HOLDER_MISSING_EXIT if the holder did not start.
 */
export const RUN = [
  `python3 -I -S -c "$0" "$@" || exit ${HOLDER_MISSING_EXIT}`,
  `cd ${RUNS_DIR}/"$1" && exec 3>in || exit ${HOLDER_MISSING_EXIT}`,
  'cat out & exec cat >&3',
].join('\n');
