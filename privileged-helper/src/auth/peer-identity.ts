// A connection's identity, from the kernel: SO_PEERCRED and SO_PEERGROUPS of
// the accepted socket (native/peercred.c), the uid's user name and the
// process's name. Which socket the peer reached sets the highest role it can
// have: the person socket gives persons, the agent socket gives agents.
import { createRequire } from 'node:module';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import type net from 'node:net';
import { run } from '../host/run.js';
import type { Actor, Role } from '../protocol/identity.js';
import { GroveError } from '../protocol/wire.js';

export interface PeerCredentials {
  pid: number;
  uid: number;
  gid: number;
  groups: number[];
}

/** The gids that make a peer a person or an agent. */
export interface RoleGroups {
  person: number;
  agent: number;
}

type Addon = { peerCredentials(fd: number): PeerCredentials };

/** Loads the peer-credentials addon; the helper refuses to start without it. */
export function loadPeerCredentials(addonPath: string): (socket: net.Socket) => PeerCredentials {
  if (!existsSync(addonPath)) throw new Error(`${addonPath} is missing: run build/host/setup.sh (the helper reads its peers' credentials with it)`);
  const addon = createRequire(import.meta.url)(addonPath) as Addon;
  return (socket) => {
    const fd = (socket as unknown as { _handle?: { fd?: number } })._handle?.fd;
    if (typeof fd !== 'number' || fd < 0) throw new GroveError('E_HOST', 'the connection has no file descriptor to read credentials from');
    return addon.peerCredentials(fd);
  };
}

/**
 * The role a peer gets on a socket, or null when it may not use it. On the
 * person socket: root and members of the person group. On the agent socket:
 * root and members of either group, always as agents (a person may run an
 * agent under its own account; it is still only an agent there).
 */
export function roleOf(socketRole: Role, cred: PeerCredentials, groups: RoleGroups): Role | null {
  const member = (gid: number) => cred.gid === gid || cred.groups.includes(gid);
  if (socketRole === 'person') return cred.uid === 0 || member(groups.person) ? 'person' : null;
  return cred.uid === 0 || member(groups.agent) || member(groups.person) ? 'agent' : null;
}

const userNames = new Map<number, { name: string; at: number }>();
const NAME_TTL_MS = 60_000;

/** The user name of a uid through NSS (getent), cached for a minute; '#UID' when there is none. */
export async function userName(uid: number): Promise<string> {
  const cached = userNames.get(uid);
  if (cached && Date.now() - cached.at < NAME_TTL_MS) return cached.name;
  const res = await run('getent', ['passwd', String(uid)], { allowFailure: true });
  const name = res.exitCode === 0 && res.stdout.includes(':') ? res.stdout.split(':')[0]! : `#${uid}`;
  userNames.set(uid, { name, at: Date.now() });
  return name;
}

export async function identify(socketRole: Role, cred: PeerCredentials, groups: RoleGroups): Promise<Actor | null> {
  const role = roleOf(socketRole, cred, groups);
  if (role === null) return null;
  // The peer may have exited since it connected; its process name is only shown.
  const [user, comm] = await Promise.all([userName(cred.uid), readFile(`/proc/${cred.pid}/comm`, 'utf8').catch(() => '?\n')]);
  return { role, uid: cred.uid, user, pid: cred.pid, process: comm.trim(), client: '' };
}
