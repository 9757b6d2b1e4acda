// Two real workspaces side by side: ports, desktop sockets, files, isolation, exec and terminals.
import { access } from 'node:fs/promises';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HelperClient } from '../../../main/src/helper-client/client.js';
import type { Workspace } from '../../src/protocol/entities.js';
import { linkNames, netnsNames, pidNamespaceOf, processesInPidNs } from './leftovers.js';
import { connect, createWorkspace, hostPort, httpGet, instance, sh, track, vncSocket } from './support.js';

const PROBE = `
import socket, sys
for target in sys.argv[1:]:
    host, port = target.rsplit(':', 1)
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, int(port)))
        print(target, 'open')
    except Exception as e:
        print(target, type(e).__name__)
`;

async function probe(client: HelperClient, ws: Workspace, targets: string[]): Promise<Record<string, string>> {
  const res = await client.request('exec.run', { workspace: ws.id, argv: ['python3', '-c', PROBE, ...targets] });
  expect(res.exitCode, res.stderr).toBe(0);
  const out = res.stdout;
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((l) => l.split(' ') as [string, string]),
  );
}

function serveDevPort(client: HelperClient, ws: Workspace, body: string): Promise<string> {
  return sh(
    client,
    ws,
    `mkdir -p /srv/www && echo ${body} > /srv/www/index.html && ` + `setsid python3 -m http.server 3000 --directory /srv/www </dev/null >/dev/null 2>&1 &`,
  );
}

describe('two workspaces side by side', () => {
  let client: HelperClient;
  let alpha: Workspace;
  let beta: Workspace;

  beforeAll(async () => {
    client = await connect();
    alpha = await createWorkspace(client, 'alpha');
    beta = await createWorkspace(client, 'beta');
  });

  afterAll(async () => {
    for (const ws of [alpha, beta]) if (ws) await client.request('workspace.delete', { workspace: ws.id });
    client.close();
  });

  it('gives each its own identity, its own host ports on loopback and its own desktop socket', () => {
    expect(alpha.state).toBe('running');
    expect(alpha.id).not.toBe(beta.id);
    expect(alpha.machineId).not.toBe(beta.machineId);
    for (const ws of [alpha, beta]) {
      expect(ws.ports.map((p) => p.containerPort)).toEqual([3000]);
      expect(ws.ports.every((p) => p.hostAddress === '127.0.0.1')).toBe(true);
      expect(vncSocket(ws)).toBe(`${instance().runDir}/vnc/main-${ws.tree}.sock`);
    }
    expect(hostPort(alpha, 3000)).not.toBe(hostPort(beta, 3000));
  });

  it('never maps the desktop to a host port', async () => {
    await expect(client.request('workspace.create', { name: 'vnc-on-tcp', ports: [5900] })).rejects.toMatchObject({
      code: 'E_INVALID_PARAMS',
      message: expect.stringContaining("served on the branch's VNC socket"),
    });
  });

  it('serves container port 3000 of each on a different host port', async () => {
    await serveDevPort(client, alpha, 'hello-from-alpha');
    await serveDevPort(client, beta, 'hello-from-beta');
    expect((await httpGet(hostPort(alpha, 3000))).trim()).toBe('hello-from-alpha');
    expect((await httpGet(hostPort(beta, 3000))).trim()).toBe('hello-from-beta');
  });

  it('keeps hostname and machine-id per workspace', async () => {
    expect((await sh(client, alpha, 'hostname')).trim()).toBe('alpha');
    expect((await sh(client, alpha, 'cat /etc/machine-id')).trim()).toBe(alpha.machineId);
    expect((await sh(client, beta, 'cat /etc/machine-id')).trim()).toBe(beta.machineId);
  });

  it('keeps a file written in one out of the other', async () => {
    await sh(client, alpha, 'echo secret > /root/only-in-alpha.txt');
    expect(await sh(client, alpha, 'cat /root/only-in-alpha.txt')).toBe('secret\n');
    const res = await client.request('exec.run', { workspace: beta.id, argv: ['cat', '/root/only-in-alpha.txt'] });
    expect(res.exitCode).not.toBe(0);
    expect(res.stderr).toContain('No such file');
  });

  it('lets neither reach the other, the host or any outside address', async () => {
    // A listener on every host address: a workspace must not reach it via its veth peer.
    const hostServer = net.createServer((s) => s.end('host'));
    await new Promise<void>((r) => hostServer.listen(0, '0.0.0.0', r));
    const port = (hostServer.address() as net.AddressInfo).port;
    const hostSide = alpha.address.replace(/\d+$/, (n) => String(Number(n) - 1));
    try {
      const seen = await probe(client, alpha, [
        '127.0.0.1:3000', // control: loopback inside the workspace works
        `${beta.address}:3000`,
        `${hostSide}:${port}`,
        '192.0.2.1:80', // TEST-NET-1: never routed anywhere
      ]);
      expect(seen['127.0.0.1:3000']).toBe('open');
      expect(seen[`${beta.address}:3000`]).not.toBe('open');
      expect(seen[`${hostSide}:${port}`]).not.toBe('open');
      expect(seen['192.0.2.1:80']).not.toBe('open');
      const fromBeta = await probe(client, beta, [`${alpha.address}:3000`]);
      expect(fromBeta[`${alpha.address}:3000`]).not.toBe('open');
    } finally {
      hostServer.close();
    }
  });

  it('passes exit codes, output and stdin of exec', async () => {
    const res = await client.request('exec.run', { workspace: alpha.id, argv: ['sh', '-c', 'echo out; echo err >&2; exit 7'] });
    expect(res).toMatchObject({ exitCode: 7, stdout: 'out\n', stderr: 'err\n', timedOut: false });
    const cat = await client.request('exec.run', { workspace: alpha.name, argv: ['tr', 'a-z', 'A-Z'], stdin: 'shout' });
    expect(cat.stdout).toBe('SHOUT');
    const slow = await client.request('exec.run', { workspace: alpha.id, argv: ['sleep', '31'], timeoutMs: 500 });
    expect(slow.timedOut).toBe(true);
    // The deadline killed the command inside the workspace, not just the client side.
    expect((await client.request('exec.run', { workspace: alpha.id, argv: ['pgrep', '-f', '^sleep 31$'] })).exitCode).toBe(1);
  });

  it('opens a terminal with a real PTY that resizes and reports its exit code', async () => {
    let screen = '';
    const exit = new Promise<number>((resolve) => {
      client.on('exec.exit', (e) => resolve(e.exitCode));
    });
    client.on('exec.output', (e) => (screen += e.data));
    const { session } = await client.request('exec.open', { workspace: alpha.id, argv: ['/bin/bash', '--norc', '-i'], cols: 80, rows: 24 });
    const waitFor = async (text: string) => {
      for (let i = 0; i < 100 && !screen.includes(text); i++) await new Promise((r) => setTimeout(r, 100));
      expect(screen).toContain(text);
    };
    await client.request('exec.write', { session, data: 'tty; echo $((6*7))-answer\r' });
    await waitFor('42-answer');
    expect(screen).toMatch(/\/dev\/pts\/\d+/);
    await client.request('exec.write', { session, data: 'stty size\r' });
    await waitFor('24 80');
    await client.request('exec.resize', { session, cols: 120, rows: 50 });
    await client.request('exec.write', { session, data: 'stty size\r' });
    await waitFor('50 120');
    await client.request('exec.write', { session, data: 'exit 5\r' });
    expect(await exit).toBe(5);
  });
});

