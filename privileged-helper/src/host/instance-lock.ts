// One helper per instance. Two would reconcile the same registry and host
// objects at once, each undoing what the other is doing. The lock is an
// abstract Unix socket named after the instance: the kernel frees the name
// when the last file table holding it goes, so a helper killed at any instant
// releases it with no stale file to clean up, and not before every thread of
// it has ended (a killed helper's listening sockets live exactly as long).
// Node opens it close-on-exec: the helper's programs never inherit it.
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** How long a starting helper waits for one that is still ending (a SIGKILLed helper's threads take a moment to go). */
const WAIT_FOR_PREVIOUS_MS = 10_000;
const RETRY_MS = 50;

export function instanceLockName(instance: string): string {
  return `\0grove-helper/${instance}`;
}

/**
 * Holds the instance's lock until this process ends, waiting up to waitMs for
 * a previous helper to end; refuses with a clear error if one still runs.
 */
export async function holdInstanceLock(instance: string, waitMs = WAIT_FOR_PREVIOUS_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const taken = await tryBind(instanceLockName(instance));
    if (taken) return;
    if (Date.now() >= deadline) {
      throw new Error(`another helper of instance '${instance}' is running: stop it first (kill the pid in its pid file, or systemctl stop grove-helper)`);
    }
    await sleep(RETRY_MS);
  }
}

/** Binds the name, or says it is held. The server never accepts and never keeps the process alive. */
function tryBind(name: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const server = net.createServer((socket) => socket.destroy());
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
    server.listen(name, () => {
      server.unref();
      resolve(true);
    });
  });
}
