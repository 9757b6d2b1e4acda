// The helper's Unix sockets. Two of them, and the kernel guards both:
//   person socket  root:grove       0660 in a root:grove 0750 directory
//   agent socket   root:grove-agent 0660 in a root:grove-agent 0750 directory
// connect(2) fails with EACCES for anyone outside the socket's group (clients
// turn that into a clear message). Behind that, every accepted connection's
// peer credentials (SO_PEERCRED, SO_PEERGROUPS) decide its identity and role;
// a peer that fails that check is told so and dropped before a line is read.
import { chmod, chown, mkdir, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { identify, type PeerCredentials, type RoleGroups } from '../auth/peer-identity.js';
import type { Role } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';
import { Connection } from './connection.js';
import type { Handlers, Services } from './handlers.js';

export interface SocketPlan {
  path: string;
  /** The role this socket gives (at most). */
  role: Role;
  /** The group that may connect. */
  gid: number;
}

export interface ListenDeps {
  services: Services;
  handlers: Handlers;
  groups: RoleGroups;
  credentials: (socket: net.Socket) => PeerCredentials;
  log: (msg: string) => void;
}

export async function listen(plan: SocketPlan, deps: ListenDeps): Promise<net.Server> {
  const dir = path.dirname(plan.path);
  await mkdir(dir, { recursive: true });
  await chown(dir, 0, plan.gid);
  await chmod(dir, 0o750);
  await removeStaleSocket(plan.path);
  const server = net.createServer((socket) => void accept(socket, plan, deps));
  // Created 0600 by a umask for the instant between bind and chmod.
  const previous = process.umask(0o177);
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(plan.path, () => resolve());
    });
  } finally {
    process.umask(previous);
  }
  await chown(plan.path, 0, plan.gid);
  await chmod(plan.path, 0o660);
  return server;
}

async function accept(socket: net.Socket, plan: SocketPlan, deps: ListenDeps): Promise<void> {
  socket.on('error', () => socket.destroy());
  try {
    const credentials = deps.credentials(socket);
    const actor = await identify(plan.role, credentials, deps.groups);
    if (!actor)
      throw new GroveError(
        'E_FORBIDDEN',
        `this ${plan.role} socket serves only ${plan.role === 'person' ? "root and the 'grove' group" : "the 'grove-agent' group"}`,
      );
    // A peer that went away while it was identified is not served: its close has
    // passed, so nothing would end what its buffered requests started.
    if (socket.destroyed) return;
    const account = { uid: credentials.uid, gids: [credentials.gid, ...credentials.groups] };
    new Connection(socket, actor, account, deps.services, deps.handlers, deps.log);
  } catch (err) {
    const body = err instanceof GroveError ? err.toBody() : { code: 'E_HOST', message: `cannot identify the peer: ${(err as Error).message}` };
    socket.end(`${JSON.stringify({ id: null, error: body })}\n`);
  }
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
