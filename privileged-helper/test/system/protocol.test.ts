// The socket against bad input and unauthorised peers: typed errors, nothing
// changed, and the helper keeps serving.
import net from 'node:net';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROTOCOL_VERSION } from '../../src/protocol/methods.js';
import { MAX_MESSAGE_BYTES } from '../../src/protocol/wire.js';
import { REPO } from './helper-process.js';
import { connect, instance } from './support.js';

/** A raw connection that sends lines and reads reply lines. */
class RawPeer {
  private buffer = '';
  private readonly waiters: Array<(line: string) => void> = [];
  private readonly lines: string[] = [];

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => {
      this.buffer += chunk;
      for (let nl = this.buffer.indexOf('\n'); nl !== -1; nl = this.buffer.indexOf('\n')) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        const waiter = this.waiters.shift();
        if (waiter) waiter(line);
        else this.lines.push(line);
      }
    });
  }

  static open(socketPath: string): Promise<RawPeer> {
    return new Promise((resolve, reject) => {
      const s = net.connect(socketPath, () => resolve(new RawPeer(s)));
      s.once('error', reject);
    });
  }

  async ask(raw: string): Promise<{ id: unknown; result?: unknown; error?: { code: string; message: string } }> {
    const reply = new Promise<string>((resolve) => {
      const ready = this.lines.shift();
      if (ready !== undefined) resolve(ready);
      else this.waiters.push(resolve);
    });
    this.socket.write(raw);
    return JSON.parse(await reply);
  }

  close(): void {
    this.socket.destroy();
  }
}

const hello = (id: number) => `${JSON.stringify({ id, method: 'hello', params: { protocol: PROTOCOL_VERSION, client: { name: 'raw', kind: 'test' } } })}\n`;

describe('protocol robustness', () => {
  let peer: RawPeer;

  beforeAll(async () => {
    peer = await RawPeer.open(instance().socketPath);
  });
  afterAll(() => peer.close());

  it('requires the handshake first', async () => {
    const r = await peer.ask('{"id":1,"method":"workspace.list","params":{}}\n');
    expect(r.error?.code).toBe('E_HANDSHAKE_REQUIRED');
  });

  it('refuses a protocol version it does not speak', async () => {
    const r = await peer.ask('{"id":2,"method":"hello","params":{"protocol":99,"client":{"name":"x","kind":"test"}}}\n');
    expect(r.error?.code).toBe('E_PROTOCOL_VERSION');
  });

  it('answers hello with version, epoch and capabilities', async () => {
    const r = await peer.ask(hello(3));
    expect(r.result).toMatchObject({
      protocol: PROTOCOL_VERSION,
      capabilities: expect.arrayContaining(['workspace.create', 'exec.run', 'approval.approve', 'desktop.screenshot']),
      identity: { role: 'person', uid: 0, user: 'root', pid: process.pid, client: 'test:raw' },
    });
  });

  it.each([
    ['not JSON', 'this is not json\n', 'E_PARSE'],
    ['not an envelope', '[1,2,3]\n', 'E_INVALID_REQUEST'],
    ['an unknown method', '{"id":4,"method":"workspace.explode","params":{}}\n', 'E_UNKNOWN_METHOD'],
    ['an unknown field', '{"id":5,"method":"workspace.list","params":{"sneaky":true}}\n', 'E_INVALID_PARAMS'],
    ['a traversal name', '{"id":6,"method":"workspace.create","params":{"name":"../../etc"}}\n', 'E_INVALID_PARAMS'],
    ['an option-like name', '{"id":7,"method":"workspace.create","params":{"name":"-rf"}}\n', 'E_INVALID_PARAMS'],
    ['a wrong type', '{"id":8,"method":"workspace.get","params":{"workspace":42}}\n', 'E_INVALID_PARAMS'],
    ['a missing workspace', '{"id":9,"method":"workspace.get","params":{"workspace":"nope"}}\n', 'E_NOT_FOUND'],
    ['exec in a missing workspace', '{"id":10,"method":"exec.run","params":{"workspace":"nope","argv":["true"]}}\n', 'E_NOT_FOUND'],
  ])('answers %s with a typed error', async (_what, raw, code) => {
    const r = await peer.ask(raw);
    expect(r.error?.code).toBe(code);
    expect(r.error?.message.length).toBeGreaterThan(5);
  });

  it('skips an oversized message and keeps the connection usable', async () => {
    const big = `{"id":11,"method":"workspace.list","params":{"pad":"${'x'.repeat(MAX_MESSAGE_BYTES + 10)}"}}\n`;
    const r = await peer.ask(big);
    expect(r).toMatchObject({ id: null, error: { code: 'E_TOO_LARGE' } });
    const after = await peer.ask('{"id":12,"method":"workspace.list","params":{}}\n');
    expect(Array.isArray(after.result)).toBe(true);
  });

  it('changed nothing and still serves other clients', async () => {
    const client = await connect();
    const list = await client.request('workspace.list', {});
    expect(list.find((w) => w.name === 'etc' || w.name === '-rf')).toBeUndefined();
    client.close();
  });
});

describe('socket access', () => {
  const probeScript = path.join(REPO, 'privileged-helper/test/system/fixtures/connect-probe.ts');
  const tsx = path.join(REPO, 'node_modules/.bin/tsx');

  it('is root:grove 0660 in a 0750 directory', async () => {
    const { stdout } = await execa('stat', ['-c', '%a %U %G', instance().socketPath, path.dirname(instance().socketPath)]);
    expect(stdout.split('\n')).toEqual(['660 root grove', '750 root grove']);
  });

  it('has an agent socket root:grove-agent 0660 in a 0750 directory of its own', async () => {
    const { stdout } = await execa('stat', ['-c', '%a %U %G', instance().agentSocketPath, path.dirname(instance().agentSocketPath)]);
    expect(stdout.split('\n')).toEqual(['660 root grove-agent', '750 root grove-agent']);
  });

  it('refuses a peer outside the group with a clear error', async () => {
    const res = await execa('setpriv', ['--reuid=nobody', '--regid=nogroup', '--clear-groups', tsx, probeScript, instance().socketPath], {
      reject: false,
      env: { HOME: '/tmp', TSX_TSCONFIG_PATH: '' },
    });
    expect(res.stdout).toContain('E_PRECONDITION');
    expect(res.stdout).toContain("only root and members of the 'grove' group");
  });

  it('accepts a member of the group', async () => {
    const res = await execa('setpriv', ['--reuid=nobody', '--regid=grove', '--clear-groups', tsx, probeScript, instance().socketPath], {
      reject: false,
      env: { HOME: '/tmp' },
    });
    expect(res.stdout).toContain('connected');
  });
});
