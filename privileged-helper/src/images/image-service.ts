// Every image a workspace can start from: Grove's desktop, built from its
// recipe (recipe-builder.ts), and images of one's own, built from a
// Containerfile or pulled from a registry or an archive into Grove's local OCI
// storage (host/oci-store.ts). Whatever its origin, an image that is ready
// has a read-only subvolume in the pool, its `lower`, that each of its
// branches reads unchanged files from; one of one's own is a snapshot of its
// top layer, sharing every block with the layers.
//
// What a caller names on the host (the Containerfile, the build context, an
// archive) is read as the caller and staged under the pool first
// (host/caller-files.ts). A pulled image is fetched whole before anything is
// unpacked, and what its layers unpack to is measured first
// (unpacked-size.ts): an image that would not fit is refused with
// E_NO_SPACE, and nothing of it is left.
import { mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Caller } from '../host/as-caller.js';
import * as btrfs from '../host/btrfs.js';
import { callerPath, stageFromCaller, type CallerPath } from '../host/caller-files.js';
import type { Credentials, OciStore } from '../host/oci-store.js';
import type { PoolLayout } from '../host/pool.js';
import { MiB, mib, spaceAt } from '../host/space.js';
import type { Image } from '../protocol/entities.js';
import { archivePathOf } from '../protocol/image-refs.js';
import { DESKTOP_IMAGE } from '../protocol/names.js';
import { GroveError } from '../protocol/wire.js';
import type { ImageRecord, Registry } from '../registry/registry.js';
import { undoAfter } from '../undo.js';
import { howToAddDesktop, missingForDesktop } from './desktop-check.js';
import { diskUsage, type ProgressFn, type RecipeBuilder } from './recipe-builder.js';
import { unpackedBytes } from './unpacked-size.js';

/** What an unpack must leave free in the pool beside the image: room for its own bookkeeping and the branches' first writes. */
const UNPACK_MARGIN_BYTES = 512 * MiB;
/** A Containerfile is text; one bigger than this is not read for its FROM lines. */
const MAX_CONTAINERFILE_BYTES = 1 << 20;

export interface BuildParams {
  name: string;
  rebuild?: boolean;
  containerfile?: string;
  context?: string;
  buildArgs?: Record<string, string>;
}

export interface ImageServiceDeps {
  registry: Registry;
  pool: PoolLayout;
  recipes: RecipeBuilder;
  store: OciStore;
  /** Image subvolumes that branches or versions read from: never removed. */
  lowersInUse: () => Promise<Set<string>>;
}

export class ImageService {
  /** Images being built, pulled or removed: one operation per name at a time. */
  private readonly busy = new Set<string>();

  constructor(private readonly d: ImageServiceDeps) {}

  list(): Image[] {
    const records = this.d.registry.listImages();
    const names = new Set(records.map((r) => r.name));
    const all = names.has(DESKTOP_IMAGE) ? records : [absent(DESKTOP_IMAGE), ...records];
    return all.map((r) => this.view(r, all));
  }

  get(name: string): Image {
    const all = this.d.registry.listImages();
    const record = all.find((r) => r.name === name) ?? (name === DESKTOP_IMAGE ? absent(name) : null);
    if (!record)
      throw new GroveError(
        'E_NOT_FOUND',
        `no image '${name}': build it (grove image build ${name} -f Containerfile) or pull it (grove image pull ${name} REF)`,
      );
    return this.view(record, all);
  }

  /** The lower a new workspace of the image reads from; a clear error if it is not ready or is no desktop. */
  readyLower(name: string): string {
    const img = this.d.registry.getImage(name);
    if (!img || img.state !== 'ready' || !img.lower) {
      const how = name === DESKTOP_IMAGE ? `grove image build ${name}` : `grove image build ${name} -f Containerfile, or grove image pull ${name} REF`;
      throw new GroveError('E_PRECONDITION', `image '${name}' is not ready: ${how}`);
    }
    if (img.missing.length > 0) {
      throw new GroveError('E_PRECONDITION', `image '${name}' has no desktop session: it lacks ${img.missing.join(', ')}; ${howToAddDesktop(name)}`);
    }
    return img.lower;
  }

