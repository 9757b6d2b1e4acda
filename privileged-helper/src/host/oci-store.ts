// Grove's local OCI storage: containers-storage with its btrfs driver inside
// the pool, so every layer is a read-only subvolume snapshotted from the one
// below it (as Podman's btrfs driver keeps them): images that share a base
// share its blocks, and a pulled layer is unpacked once. buildah builds into
// it, skopeo copies in and out of it; the helper never parses a layer itself.
//
// RUN steps of a build run in buildah's chroot isolation, as root, without
// the capabilities to leave the chroot or make devices (BUILD_CAPS_DROPPED).
// Not in a user namespace of their own: containers-storage gives such a build
// an ownership-shifted copy of its base (a whole copy of grove/desktop per
// step, left in the storage afterwards). Building is a person's, and a person
// who may build is trusted as Docker trusts its docker group.
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GroveError } from '../protocol/wire.js';
import { registryOf } from '../protocol/image-refs.js';
import { snapshot } from './btrfs.js';
import { run } from './run.js';

/** What a build's RUN steps never get: leaving the chroot, devices, raw packets, file capabilities, the kernel's audit and modules. */
const BUILD_CAPS_DROPPED = [
  'CAP_SYS_CHROOT',
  'CAP_MKNOD',
  'CAP_NET_RAW',
  'CAP_SETFCAP',
  'CAP_AUDIT_WRITE',
  'CAP_SYS_ADMIN',
  'CAP_SYS_MODULE',
  'CAP_SYS_PTRACE',
];

const BUILD_TIMEOUT_MS = 60 * 60_000;
const COPY_TIMEOUT_MS = 30 * 60_000;

export interface OciStoreLayout {
  /** containers-storage's graph root: a folder of the pool (btrfs). */
  graphRoot: string;
  /** Its run root: lock files and the like, on the run dir's tmpfs. */
  runRoot: string;
}

/** One layer of a stored image: its diff id and size as stored. */
export interface ImageLayer {
  diffId: string;
  size: number;
}

export interface StoredImage {
  /** The image's id (the digest of its config, without "sha256:"). */
  id: string;
  /** The digest of its manifest. */
  digest: string;
  layers: ImageLayer[];
}

/** A registry's user and password, for one copy. */
export interface Credentials {
  username: string;
  password: string;
}

export class OciStore {
  constructor(private readonly layout: OciStoreLayout) {}

  /** What Grove calls image NAME in its storage: a Containerfile may start FROM grove/NAME. */
  reference(name: string): string {
    return `localhost/grove/${name}:latest`;
  }

  /** Builds `containerfile` in `context` (a copy of the caller's folder) into `reference`; each line of buildah's output goes to onLine. */
  async build(o: {
    containerfile: string;
    context: string;
    reference: string;
    buildArgs: Record<string, string>;
    onLine: (line: string) => void;
  }): Promise<void> {
    await this.buildah(
      [
        'build',
        '--isolation',
        'chroot',
        ...BUILD_CAPS_DROPPED.flatMap((c) => ['--cap-drop', c]),
        '--layers',
        '--format',
        'oci',
        '--file',
        o.containerfile,
        '--tag',
        o.reference,
        ...Object.entries(o.buildArgs).flatMap(([k, v]) => ['--build-arg', `${k}=${v}`]),
        '--',
        o.context,
      ],
      { timeoutMs: BUILD_TIMEOUT_MS, onLine: o.onLine },
    );
  }

  /** Copies an image from `source` (a skopeo transport) to an OCI layout folder, as it is: nothing is unpacked. */
  async fetch(source: string, layoutDir: string, credentials: Credentials | undefined, onLine: (line: string) => void): Promise<void> {
    await this.withAuth(source, credentials, (auth) =>
      run('skopeo', ['copy', ...auth, '--', source, `oci:${layoutDir}:image`], { timeoutMs: COPY_TIMEOUT_MS, onLine }),
    );
  }

  /** Unpacks an OCI layout folder's image into the storage as `reference`: containers-storage writes each new layer into its own subvolume. */
  async unpack(layoutDir: string, reference: string, onLine: (line: string) => void): Promise<void> {
    await run('skopeo', ['copy', '--', `oci:${layoutDir}:image`, this.transport(reference)], { timeoutMs: COPY_TIMEOUT_MS, onLine });
  }

  /** Pushes `reference` to `target` (docker://…); resolves with the manifest digest the registry has. */
  async push(reference: string, target: string, credentials: Credentials | undefined, digestFile: string): Promise<string> {
    try {
      await this.withAuth(target, credentials, (auth) =>
        run('skopeo', ['copy', ...auth, '--digestfile', digestFile, '--', this.transport(reference), target], { timeoutMs: COPY_TIMEOUT_MS }),
      );
      return (await readFile(digestFile, 'utf8')).trim();
    } finally {
      await rm(digestFile, { force: true });
    }
  }

