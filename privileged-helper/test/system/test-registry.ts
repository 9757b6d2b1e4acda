// A real OCI registry for the image tests: Debian's docker-registry
// (distribution 2.8) on loopback, with TLS from a certificate authority made
// here and basic auth, as a private registry people pull from. The helper
// trusts it the standard way, through /etc/containers/certs.d/HOST:PORT/.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import https from 'node:https';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { execa } from 'execa';

export interface TestRegistry {
  /** 127.0.0.1:PORT */
  host: string;
  username: string;
  password: string;
  /** An auth.json holding the registry's credentials, as `skopeo login` writes it. */
  authFile: string;
  /** An auth.json with a wrong password. */
  wrongAuthFile: string;
  stop(): Promise<void>;
}

const CERTS_D = '/etc/containers/certs.d';

export async function startRegistry(): Promise<TestRegistry> {
  const dir = await mkdtemp('/var/tmp/grove-registry-');
  const port = await freePort();
  const host = `127.0.0.1:${port}`;
  const username = 'grove';
  const password = `pw-${Math.random().toString(36).slice(2)}`;
  const certsDir = path.join(CERTS_D, host);
  let server: ChildProcess | null = null;
  const stop = async () => {
    if (server && server.exitCode === null) {
      server.kill('SIGKILL');
      await once(server, 'exit');
    }
    await rm(certsDir, { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  };
  try {
    await makeCertificates(dir);
    await writeFile(path.join(dir, 'htpasswd'), (await execa('htpasswd', ['-nbB', username, password])).stdout);
    await writeFile(path.join(dir, 'config.yml'), registryConfig(dir, host));
    server = spawn('docker-registry', ['serve', path.join(dir, 'config.yml')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let said = '';
    server.stderr!.on('data', (d: Buffer) => (said = (said + d.toString()).slice(-4000)));
    await mkdir(certsDir, { recursive: true });
    await writeFile(path.join(certsDir, 'ca.crt'), await readFile(path.join(dir, 'ca.crt'), 'utf8'));
    await waitServing(port, path.join(dir, 'ca.crt'), () => said);
    const auth = (p: string) => JSON.stringify({ auths: { [host]: { auth: Buffer.from(`${username}:${p}`).toString('base64') } } });
    const authFile = path.join(dir, 'auth.json');
    const wrongAuthFile = path.join(dir, 'wrong-auth.json');
    await writeFile(authFile, auth(password), { mode: 0o600 });
    await writeFile(wrongAuthFile, auth('not-the-password'), { mode: 0o600 });
    return { host, username, password, authFile, wrongAuthFile, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

function registryConfig(dir: string, host: string): string {
  return [
    'version: 0.1',
    'log:',
    '  level: warn',
    'storage:',
    '  filesystem:',
    `    rootdirectory: ${dir}/data`,
    '  delete:',
    '    enabled: true',
    'http:',
    `  addr: ${host}`,
    '  tls:',
    `    certificate: ${dir}/server.crt`,
    `    key: ${dir}/server.key`,
    'auth:',
    '  htpasswd:',
    '    realm: grove-test',
    `    path: ${dir}/htpasswd`,
    '',
  ].join('\n');
}

/** A CA, and a server certificate it signed for 127.0.0.1. */
async function makeCertificates(dir: string): Promise<void> {
  const f = (n: string) => path.join(dir, n);
  await execa('openssl', [
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-days',
    '2',
    '-subj',
    '/CN=grove-test-ca',
    '-keyout',
    f('ca.key'),
    '-out',
    f('ca.crt'),
  ]);
  await execa('openssl', ['req', '-newkey', 'rsa:2048', '-nodes', '-subj', '/CN=127.0.0.1', '-keyout', f('server.key'), '-out', f('server.csr')]);
  await writeFile(f('san.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  await execa('openssl', [
    'x509',
    '-req',
    '-in',
    f('server.csr'),
    '-CA',
    f('ca.crt'),
    '-CAkey',
    f('ca.key'),
    '-CAcreateserial',
    '-days',
    '2',
    '-extfile',
    f('san.cnf'),
    '-out',
    f('server.crt'),
  ]);
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as net.AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Until the registry answers /v2/ over TLS (401 without credentials: it is up). */
async function waitServing(port: number, caFile: string, said: () => string): Promise<void> {
  const ca = await readFile(caFile, 'utf8');
  for (let i = 0; i < 100; i++) {
    const status = await new Promise<number | null>((resolve) => {
      const req = https.get({ host: '127.0.0.1', port, path: '/v2/', ca, timeout: 2000 }, (res) => {
        res.resume();
        resolve(res.statusCode ?? null);
      });
      req.on('error', () => resolve(null));
      req.on('timeout', () => req.destroy());
    });
    if (status === 401) return;
    await sleep(100);
  }
  throw new Error(`the test registry did not answer on ${port}: ${said()}`);
}
