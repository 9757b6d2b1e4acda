// Branch networks made ahead of time. A new branch (a fork's child, a new
// workspace) needs a network namespace with its veth pair and firewall, and
// its cgroups: several ip, nft and cgroup runs, on a fork's path before the
// source is frozen. The pool keeps a few sets ready, each made for the id and
// network slot the branch that takes it will have, and recorded in the ledger
// under that id. Until a branch takes one, no workspace has its id, so a
// helper that stops leaves them as orphans that start-up removes. The pool
// refills once nothing has taken from it for a moment, so its work does not
// compete with the fork that just took from it.

/** The identity a prepared set was made for: the branch that takes it gets both. */
export interface PreparedSlot {
  id: string;
  netIndex: number;
}

export interface PreparedPoolDeps {
  /** A fresh id and network slot, none of which a workspace or the pool holds. */
  allocate: () => PreparedSlot;
  /** Makes the set for a slot (recorded in the ledger under slot.id). */
  make: (slot: PreparedSlot) => Promise<void>;
  /** Removes whatever of a slot's set exists. */
  remove: (slot: PreparedSlot) => Promise<void>;
  log: (msg: string) => void;
}

/** How long nothing must have taken from the pool before it refills. */
const REFILL_AFTER_MS = 2000;

export class PreparedPool {
  private readonly ready: PreparedSlot[] = [];
  /** Slots being made, and slots taken whose branch has not used its set yet. */
  private readonly making = new Set<PreparedSlot>();
  private readonly taken = new Map<string, PreparedSlot>();
  private timer: NodeJS.Timeout | null = null;
  private filling: Promise<void> = Promise.resolve();
  private closed = false;

  constructor(
    private readonly size: number,
    private readonly d: PreparedPoolDeps,
  ) {}

  readyIds(): string[] {
    return this.ready.map((s) => s.id);
  }

  /** The ids and network slots a new branch may not get: the pool's (ready, being made, taken but not yet used). */
  held(): { ids: Set<string>; netIndexes: Set<number> } {
    const slots = [...this.ready, ...this.making, ...this.taken.values()];
    return { ids: new Set(slots.map((s) => s.id)), netIndexes: new Set(slots.map((s) => s.netIndex)) };
  }

  /** A ready set for a new branch, or null (the branch's set is then made on its path). */
  take(): PreparedSlot | null {
    const slot = this.ready.shift() ?? null;
    if (slot) this.taken.set(slot.id, slot);
    this.scheduleRefill(REFILL_AFTER_MS);
    return slot;
  }

  /** A slot taken for a branch that was not recorded after all goes back, ready again. */
  giveBack(slot: PreparedSlot): void {
    if (this.taken.delete(slot.id)) this.ready.unshift(slot);
  }

  /**
   * Whether the branch with this id took a ready set, which is its own from
   * now on (so once); also when the branch goes before it used it.
   */
  release(id: string): boolean {
    return this.taken.delete(id);
  }

  start(): void {
    this.scheduleRefill(0);
  }

  /** Stops refilling and removes the sets no branch took. */
  async drain(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    await this.filling;
    for (const slot of this.ready.splice(0)) await this.d.remove(slot);
  }

  private scheduleRefill(delayMs: number): void {
    if (this.closed) return;
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = null;
      this.filling = this.filling.then(() => this.fill());
    }, delayMs);
  }

  private async fill(): Promise<void> {
    while (!this.closed && this.ready.length + this.making.size < this.size) {
      let slot: PreparedSlot;
      try {
        slot = this.d.allocate();
      } catch (err) {
        this.d.log(`no branch network prepared ahead: ${(err as Error).message}`);
        return;
      }
      this.making.add(slot);
      try {
        await this.d.make(slot);
        this.ready.push(slot);
      } catch (err) {
        this.d.log(`preparing a branch network ahead failed: ${(err as Error).message}`);
        await this.d.remove(slot).catch((e: Error) => this.d.log(`removing the half-made branch network failed (start-up removes it): ${e.message}`));
        return; // tried again at the next take
      } finally {
        this.making.delete(slot);
      }
    }
  }
}
