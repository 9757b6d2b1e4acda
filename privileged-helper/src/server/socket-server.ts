// The helper's Unix socket. Access control is the kernel's: the socket is
// root:grove 0660 inside a root:grove 0750 directory, so connect(2) fails with
// EACCES for anyone who is neither root nor in the group (clients turn that
// into a clear message). Nobody else can even reach the protocol.
import { chmod, chown, mkdir, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { run } from '../host/run.js';
import { Connection } from './connection.js';
import { createHandlers, type Services } from './handlers.js';

export async function ensureGroup(group: string): Promise<number> {
  const lookup = await run('getent', ['group', group], { allowFailure: true });
  if (lookup.exitCode !== 0) await run('groupadd', ['--system', group]);
  const { stdout } = await run('getent', ['group', group]);
  return Number(stdout.split(':')[2]);
}

export async function listen(socketPath: string, gid: number, services: Services, log: (msg: string) => void): Promise<net.Server> {
  const dir = path.dirname(socketPath);
  await mkdir(dir, { recursive: true });
  await chown(dir, 0, gid);
  await chmod(dir, 0o750);
  await removeStaleSocket(socketPath);
  const handlers = createHandlers(services);
  const server = net.createServer((socket) => new Connection(socket, services, handlers, log));
  // Created 0600 by a umask for the instant between bind and chmod.
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(socketPath, () => resolve());
    });
  } finally {
    process.umask(previous);
  }
  await chown(socketPath, 0, gid);
  await chmod(socketPath, 0o660);
  return server;
}

async function removeStaleSocket(socketPath: string): Promise<void> {
  const exists = await stat(socketPath).then(
    () => true,
    () => false,
  );
  if (!exists) return;
  const alive = await new Promise<boolean>((resolve) => {
    const probe = net.connect(socketPath, () => {
      probe.destroy();
      resolve(true);
    });
    probe.on('error', () => resolve(false));
  });
  if (alive) throw new Error(`another helper is already listening on ${socketPath}`);
  await rm(socketPath, { force: true });
}