  /** After a helper restart: what an interrupted build or pull left (working containers, staged files) goes. */
  async reconcile(log: (msg: string) => void): Promise<void> {
    await this.d.store.removeWorkingContainers();
    for (const entry of await readdir(this.d.pool.incoming)) {
      log(`removing what an interrupted image operation left: ${entry}`);
      await rm(path.join(this.d.pool.incoming, entry), { recursive: true, force: true });
    }
  }

  /** Grove's desktop from its recipe, or an image from a Containerfile (read as the caller). */
  async build(p: BuildParams, caller: Caller, progress: ProgressFn): Promise<Image> {
    if (p.containerfile === undefined && p.context !== undefined) throw new GroveError('E_INVALID_PARAMS', 'a build context goes with a Containerfile (-f)');
    if (p.containerfile === undefined && p.buildArgs !== undefined) throw new GroveError('E_INVALID_PARAMS', 'build arguments go with a Containerfile (-f)');
    if (p.containerfile === undefined) {
      if (p.name !== DESKTOP_IMAGE) throw new GroveError('E_INVALID_PARAMS', `'${p.name}' needs a Containerfile: grove image build ${p.name} -f Containerfile`);
      await this.exclusively(p.name, () => this.buildRecipe(p.name, p.rebuild ?? false, progress));
      return this.get(p.name);
    }
    refuseDesktopName(p.name);
    const containerfile = p.containerfile;
    await this.exclusively(p.name, () => this.buildContainerfile(p.name, { ...p, containerfile }, caller, progress));
    return this.get(p.name);
  }

  /** An image from a registry (docker://…) or an archive or layout on the host (read as the caller). */
  async pull(p: { name: string; ref: string; credentials?: Credentials }, caller: Caller, progress: ProgressFn): Promise<Image> {
    refuseDesktopName(p.name);
    await this.exclusively(p.name, () =>
      this.inIncoming(`pull-${p.name}`, async (job) => {
        const archive = archivePathOf(p.ref);
        const source = archive
          ? `${archive.transport}:${await stageFromCaller(caller, await this.callerFile(caller, archive.path, archive.transport === 'oci' ? 'directory' : 'file'), job)}`
          : p.ref;
        progress('fetch', `fetching ${p.ref}`);
        const layout = path.join(job, 'layout');
        await this.d.store
          .fetch(source, layout, p.credentials, (line) => progress('fetch', line))
          .catch((err: unknown) => {
            throw explainFetchFailure(p.ref, err);
          });
        await this.requireRoomToUnpack(layout, p.name, progress);
        progress('unpack', 'unpacking the layers into the pool');
        await this.d.store
          .unpack(layout, this.d.store.reference(p.name), (line) => progress('unpack', line))
          .catch((err: unknown) => {
            throw unpackRefused(p.name, err);
          });
        await this.adopt(p.name, 'pull', p.ref, progress);
      }),
    );
    return this.get(p.name);
  }

  /** Pushes an image to a registry; resolves with the digest the registry has. */
  async push(p: { name: string; ref: string; credentials?: Credentials }, progress: ProgressFn): Promise<{ ref: string; digest: string }> {
    const reference = await this.referenceOf(p.name, progress);
    progress('push', `pushing ${p.name} to ${p.ref}`);
    const digest = await this.d.store
      .push(reference, p.ref, p.credentials, path.join(this.d.pool.incoming, `push-${p.name}-${Date.now()}.digest`))
      .catch((err: unknown) => {
        throw explainFetchFailure(p.ref, err);
      });
    progress('done', `pushed ${p.name} to ${p.ref} (${digest})`);
    return { ref: p.ref, digest };
  }