  /** The image's id, digest and layers (from buildah's own view of it); null when the storage has no such image. */
  async inspect(reference: string): Promise<StoredImage | null> {
    const res = await this.buildah(['inspect', '--type', 'image', '--', reference], { allowFailure: true });
    if (res.exitCode !== 0) return null;
    const info = JSON.parse(res.stdout) as { FromImageID: string; FromImageDigest: string; Manifest: string; OCIv1: { rootfs: { diff_ids: string[] } } };
    const manifest = JSON.parse(info.Manifest) as { layers: { size: number }[] };
    const diffIds = info.OCIv1.rootfs.diff_ids;
    return {
      id: info.FromImageID,
      digest: info.FromImageDigest,
      layers: diffIds.map((diffId, i) => ({ diffId, size: manifest.layers[i]?.size ?? 0 })),
    };
  }

  /**
   * A read-only snapshot of the image's files at `target`: the top layer is a
   * subvolume holding the whole tree (each layer is a snapshot of the one
   * below with its own changes), reached through a working container that
   * goes again at once. O(1), every block shared with the layers.
   */
  async snapshotFiles(reference: string, target: string): Promise<void> {
    const container = (await this.buildah(['from', '--pull-never', '--quiet', '--', reference])).stdout.trim();
    try {
      const files = (await this.buildah(['mount', '--', container])).stdout.trim();
      await snapshot(files, target, { readonly: true });
    } finally {
      await this.buildah(['rm', '--', container], { allowFailure: true });
    }
  }

  /**
   * Makes `reference` from a folder (Grove's desktop, built from its recipe):
   * a working container from scratch gets a reflink copy of the files, and
   * buildah commits it as a one-layer image.
   */
  async importFiles(rootfs: string, reference: string): Promise<void> {
    const container = (await this.buildah(['from', '--quiet', 'scratch'])).stdout.trim();
    try {
      const files = (await this.buildah(['mount', '--', container])).stdout.trim();
      await run('cp', ['-a', '--reflink=always', '--', `${rootfs}/.`, `${files}/`], { timeoutMs: COPY_TIMEOUT_MS });
      await this.buildah(['config', '--cmd', '/usr/local/lib/grove/session.sh', '--', container]);
      await this.buildah(['commit', '--quiet', '--format', 'oci', '--', container, reference], { timeoutMs: COPY_TIMEOUT_MS });
    } finally {
      await this.buildah(['rm', '--', container], { allowFailure: true });
    }
  }

  /** Removes the image's name; layers no other image uses go with it. */
  async remove(reference: string): Promise<void> {
    const res = await this.buildah(['rmi', '--', reference], { allowFailure: true });
    if (res.exitCode !== 0 && !/image not known|not found/i.test(res.stderr)) {
      throw new GroveError('E_HOST', `buildah rmi ${reference}: ${res.stderr.trim().split('\n').at(-1)}`);
    }
  }

  /** Working containers a helper that died left behind (every one of Grove's lives only inside one call). */
  async removeWorkingContainers(): Promise<void> {
    await this.buildah(['rm', '--all'], { allowFailure: true });
  }

  private transport(reference: string): string {
    return `containers-storage:[btrfs@${this.layout.graphRoot}+${this.layout.runRoot}]${reference}`;
  }

  private buildah(args: readonly string[], opts: Parameters<typeof run>[2] = {}) {
    return run('buildah', ['--storage-driver', 'btrfs', '--root', this.layout.graphRoot, '--runroot', this.layout.runRoot, ...args], opts);
  }

  /**
   * Runs `copy` with an auth file holding only `credentials`, for the
   * registry `ref` names (0600, in the run root, removed after): skopeo reads
   * it instead of the host's, and the password is on no command line.
   */
  private async withAuth<T>(ref: string, credentials: Credentials | undefined, copy: (auth: string[]) => Promise<T>): Promise<T> {
    if (!credentials) return copy([]);
    const registry = registryOf(ref);
    if (!registry) throw new GroveError('E_INVALID_PARAMS', `credentials are for a registry; ${ref} names none`);
    await mkdir(this.layout.runRoot, { recursive: true, mode: 0o700 });
    const file = path.join(this.layout.runRoot, `auth-${randomBytes(8).toString('hex')}.json`);
    const auth = Buffer.from(`${credentials.username}:${credentials.password}`).toString('base64');
    await writeFile(file, JSON.stringify({ auths: { [registry]: { auth } } }), { mode: 0o600 });
    try {
      return await copy(['--authfile', file]);
    } finally {
      await rm(file, { force: true });
    }
  }
}