describe('stop, start and delete', () => {
  it('keeps files across stop/start and leaves nothing behind after delete', async () => {
    const client = await connect();
    const t = instance();
    let ws = await createWorkspace(client, 'gamma');
    const pidNs = await pidNamespaceOf(ws.pid!);
    try {
      const netns = `grove-${t.instance}-${ws.id}`;
      const rootfs = `${t.stateDir}/pool/workspaces/${ws.id}`;
      expect(await netnsNames()).toContain(netns);
      await sh(client, ws, 'echo kept > /root/kept.txt');

      const desktop = vncSocket(ws);
      ws = await client.request('workspace.stop', { workspace: ws.id });
      expect(ws.state).toBe('stopped');
      expect(ws.ports).toEqual([]);
      expect(ws.vncSocket).toBeNull();
      await expect(access(desktop)).rejects.toThrow();
      expect(await netnsNames()).not.toContain(netns);
      expect(await processesInPidNs(pidNs)).toEqual([]);

      ws = await track(await client.request('workspace.start', { workspace: ws.id }));
      const restartedPidNs = await pidNamespaceOf(ws.pid!);
      expect(ws.state).toBe('running');
      expect(vncSocket(ws)).toBe(desktop);
      expect(await sh(client, ws, 'cat /root/kept.txt')).toBe('kept\n');

      await client.request('workspace.delete', { workspace: ws.id });
      expect(await netnsNames()).not.toContain(netns);
      expect((await linkNames()).filter((l) => l.startsWith(`gv${t.instance}${ws.id}`))).toEqual([]);
      expect(await processesInPidNs(restartedPidNs)).toEqual([]);
      await expect(access(rootfs)).rejects.toThrow();
      await expect(client.request('workspace.get', { workspace: ws.id })).rejects.toMatchObject({ code: 'E_NOT_FOUND' });
    } finally {
      await client.request('workspace.delete', { workspace: ws.id }).catch(() => undefined);
      client.close();
    }
  });
});