  /** Removes an image of one's own; refused while a branch or a version reads from it. */
  async remove(name: string): Promise<void> {
    if (name === DESKTOP_IMAGE) throw new GroveError('E_INVALID_PARAMS', `'${DESKTOP_IMAGE}' is Grove's own image: it stays while the pool does`);
    await this.exclusively(name, async () => {
      const img = this.d.registry.getImage(name);
      if (!img) throw new GroveError('E_NOT_FOUND', `no image '${name}'`);
      const users = this.d.registry.listWorkspaces().filter((w) => w.image === name);
      if (users.length > 0) throw new GroveError('E_CONFLICT', `image '${name}' is used by ${users.map((w) => `'${w.name}'`).join(', ')}: discard those first`);
      const inUse = await this.d.lowersInUse();
      if (img.lower && inUse.has(img.lower)) throw new GroveError('E_CONFLICT', `image '${name}' is used by versions: delete them first (grove versions)`);
      this.d.registry.deleteImage(name);
      await this.d.store.remove(this.d.store.reference(name));
      await this.removeLowers(name, null);
    });
  }

  /**
   * Grove's desktop as `grove/desktop` in the local OCI storage, for a
   * Containerfile to start FROM: made once per desktop build (a reflink copy
   * of its files, committed by buildah), then reused.
   */
  async referenceOf(name: string, progress: ProgressFn): Promise<string> {
    const img = this.d.registry.getImage(name);
    if (!img || img.state !== 'ready' || !img.lower) throw new GroveError('E_PRECONDITION', `image '${name}' is not ready`);
    if (img.reference && (await this.d.store.inspect(img.reference))) return img.reference;
    const reference = this.d.store.reference(name);
    progress('export', `making ${reference} from the ${name} image (once per build of it)`);
    await this.d.store.importFiles(img.lower, reference);
    const stored = await this.d.store.inspect(reference);
    this.d.registry.putImage({ ...img, reference, digest: stored?.digest ?? null, layers: stored?.layers ?? [] });
    return reference;
  }

  private async buildRecipe(name: string, rebuild: boolean, progress: ProgressFn): Promise<void> {
    const current = this.d.registry.getImage(name);
    try {
      const built = await this.d.recipes.build(name, current, { rebuild }, progress);
      const changed = built.id !== current?.id;
      // A new build of the desktop is a new grove/desktop too: made again when a Containerfile needs it.
      this.d.registry.putImage(
        changed
          ? { ...built, reference: null }
          : { ...built, reference: current?.reference ?? null, digest: current?.digest ?? null, layers: current?.layers ?? [] },
      );
      progress('done', `image '${name}' is ready`);
    } catch (err) {
      this.d.registry.putImage({ ...(this.d.registry.getImage(name) ?? absent(name)), state: 'failed' });
      throw err;
    }
  }

  private async buildContainerfile(name: string, p: BuildParams & { containerfile: string }, caller: Caller, progress: ProgressFn): Promise<void> {
    const containerfile = await this.callerFile(caller, p.containerfile, 'file');
    const context = await this.callerFile(caller, p.context ?? path.dirname(containerfile.real), 'directory');
    return this.inIncoming(`build-${name}`, async (job) => {
      progress('context', `copying the build context ${context.real}`);
      await mkdir(path.join(job, 'context'));
      await mkdir(path.join(job, 'file'));
      const stagedContext = await stageFromCaller(caller, context, path.join(job, 'context'));
      const stagedFile = await stageFromCaller(caller, containerfile, path.join(job, 'file'));
      if (await startsFromDesktop(stagedFile)) await this.referenceOf(DESKTOP_IMAGE, progress);
      progress('build', `building ${name} from ${containerfile.real}`);
      await this.d.store.build({
        containerfile: stagedFile,
        context: stagedContext,
        reference: this.d.store.reference(name),
        buildArgs: p.buildArgs ?? {},
        onLine: (line) => progress('build', line),
      });
      await this.adopt(name, 'containerfile', containerfile.real, progress);
    });
  }

