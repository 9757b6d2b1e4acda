// Programs run on a client's behalf with the client's own credentials. What a
// person or an agent names on the host (a Containerfile, a build context, a
// project folder, an archive, where a copy goes) is read or written as they
// could themselves, never as the helper's root: a member of `grove` naming
// /etc/shadow gets EACCES, as with cat. A root caller keeps root's reach but
// not CAP_MKNOD, so nothing it writes from a branch's bytes becomes a device.
import { GroveError } from '../protocol/wire.js';
import { run } from './run.js';

const SETPRIV = '/usr/bin/setpriv';

/** Who a program runs as on a caller's behalf: their uid and their primary gid, and their groups from the host's databases. */
export interface Caller {
  uid: number;
}

/** argv that runs `argv` as `caller`. */
export async function asCaller(caller: Caller, argv: readonly string[]): Promise<[string, string[]]> {
  if (argv.length === 0) throw new Error('empty command');
  const drop = ['--inh-caps=-all', '--bounding-set=-mknod', '--no-new-privs'];
  if (caller.uid === 0) return [SETPRIV, [...drop, '--', ...argv]];
  const gid = (await passwdOf(caller.uid))?.gid ?? null;
  const groups = gid === null ? ['--regid', String(caller.uid), '--clear-groups'] : ['--regid', String(gid), '--init-groups'];
  return [SETPRIV, ['--reuid', String(caller.uid), ...groups, ...drop, '--', ...argv]];
}

/** The caller's home folder (where their tools' own settings are, e.g. git's), or / for a uid the host does not know. */
export async function callerHome(caller: Caller): Promise<string> {
  return (await passwdOf(caller.uid))?.home || '/';
}

/** The uid's entry in the passwd database: primary gid and home; null for a uid it does not know. */
async function passwdOf(uid: number): Promise<{ gid: number; home: string } | null> {
  if (!Number.isInteger(uid) || uid < 0) throw new GroveError('E_INTERNAL', `bad uid ${uid}`);
  const { stdout, exitCode } = await run('getent', ['passwd', String(uid)], { allowFailure: true });
  if (exitCode !== 0) return null;
  const fields = stdout.trim().split(':');
  const gid = Number(fields[3]);
  return Number.isInteger(gid) ? { gid, home: fields[5] ?? '/' } : null;
}
