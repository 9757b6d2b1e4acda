// A terminal held inside the branch: a small Python program (every image is
// FROM grove/desktop, which has Python) that holds the PTY master and runs
// the terminal's command on its other end. It is started through grove-enter
// and leaves its starter at once, so the branch's init takes it as its own
// child: its whole tree (the shell, what was started from it, `mousepad &`,
// `tmux attach`) is part of the branch's process tree, which a fork and a
// checkpoint take along, and every child and rolled-back branch has a copy,
// detached, to attach to again.
//
// The helper only attaches, through two FIFOs in /run/grove/terminals/ID
// (files CRIU takes along by their path, whoever holds their other end), by
// a relay it starts inside the branch (`cat`, outside the tree; holding only
// the FIFOs, it never stops a dump). Both directions carry frames: a kind
// byte, a 4-byte big-endian length, the payload.
//   to the holder    i input · r rows and columns (2 × 2 bytes) · a attach · h hang up
//   from the holder  A attached (what follows is for this attacher: scrollback first) · o output · x exit status (decimal)
// Frames from the holder are at most PIPE_BUF bytes, so each is written
// whole or not at all; while nobody reads, output only goes to the scrollback.

import type { RunFrame } from './run-holder.js';

/** A holder's id: what `grove exec -t BRANCH --attach ID` names, the same in the source and in each child. */
export const HOLDER_ID = /^t[0-9a-f]{8}$/;

export const HOLDER_DIR = '/run/grove/terminals';

/** argv after `python3 -c HOLDER`: ID COLS ROWS then the command. */
export const HOLDER = String.raw`
import errno, fcntl, os, pty, select, signal, struct, sys, termios
hid, cols, rows, argv = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4:]
home = '/run/grove/terminals/' + hid
os.makedirs('/run/grove/terminals', mode=0o755, exist_ok=True)
os.mkdir(home, 0o700)
for name in ('in', 'out'):
    os.mkfifo(home + '/' + name, 0o600)
ready_r, ready_w = os.pipe()
if os.fork():
    os.close(ready_w)
    sys.exit(0 if os.read(ready_r, 1) == b'1' else 1)
os.close(ready_r)
os.setsid()
pid, master = pty.fork()
if pid == 0:
    os.execvp(argv[0], argv)
fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HHHH', rows, cols, 0, 0))
fin = os.open(home + '/in', os.O_RDWR | os.O_NONBLOCK)
fout = os.open(home + '/out', os.O_RDWR | os.O_NONBLOCK)
for fd in (0, 1, 2):
    os.dup2(os.open('/dev/null', os.O_RDWR), fd)
os.write(ready_w, b'1'); os.close(ready_w)
SCROLLBACK = 256 << 10
scrollback = bytearray()
pending = bytearray()
def send(kind, payload=b''):
    for at in range(0, max(len(payload), 1), 4000):
        try:
            os.write(fout, kind + struct.pack('>I', len(payload[at:at + 4000])) + payload[at:at + 4000])
        except BlockingIOError:
            pass
def finish(status):
    send(b'x', str(status).encode())
    for name in ('in', 'out'):
        os.unlink(home + '/' + name)
    os.rmdir(home)
    sys.exit(0)
def attach():
    try:
        while os.read(fout, 65536): pass
    except BlockingIOError:
        pass
    send(b'A')
    send(b'o', bytes(scrollback))
while True:
    readable = select.select([master, fin], [], [], 0.5)[0]
    if master in readable:
        try:
            data = os.read(master, 65536)
        except OSError:
            data = b''
        if data:
            scrollback.extend(data); del scrollback[:-SCROLLBACK]
            send(b'o', data)
    if fin in readable:
        try:
            pending.extend(os.read(fin, 65536))
        except BlockingIOError:
            pass
        while len(pending) >= 5 and len(pending) >= 5 + struct.unpack('>I', pending[1:5])[0]:
            size = struct.unpack('>I', pending[1:5])[0]
            kind, payload = pending[:1], bytes(pending[5:5 + size])
            del pending[:5 + size]
            if kind == b'i':
                os.write(master, payload)
            elif kind == b'r' and size == 4:
                fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack('HH', *struct.unpack('>HH', payload)) + b'\0' * 4)
            elif kind == b'a':
                attach()
            elif kind == b'h':
                os.close(master)
                try:
                    os.killpg(pid, signal.SIGHUP)
                except OSError:
                    pass
                finish(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
    done, status = os.waitpid(pid, os.WNOHANG)
    if done:
        finish(os.waitstatus_to_exitcode(status))
`;

/**
 * The relay inside the branch: the holder's output to stdout and stdin to
 * the holder, for the FIFOs of holder $0 (checked by HOLDER_ID first).
 */
export const RELAY = [
  'cd /run/grove/terminals/"$0" 2>/dev/null && [ -p in ] && [ -p out ] || { echo "no terminal $0 in this branch" >&2; exit 3; }',
  'cat out & exec cat >in',
].join('\n');

/** A frame to a terminal's holder, or to a run's (run-holder.ts). */
export function frame(kind: 'i' | 'r' | 'a' | 'h' | RunFrame, payload: Buffer = Buffer.alloc(0)): Buffer {
  const head = Buffer.alloc(5);
  head.write(kind, 0, 'latin1');
  head.writeUInt32BE(payload.length, 1);
  return Buffer.concat([head, payload]);
}

export function sizeFrame(cols: number, rows: number): Buffer {
  const size = Buffer.alloc(4);
  size.writeUInt16BE(rows, 0);
  size.writeUInt16BE(cols, 2);
  return frame('r', size);
}

/** The holder's frames are at most PIPE_BUF: anything much bigger is not the holder's. */
const MAX_FRAME = 1 << 16;

/** Frames from the holder, as they come in pieces: each whole one is handed on in order. */
export class FrameReader {
  private buffered = Buffer.alloc(0);

  constructor(private readonly onFrame: (kind: string, payload: Buffer) => void) {}

  /** Throws on a frame no holder sends (the FIFO is the branch's to write into). */
  push(chunk: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, chunk]);
    while (this.buffered.length >= 5) {
      const size = this.buffered.readUInt32BE(1);
      if (size > MAX_FRAME) throw new Error(`a frame of ${size} bytes from the terminal's holder`);
      if (this.buffered.length < 5 + size) return;
      const kind = this.buffered.toString('latin1', 0, 1);
      const payload = this.buffered.subarray(5, 5 + size);
      this.buffered = this.buffered.subarray(5 + size);
      this.onFrame(kind, payload);
    }
  }
}
