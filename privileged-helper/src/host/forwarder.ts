// A TCP forwarder from 127.0.0.1:hostPort to a workspace's address:port. The
// helper owns these listeners, so host ports exist only while the helper does,
// and are re-opened on the same numbers when it adopts a running workspace.
import net from 'node:net';

export class PortForwarder {
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly hostPort: number,
  ) {}

  /** Listens on 127.0.0.1:hostPort (0 = any free port) and forwards to target. */
  static async open(hostPort: number, target: { host: string; port: number }): Promise<PortForwarder> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: '127.0.0.1', port: hostPort, exclusive: true }, () => {
        server.off('error', reject);
        resolve();
      });
    });
    const address = server.address() as net.AddressInfo;
    const forwarder = new PortForwarder(server, address.port);
    server.on('connection', (client) => forwarder.relay(client, target));
    return forwarder;
  }

  private relay(client: net.Socket, target: { host: string; port: number }): void {
    const upstream = net.connect({ host: target.host, port: target.port });
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

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
