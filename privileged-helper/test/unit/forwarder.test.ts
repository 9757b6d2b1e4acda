// A branch's published port is open to anyone on the machine: one forwarder
// relays at most MAX_CONNECTIONS_PER_FORWARDER connections at once, closes the
// rest at once, and says so in the helper's log (once a minute).
import { once } from 'node:events';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Forwarder, MAX_CONNECTIONS_PER_FORWARDER } from '../../src/host/forwarder.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

describe('Forwarder', () => {
  it('relays at most its limit at once and closes the rest, saying so once', async () => {
    const upstream = net.createServer((s) => s.on('error', () => undefined));
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
    await sleep(300);
    expect(closedEarly).toBe(20);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatch(new RegExp(`refusing connections: ${MAX_CONNECTIONS_PER_FORWARDER} open here`));
    // One closes: one more fits.
    clients[0]!.destroy();
    await sleep(100);
    const again = net.connect(fwd.hostPort!, '127.0.0.1');
    clients.push(again);
    await once(again, 'connect');
    await sleep(200);
    expect(again.destroyed).toBe(false);
  });
});
