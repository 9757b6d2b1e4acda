// Where the helper's built tools are, apart from the rest of its configuration
// (config.ts): run() needs grove-spawn's path before, and without, the rest.
import path from 'node:path';

/** GROVE_CACHE: what build/host/setup.sh builds and downloads. */
export function cacheDirOf(env: NodeJS.ProcessEnv): string {
  return env.GROVE_CACHE ?? '/var/cache/grove';
}

/** native/grove-spawn.c, which starts the helper's programs (host/run.ts). */
export function groveSpawnPath(env: NodeJS.ProcessEnv): string {
  return env.GROVE_SPAWN ?? path.join(cacheDirOf(env), 'bin/grove-spawn');
}

/** native/inroot.c: opens a branch's files inside its root (host/in-root.ts). */
export function inrootAddonPath(env: NodeJS.ProcessEnv): string {
  return env.GROVE_INROOT ?? path.join(cacheDirOf(env), 'lib/inroot.node');
}
