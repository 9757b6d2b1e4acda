// Where an image comes from or goes to, as clients name it: skopeo's
// transports, restricted to those Grove takes. Shared by the helper and the
// CLI (which finds the caller's credentials for a reference's registry).
import { z } from 'zod';

export const ImageRef = z
  .string()
  .max(2048)
  .regex(
    /^(docker:\/\/[^\s/][^\s]*|(oci-archive|docker-archive|oci):\/[^\s]*)$/,
    'an image reference is docker://HOST/REPO[:TAG|@sha256:…], oci-archive:/PATH, docker-archive:/PATH or oci:/DIR',
  )
  .refine((s) => !s.includes('\0'), 'NUL in a reference');

/** Where a push may go: a registry only (an archive would be a file the helper writes on the host as root). */
export const RegistryRef = ImageRef.refine((s) => s.startsWith('docker://'), 'an image is pushed to a registry: docker://HOST/REPO[:TAG]');

/** The registry a docker:// reference names (docker.io for a bare repository); null for an archive or a folder. */
export function registryOf(ref: string): string | null {
  if (!ref.startsWith('docker://')) return null;
  const rest = ref.slice('docker://'.length);
  const first = rest.split('/')[0]!;
  return rest.includes('/') && (/[.:]/.test(first) || first === 'localhost') ? first : 'docker.io';
}

/** The host path of an archive or folder reference (read as the caller); null for a registry. */
export function archivePathOf(ref: string): { transport: 'oci-archive' | 'docker-archive' | 'oci'; path: string } | null {
  const m = /^(oci-archive|docker-archive|oci):(\/.*)$/.exec(ref);
  return m ? { transport: m[1] as 'oci-archive' | 'docker-archive' | 'oci', path: m[2]! } : null;
}
