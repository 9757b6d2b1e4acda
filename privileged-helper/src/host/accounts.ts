// The host accounts Grove relies on: the groups whose members may use the
// helper's sockets, and the unprivileged user its egress gate runs as. Made
// on first start when the host's setup did not make them.
import { run } from './run.js';

export async function ensureGroup(group: string): Promise<number> {
  const lookup = await run('getent', ['group', group], { allowFailure: true });
  if (lookup.exitCode !== 0) await run('groupadd', ['--system', group]);
  const { stdout } = await run('getent', ['group', group]);
  return Number(stdout.split(':')[2]);
}

/** A system user with a group of its own, no home and no login shell. */
export async function ensureSystemUser(name: string): Promise<{ name: string; uid: number; gid: number }> {
  const lookup = await run('getent', ['passwd', name], { allowFailure: true });
  if (lookup.exitCode !== 0) {
    await run('useradd', ['--system', '--user-group', '--no-create-home', '--home-dir', '/nonexistent', '--shell', '/usr/sbin/nologin', name]);
  }
  const fields = (await run('getent', ['passwd', name])).stdout.split(':');
  const uid = Number(fields[2]);
  const gid = Number(fields[3]);
  if (uid === 0 || gid === 0) throw new Error(`user ${name} must not be root (uid ${uid}, gid ${gid})`);
  return { name, uid, gid };
}
