// The gate's request parsing: what a forward-proxy request line or a CONNECT
// authority names as its destination, and which headers are forwarded.
import { describe, expect, it } from 'vitest';
import { once } from 'node:events';
import net from 'node:net';
import { forwardHeaders, GateProxy, MAX_CONNECTIONS_PER_BRANCH } from '../../src/egress/gate-proxy.js';
import { parseConnectTarget, parseProxyUrl } from '../../src/egress/policy.js';
import { GATE_PORT } from '../../src/host/branch-network.js';

describe('parseProxyUrl (plain HTTP through the gate)', () => {
  it('takes host, port and path from an absolute URL', () => {
    expect(parseProxyUrl('http://outside.test/index.html?q=1')).toEqual({
      host: 'outside.test',
      port: 80,
      path: '/index.html?q=1',
      url: 'http://outside.test/index.html?q=1',
    });
    expect(parseProxyUrl('http://Outside.Test:8080')).toMatchObject({ host: 'outside.test', port: 8080, path: '/' });
    expect(parseProxyUrl('http://10.218.0.2:8080/x')).toMatchObject({ host: '10.218.0.2', port: 8080, path: '/x' });
    expect(parseProxyUrl('http://[2001:db8::1]:81/')).toMatchObject({ host: '2001:db8::1', port: 81 });
    expect(parseProxyUrl('http://outside.test./')).toMatchObject({ host: 'outside.test' });
  });

  it('refuses origin-form paths, other schemes and credentials', () => {
    expect(() => parseProxyUrl('/index.html')).toThrow(/absolute http/);
    expect(() => parseProxyUrl('https://outside.test/')).toThrow(/CONNECT/);
    expect(() => parseProxyUrl('ftp://outside.test/')).toThrow();
    expect(() => parseProxyUrl('http://user:pw@outside.test/')).toThrow(/credentials/);
  });
});

describe('parseConnectTarget (tunnels)', () => {
  it('reads host:port and [v6]:port', () => {
    expect(parseConnectTarget('outside.test:443')).toEqual({ host: 'outside.test', port: 443, path: null, url: null });
    expect(parseConnectTarget('10.218.0.2:8443')).toMatchObject({ host: '10.218.0.2', port: 8443 });
    expect(parseConnectTarget('[2001:db8::1]:443')).toMatchObject({ host: '2001:db8::1', port: 443 });
  });

  it.each(['outside.test', 'outside.test:', 'outside.test:0', 'outside.test:99999', ':443', 'a b:443', 'http://x:443', '2001:db8::1:443', 'x/y:1'])(
    'refuses %j',
    (authority) => expect(() => parseConnectTarget(authority)).toThrow(),
  );
});

describe('forwardHeaders', () => {
  it('drops hop-by-hop headers and those the Connection header names', () => {
    expect(
      forwardHeaders({
        host: 'outside.test',
        'user-agent': 'probe',
        connection: 'keep-alive, X-Secret',
        'x-secret': 'no',
        'proxy-connection': 'keep-alive',
        'proxy-authorization': 'Basic eA==',
        'transfer-encoding': 'chunked',
        'content-length': '3',
      }),
    ).toEqual({ host: 'outside.test', 'user-agent': 'probe', 'content-length': '3' });
  });
});

describe('the gate holds at most its limit of connections from one branch', () => {
  it('answers 503 past it, and says so once', async () => {
    const said: string[] = [];
    const gate = new GateProxy({
      subnet: '10.215.0.0/16',
      staticHosts: new Map(),
      admit: () => new Promise(() => undefined), // every request is held: its connection stays open
      outcome: () => undefined,
      log: (m) => said.push(m),
    });
    await gate.open({ id: 'abcd0123', name: 'flooder', treeId: 'abcd0123', hostAddress: '127.0.0.1', containerAddress: '127.0.0.1' });
    const sockets: net.Socket[] = [];
    try {
      for (let i = 0; i < MAX_CONNECTIONS_PER_BRANCH; i++) {
        const s = net.connect(GATE_PORT, '127.0.0.1');
        s.on('error', () => undefined);
        sockets.push(s);
        await once(s, 'connect');
      }
      await new Promise((r) => setTimeout(r, 200));
      const extra = net.connect(GATE_PORT, '127.0.0.1');
      sockets.push(extra);
      let answer = '';
      extra.on('data', (d: Buffer) => (answer += d.toString()));
      await once(extra, 'close');
      expect(answer).toMatch(/^HTTP\/1\.1 503 /);
      expect(said).toEqual([
        `egress gate of flooder: refusing connections: ${MAX_CONNECTIONS_PER_BRANCH} open (at most ${MAX_CONNECTIONS_PER_BRANCH} a branch)`,
      ]);
    } finally {
      for (const s of sockets) s.destroy();
      await gate.close('abcd0123');
    }
  });
});

describe('a refused CONNECT', () => {
  it('is closed once its client ends, even with bytes sent after its head left unread (a fuzz find)', async () => {
    const gate = new GateProxy({
      subnet: '10.215.0.0/16',
      staticHosts: new Map(),
      admit: async () => ({ ok: false, status: 403, message: 'no\n', verdict: 'denied' }),
      outcome: () => undefined,
      log: () => undefined,
    });
    await gate.open({ id: 'abcd0124', name: 'eager', treeId: 'abcd0124', hostAddress: '127.0.0.1', containerAddress: '127.0.0.1' });
    const held = (gate as unknown as { listeners: Map<string, { sockets: Set<unknown> }> }).listeners.get('abcd0124')!.sockets;
    try {
      for (const target of ['example.test:443', '']) {
        const s = net.connect(GATE_PORT, '127.0.0.1');
        let answer = '';
        s.on('data', (d: Buffer) => (answer += d.toString()));
        await once(s, 'connect');
        // The head, then more in writes of their own: a client that does not wait for the answer.
        for (const part of [`CONNECT ${target} HTTP/1.1\r\n\r\n`, 'early', ' bytes']) {
          s.write(part);
          await new Promise((r) => setImmediate(r));
        }
        s.end();
        await once(s, 'close');
        expect(answer).toMatch(target ? /^HTTP\/1\.1 403 / : /^HTTP\/1\.1 400 /);
        const deadline = Date.now() + 2000;
        while (held.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
        expect(held.size).toBe(0);
      }
    } finally {
      await gate.close('abcd0124');
    }
  });
});