  /**
   * Takes the image now in the storage as `name`: a read-only snapshot of its
   * files becomes its lower, what it lacks as a desktop is noted, and older
   * lowers of the name that nothing reads go.
   */
  private async adopt(name: string, origin: ImageRecord['origin'], source: string, progress: ProgressFn): Promise<void> {
    progress('adopt', `taking ${name}'s files from the storage`);
    const reference = this.d.store.reference(name);
    const stored = await this.d.store.inspect(reference);
    if (!stored) throw new GroveError('E_HOST', `${reference} is not in the storage after it was made`);
    const lower = path.join(this.d.pool.images, `${name}-${stored.id.slice(0, 16)}`);
    const fresh = !(await btrfs.isSubvolume(lower));
    if (fresh) await this.d.store.snapshotFiles(reference, lower);
    try {
      const missing = await missingForDesktop(lower);
      this.d.registry.putImage({
        name,
        state: 'ready',
        origin,
        source,
        reference,
        id: stored.id,
        digest: stored.digest,
        layers: stored.layers,
        builtAt: new Date().toISOString(),
        sizeBytes: await diskUsage(lower),
        lower,
        missing,
      });
    } catch (err) {
      throw await undoAfter(err, [() => (fresh ? btrfs.deleteSubvolume(lower) : undefined)]);
    }
    await this.removeLowers(name, lower);
    progress('done', missingWords(name, this.d.registry.getImage(name)!));
  }

  /** E_NO_SPACE, with the numbers, when the fetched layers would not fit in the pool unpacked. */
  private async requireRoomToUnpack(layout: string, name: string, progress: ProgressFn): Promise<void> {
    const room = (await spaceAt(this.d.pool.root)).freeBytes - UNPACK_MARGIN_BYTES;
    progress('check', 'measuring what the layers unpack to');
    const bytes = await unpackedBytes(layout, Math.max(0, room));
    if (bytes > room) {
      throw new GroveError(
        'E_NO_SPACE',
        `image '${name}' unpacks to more than ${mib(Math.max(0, room))} MiB, and the pool has ${mib(room + UNPACK_MARGIN_BYTES)} MiB free: nothing was unpacked`,
      );
    }
  }

  /** The caller's file or folder, as they see it; a clear error if it is the other kind. */
  private async callerFile(caller: Caller, p: string, kind: CallerPath['kind']): Promise<CallerPath> {
    const found = await callerPath(caller, p);
    if (found.kind !== kind)
      throw new GroveError('E_INVALID_PARAMS', `${p} is a ${found.kind === 'file' ? 'file' : 'folder'}, not a ${kind === 'file' ? 'file' : 'folder'}`);
    return found;
  }

  /** Lowers of `name` other than `keep` that no branch or version reads. */
  private async removeLowers(name: string, keep: string | null): Promise<void> {
    const inUse = await this.d.lowersInUse();
    for (const entry of await readdir(this.d.pool.images)) {
      const sub = path.join(this.d.pool.images, entry);
      if (entry.startsWith(`${name}-`) && /^[0-9a-f]{16}$/.test(entry.slice(name.length + 1)) && sub !== keep && !inUse.has(sub))
        await btrfs.deleteSubvolume(sub);
    }
  }

