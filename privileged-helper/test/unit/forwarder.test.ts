// A branch's published port is open to anyone on the machine: one forwarder
// relays at most MAX_CONNECTIONS_PER_FORWARDER connections at once, closes the
// rest at once, and says so in the helper's log (once a minute).
import { once } from 'node:events';
import net from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
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

describe('Forwarder to an upstream started on demand', () => {
  it('asks for the upstream only when a client comes, and counts its clients as they come and go', async () => {
    const upstream = net.createServer((s) => s.pipe(s));
    upstream.listen(0, '127.0.0.1');
    await once(upstream, 'listening');
    cleanups.push(() => new Promise((r) => upstream.close(r)));
    const counts: number[] = [];
    let connects = 0;
    const fwd = await Forwarder.tcp(
      0,
      {
        name: 'the echo',
        connect: async () => {
          connects++;
          await delay(100); // an upstream still starting: what the client sent meanwhile is kept
          return net.connect((upstream.address() as net.AddressInfo).port, '127.0.0.1');
        },
        clients: (open) => counts.push(open),
      },
      () => undefined,
    );
    cleanups.push(() => fwd.close());
    expect(connects).toBe(0);
    const a = net.connect(fwd.hostPort!, '127.0.0.1');
    cleanups.push(() => a.destroy());
    a.write('early');
    const [echo] = (await once(a, 'data')) as [Buffer];
    expect(echo.toString()).toBe('early');
    const b = net.connect(fwd.hostPort!, '127.0.0.1');
    await once(b, 'connect');
    await until(() => counts.length === 2, { what: 'the second client counted' });
    expect(counts).toEqual([1, 2]);
    b.destroy();
    a.destroy();
    await until(() => counts.length === 4, { what: 'both clients counted out' });
    expect(counts).toEqual([1, 2, 1, 0]);
    expect(connects).toBe(2);
  });

  it('closes a client whose upstream cannot start, saying why', async () => {
    const said: string[] = [];
    const fwd = await Forwarder.tcp(0, { name: 'the stream', connect: () => Promise.reject(new Error('it did not start')), clients: () => undefined }, (m) =>
      said.push(m),
    );
    cleanups.push(() => fwd.close());
    const c = net.connect(fwd.hostPort!, '127.0.0.1');
    c.on('error', () => undefined);
    await once(c, 'close');
    expect(said).toEqual(['the stream: it did not start']);
  });
});
