// What the helper sends one client, replies and events alike. What the
// kernel's socket buffer cannot take yet waits in the helper's memory, so a
// client that does not read would make the helper grow without end. Instead:
//  - while the socket's buffer is full (write() says so), the helper reads no
//    more of the client's requests (each would add a reply), and reads on
//    once it drained;
//  - events and the replies of calls already under way cannot be held back:
//    a client that leaves more than the limit unread when another message is
//    due is disconnected (its connection's close ends what it started).
// A single message always goes out whole (a reply may be as large as
// MAX_REPLY_BYTES), so the backlog stays below the limit plus one message.
import type net from 'node:net';

/** Bytes a client may leave unread before it is disconnected. */
export const OUTGOING_LIMIT_BYTES = 16 << 20;

export class Outgoing {
  constructor(
    private readonly socket: net.Socket,
    private readonly limitBytes: number,
    /** Told once, before the socket is destroyed, how much was left unread. */
    private readonly onOverflow: (unreadBytes: number) => void,
  ) {
    socket.on('drain', () => socket.resume());
  }

  /** Queues one line; pauses reading requests while lines wait, and disconnects past the limit. */
  send(line: string): void {
    if (!this.socket.writable) return;
    const unread = this.socket.writableLength;
    if (unread > this.limitBytes) {
      this.onOverflow(unread);
      this.socket.destroy();
      return;
    }
    // Buffers, so that writableLength counts bytes (for strings it counts characters).
    if (!this.socket.write(Buffer.from(line, 'utf8'))) this.socket.pause();
  }
}