  /** A folder of its own under the pool's incoming space for the operation, removed however it ends. */
  private async inIncoming<T>(prefix: string, work: (dir: string) => Promise<T>): Promise<T> {
    const dir = await mkdtemp(path.join(this.d.pool.incoming, `${prefix}-`));
    try {
      return await work(dir);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }

  private async exclusively<T>(name: string, work: () => Promise<T>): Promise<T> {
    if (this.busy.has(name)) throw new GroveError('E_BUSY', `image '${name}' is being built, pulled or removed already`);
    this.busy.add(name);
    try {
      return await work();
    } finally {
      this.busy.delete(name);
    }
  }

  private view(r: ImageRecord, all: readonly ImageRecord[]): Image {
    const elsewhere = new Set(all.filter((o) => o.name !== r.name).flatMap((o) => o.layers.map((l) => l.diffId)));
    return {
      name: r.name,
      state: this.busy.has(r.name) ? 'building' : r.state,
      origin: r.origin,
      source: r.source,
      reference: r.reference,
      id: r.id,
      digest: r.digest,
      layers: r.origin === 'recipe' ? 1 : r.layers.length,
      builtAt: r.builtAt,
      sizeBytes: r.sizeBytes,
      sharedBytes: r.layers.length === 0 ? null : r.layers.filter((l) => elsewhere.has(l.diffId)).reduce((sum, l) => sum + l.size, 0),
      missing: r.missing,
    };
  }
}

function absent(name: string): ImageRecord {
  return {
    name,
    state: 'absent',
    origin: 'recipe',
    source: null,
    reference: null,
    id: null,
    digest: null,
    layers: [],
    builtAt: null,
    sizeBytes: null,
    lower: null,
    missing: [],
  };
}

function refuseDesktopName(name: string): void {
  if (name === DESKTOP_IMAGE)
    throw new GroveError(
      'E_INVALID_PARAMS',
      `'${DESKTOP_IMAGE}' is Grove's own image, built from its recipe: give yours another name (FROM grove/desktop starts from it)`,
    );
}

/** Whether any FROM line of the Containerfile names Grove's desktop. */
async function startsFromDesktop(containerfile: string): Promise<boolean> {
  const text = await readFile(containerfile, 'utf8');
  if (text.length > MAX_CONTAINERFILE_BYTES) throw new GroveError('E_INVALID_PARAMS', `the Containerfile is over ${MAX_CONTAINERFILE_BYTES} bytes`);
  return /^\s*FROM\s+(?:--\S+\s+)*(?:localhost\/)?grove\/desktop(?::latest)?(?:\s|$)/im.test(text);
}

/** The last progress line of an image taken in: ready, or ready but not as a desktop, and why. */
function missingWords(name: string, img: ImageRecord): string {
  if (img.missing.length === 0) return `image '${name}' is ready`;
  return `image '${name}' is stored, but a workspace cannot start from it: it lacks ${img.missing.join(', ')}; ${howToAddDesktop(name)}`;
}

/**
 * A layer containers-storage would not unpack (a link or a hard link it
 * could not make inside the image, a name it could not place): the image is
 * refused, and the storage keeps nothing of it.
 */
function unpackRefused(name: string, err: unknown): unknown {
  if (!(err instanceof GroveError)) return err;
  const said = /ApplyLayer[^:]*:\s*(?:stdout:\s*)?(?:stderr:\s*)?([^"]*?)(?:\s*exit status \d+)?"/.exec(err.message)?.[1]?.trim();
  return new GroveError(
    'E_INVALID_PARAMS',
    `image '${name}' was refused: a layer could not be unpacked inside the image (${said || err.message}); nothing of it was kept`,
  );
}

/** A failed fetch or push in words a person can act on (skopeo's own last line kept). */
function explainFetchFailure(ref: string, err: unknown): unknown {
  if (!(err instanceof GroveError)) return err;
  const m = err.message;
  // A status code only as a word of its own: the message also holds the registry's port and digests.
  const hint = /unauthorized|authentication required|\b401\b/i.test(m)
    ? 'the registry refused the credentials (grove takes them from your auth.json: skopeo login, or --authfile)'
    : /manifest unknown|not found|name unknown|\b404\b/i.test(m)
      ? 'the registry has no such image or tag'
      : /digest|does not match/i.test(m)
        ? 'what the registry sent does not match the digest asked for: refused'
        : /no such host|connection refused|dial tcp|lookup|certificate|x509|tls/i.test(m)
          ? 'the registry could not be reached securely (its address, or its TLS certificate: /etc/containers/certs.d/HOST:PORT/ca.crt)'
          : null;
  return hint ? new GroveError(err.code, `${ref}: ${hint} (${m})`) : err;
}
