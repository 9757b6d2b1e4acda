// A branch's published port is open to anyone on the machine: one forwarder
// relays at most MAX_CONNECTIONS_PER_FORWARDER connections at once, closes the
// rest at once, and says so in the helper's log (once a minute).
import { once } from 'node:events';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Forwarder, MAX_CONNECTIONS_PER_FORWARDER } from '../../src/host/forwarder.js';
import { holdsFor, until } from '../until.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('Forwarder', () => {
  it('relays at most its limit at once and closes the rest, saying so once', async () => {
    let relayedClosed = 0;
    const upstream = net.createServer((s) => s.on('error', () => undefined).on('close', () => relayedClosed++));
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    cleanups.push(() => new Promise((r) => upstream.close(r)));
    const said: string[] = [];
    const fwd = await Forwarder.tcp(0, { host: '127.0.0.1', port: (upstream.address() as net.AddressInfo).port }, (m) => said.push(m));
    cleanups.push(() => fwd.close());
    const clients: net.Socket[] = [];
    cleanups.push(() => clients.forEach((c) => c.destroy()));
    let closedEarly = 0;
    for (let i = 0; i < MAX_CONNECTIONS_PER_FORWARDER + 20; i++) {
      const c = net.connect(fwd.hostPort!, '127.0.0.1');
      c.on('error', () => undefined);
      c.on('close', () => closedEarly++);
      clients.push(c);
      await once(c, 'connect');
    }
    await until(() => closedEarly === 20, { what: 'the 20 past the limit to be closed' });
    await holdsFor(100, () => closedEarly === 20, 'the connections within the limit stay open');
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(new RegExp(`refusing connections: ${MAX_CONNECTIONS_PER_FORWARDER} open here`));
    // One closes: one more fits.
    clients[0]!.destroy();
    await until(() => relayedClosed === 1, { what: 'the forwarder to close what it relayed for the closed one' });
    const again = net.connect(fwd.hostPort!, '127.0.0.1');
    clients.push(again);
    await once(again, 'connect');
    await holdsFor(200, () => !again.destroyed, 'the connection that fits again stays open');
  });
});
