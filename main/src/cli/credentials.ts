// A registry's credentials from the caller's own auth.json, as the container
// tools keep them (containers-auth.json(5): `skopeo login`, `podman login`,
// `docker login`). The CLI runs as the caller, so it reads the caller's file
// and sends the helper only the entry for the registry a pull or push names.
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GroveError } from '../helper-client/client.js';
import { registryOf } from '../../../privileged-helper/src/protocol/image-refs.js';

export interface Credentials {
  username: string;
  password: string;
}

/** Where the container tools look for credentials, in their order. */
export function authFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const uid = process.getuid?.() ?? 0;
  const home = env.HOME ?? os.homedir();
  return [
    env.REGISTRY_AUTH_FILE,
    env.XDG_RUNTIME_DIR ? path.join(env.XDG_RUNTIME_DIR, 'containers/auth.json') : `/run/containers/${uid}/auth.json`,
    path.join(env.XDG_CONFIG_HOME ?? path.join(home, '.config'), 'containers/auth.json'),
    path.join(home, '.docker/config.json'),
  ].filter((f): f is string => typeof f === 'string' && f !== '');
}

/**
 * The credentials for the registry `ref` names from `authFile` (or the first
 * standard file that has an entry for it); undefined when none has.
 */
export function credentialsFor(ref: string, authFile?: string): Credentials | undefined {
  const registry = registryOf(ref);
  if (!registry) return undefined;
  for (const file of authFile ? [authFile] : authFiles()) {
    const entry = readAuths(file, authFile !== undefined)[registry];
    if (entry?.auth) {
      const decoded = Buffer.from(entry.auth, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
    }
  }
  return undefined;
}

function readAuths(file: string, mustExist: boolean): Record<string, { auth?: string }> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (mustExist) throw new GroveError('E_INVALID_PARAMS', `cannot read the auth file ${file}: ${(err as Error).message}`);
    return {};
  }
  try {
    return (JSON.parse(text) as { auths?: Record<string, { auth?: string }> }).auths ?? {};
  } catch {
    throw new GroveError('E_INVALID_PARAMS', `${file} is not valid JSON`);
  }
}
