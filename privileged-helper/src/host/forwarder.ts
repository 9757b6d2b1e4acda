// Forwarders from the host to a branch's address:port, owned by the helper:
// they exist only while the helper does, and are re-opened on the same
// endpoints when it adopts a running branch.
//   127.0.0.1:PORT (TCP)  a branch's dev ports: its web apps, for anyone on this machine
//   a Unix socket         a branch's desktop (VNC without a password): root:GROUP 0660
//                         in a root:GROUP 0750 directory, so the kernel refuses
//                         everyone else at connect(2)
//   a Unix socket         a branch's stream, the same way, to a streamer started
//                         on demand (stream/branch-streams.ts)
import { readFileSync } from 'node:fs';
import { chmod, chown, mkdir, rm } from 'node:fs/promises';
import net from 'node:net';
import { GroveError } from '../protocol/wire.js';

export interface ForwardTarget {
  host: string;
  port: number;
}

/** An upstream that may have to be started first, and wants to know how many clients it has. */
export interface DemandTarget {
  /** Said in the log. */
  name: string;
  /** A connection to the upstream for one more client, once it takes one. */
  connect(): Promise<net.Socket>;
  /** How many clients are relayed now; called after each comes or goes. */
  clients(open: number): void;
}

/** A directory of sockets only root and one group may open. */
export interface SocketDir {
  path: string;
  gid: number;
}

/**
 * Connections one forwarder relays at once: anyone on the machine may open a
 * branch's published port, and each connection costs the helper two
 * descriptors. Past it, a new connection is closed at once (and said in the
 * helper's log, once a minute).
 */
export const MAX_CONNECTIONS_PER_FORWARDER = 256;
/** Connections all forwarders relay at once: well below the helper's descriptor limit (maxTotalConnections). */
let totalOpen = 0;

export class Forwarder {
  private readonly sockets = new Set<net.Socket>();
  private readonly clients = new Set<net.Socket>();
  private refusedSaidAt = 0;

  private constructor(
    private readonly server: net.Server,
    /** The TCP port it listens on; null for a Unix socket. */
    readonly hostPort: number | null,
    private readonly target: ForwardTarget | DemandTarget,
    private readonly log: (msg: string) => void,
  ) {
    server.on('connection', (client) => this.admit(client));
  }

  private admit(client: net.Socket): void {
    const open = this.clients.size;
    if (open >= MAX_CONNECTIONS_PER_FORWARDER || totalOpen >= maxTotalConnections()) {
      client.destroy();
      if (Date.now() - this.refusedSaidAt > 60_000) {
        this.refusedSaidAt = Date.now();
        const where = this.hostPort === null ? 'a Unix socket' : `127.0.0.1:${this.hostPort}`;
        const to = 'connect' in this.target ? this.target.name : `${this.target.host}:${this.target.port}`;
        this.log(
          `${where} -> ${to}: refusing connections: ${open} open here, ${totalOpen} in all (at most ${MAX_CONNECTIONS_PER_FORWARDER} here, ${maxTotalConnections()} in all)`,
        );
      }
      return;
    }
    totalOpen++;
    this.clients.add(client);
    client.once('close', () => {
      totalOpen--;
      this.clients.delete(client);
      this.sockets.delete(client);
      if ('connect' in this.target) this.target.clients(this.clients.size);
    });
    const target = this.target;
    if (!('connect' in target)) return this.relay(client, net.connect({ host: target.host, port: target.port }));
    target.clients(this.clients.size);
    this.sockets.add(client);
    target.connect().then(
      (upstream) => (client.destroyed ? upstream.destroy() : this.relay(client, upstream)),
      (err: Error) => {
        this.log(`${target.name}: ${err.message}`);
        client.destroy();
      },
    );
  }

  /** Listens on 127.0.0.1:hostPort (0 = any free port). */
  static async tcp(hostPort: number, target: ForwardTarget | DemandTarget, log: (msg: string) => void): Promise<Forwarder> {
    const server = net.createServer();
    await listening(server, () => server.listen({ host: '127.0.0.1', port: hostPort, exclusive: true }));
    return new Forwarder(server, (server.address() as net.AddressInfo).port, target, log);
  }

  /** Listens on a Unix socket at socketPath, root:gid 0660 (its directory is the helper's: see prepareSocketDir). */
  static async unix(socketPath: string, gid: number, target: ForwardTarget | DemandTarget, log: (msg: string) => void): Promise<Forwarder> {
    const server = net.createServer();
    try {
      await listening(server, () => {
        // Created 0600, so nobody but root can connect before the chown. bind(2)
        // runs synchronously inside listen(): the umask is restored before any other code runs.
        const previous = process.umask(0o177);
        try {
          server.listen(socketPath);
        } finally {
          process.umask(previous);
        }
      });
      await chown(socketPath, 0, gid);
      await chmod(socketPath, 0o660);
    } catch (err) {
      server.close();
      throw new GroveError('E_HOST', `cannot serve ${'connect' in target ? target.name : 'the desktop'} on ${socketPath}: ${(err as Error).message}`);
    }
    return new Forwarder(server, null, target, log);
  }

  private relay(client: net.Socket, upstream: net.Socket): void {
    for (const s of [client, upstream]) {
      this.sockets.add(s);
      s.setNoDelay(true);
      s.on('close', () => this.sockets.delete(s));
    }
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  }

  /** Stops listening (a Unix socket's file goes with it) and ends every relayed connection. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * Makes the directory empty, root:gid 0750. Called once at start, before any
 * forwarder opens: only this helper listens there, so whatever is left is a
 * dead socket of a helper that was killed.
 */
export async function prepareSocketDir(dir: SocketDir): Promise<void> {
  await rm(dir.path, { recursive: true, force: true });
  await mkdir(dir.path, { recursive: true, mode: 0o700 });
  await chown(dir.path, 0, dir.gid);
  await chmod(dir.path, 0o750);
}

let totalLimit: number | null = null;

/** A quarter of the helper's soft limit on open descriptors (each relayed connection holds two), at most 8192. */
function maxTotalConnections(): number {
  if (totalLimit === null) {
    const soft = Number(/^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? 1024);
    totalLimit = Math.min(8192, Math.floor(soft / 4));
  }
  return totalLimit;
}

function listening(server: net.Server, listen: () => void): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.once('listening', () => {
      server.off('error', reject);
      resolve();
    });
    listen();
  });
}
