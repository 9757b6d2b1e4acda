// The ledger of host objects: each is recorded in the registry *before* it is
// made and forgotten only after it is gone, so whatever a crash interrupts can
// be found and removed on the next start. Removal runs in reverse order of
// creation and is idempotent (a missing object is already removed).
import { rm } from 'node:fs/promises';
import { deleteSubvolume } from '../host/btrfs.js';
import { removeCgroups, thawGroupOf } from '../host/cgroups.js';
import type { Crun } from '../host/crun.js';
import { removeHostTable } from '../host/host-firewall.js';
import { hasMountAtOrBelow, unmount } from '../host/mounts.js';
import { deleteNetns, deleteVeth } from '../host/netns.js';
import type { HostObject, Registry } from '../registry/registry.js';
import { GroveError } from '../protocol/wire.js';
import { isSameProcess, pidNamespace, signalIfSame, waitGone, waitPidNamespaceEmpty } from '../host/proc.js';

export function processObjectName(pid: number, start: number): string {
  return `${pid}:${start}`;
}

export class HostLedger {
  constructor(
    private readonly registry: Registry,
    private readonly crun: Crun,
  ) {}

  async make<T>(obj: HostObject, create: () => Promise<T>): Promise<T> {
    return this.makeAll([obj], create);
  }

  /** Several objects that one step makes (one program run makes them all), recorded in the order they are made. */
  async makeAll<T>(objs: readonly HostObject[], create: () => Promise<T>): Promise<T> {
    for (const obj of objs) this.registry.recordObject(obj);
    return create();
  }

  async remove(obj: HostObject): Promise<void> {
    await removeHostObject(obj, this.crun);
    this.registry.forgetObject(obj.kind, obj.name);
  }

  /** Removes every object an owner has (null: the instance's own), newest first. */
  async removeOwned(owner: string | null, kinds?: ReadonlyArray<HostObject['kind']>): Promise<void> {
    const owned = this.registry.objects({ owner }).filter((o) => !kinds || kinds.includes(o.kind));
    for (const obj of owned.reverse()) await this.remove(obj);
  }

  /** Objects whose owner the registry no longer knows, newest first (the order to remove them in). */
  orphans(knownOwners: ReadonlySet<string>): HostObject[] {
    // Newest first, as removeOwned: a version's files (a read-only subvolume) go before the directory holding them.
    return this.registry
      .objects()
      .filter((o) => o.owner !== null && !knownOwners.has(o.owner))
      .reverse();
  }
}

async function removeHostObject(obj: HostObject, crun: Crun): Promise<void> {
  switch (obj.kind) {
    case 'container':
      return crun.delete(obj.name);
    case 'netns':
      return deleteNetns(obj.name);
    case 'veth':
      return deleteVeth(obj.name);
    case 'subvolume':
      return deleteSubvolume(obj.name);
    case 'mount':
      return unmount(obj.name);
    case 'bundle':
    case 'directory':
      // Never recurse into a mounted file system (a branch's merged root, or one below it).
      if (await hasMountAtOrBelow(obj.name)) throw new GroveError('E_HOST', `refusing to remove ${obj.name}: something is still mounted there`);
      return rm(obj.name, { recursive: true, force: true });
    case 'process':
      return killProcess(obj.name);
    case 'cgroup':
      return removeCgroups(obj.name);
    case 'nft-table':
      return removeHostTable(obj.name);
  }
}

/** Kills a recorded process (and with it, if it is a pid namespace's init, the whole namespace). */
async function killProcess(name: string): Promise<void> {
  const [pid, start] = name.split(':').map(Number) as [number, number];
  const own = await pidNamespace(process.pid);
  const found = (await isSameProcess(pid, start)) ? await pidNamespace(pid) : null;
  const ns = found === own ? null : found; // only a branch's own namespace is waited for
  if (await signalIfSame(pid, start, 'SIGKILL')) await thawGroupOf(pid); // a standby's: frozen, it acts on the kill once thawed
  if (!(await waitGone(pid, start, 10_000))) throw new GroveError('E_HOST', `process ${pid} did not exit after SIGKILL`);
  if (ns && !(await waitPidNamespaceEmpty(ns, 10_000))) throw new GroveError('E_HOST', `processes of ${ns} outlived its init ${pid}`);
}
