/**
 * The budget for bytes held for clients that are not there to take them: finished task results
 * nobody fetched, resumable streams whose client went away, calls waiting for a client's input.
 * One budget per gateway, shared by every holder, counted per client and in total. Past either
 * limit the oldest item held (of that client, or of anyone) is let go: its holder's `drop` runs
 * (the task forgets its result, the stream is given up as if its window ended, the call is
 * cancelled). An item bigger than a limit on its own goes at once and costs nobody else theirs.
 */

/** What is held: a finished task's result, a resumable stream's events, a call waiting for input. */
export type HeldKind = 'task_result' | 'stream' | 'input_round';
export const HELD_KINDS: readonly HeldKind[] = ['task_result', 'stream', 'input_round'];

export interface HeldBytesLimits {
  /** Most bytes held for one client (principal, or address without authentication). */
  perClient: number;
  /** Most bytes held in all. */
  total: number;
}

/** One item in the budget. */
export interface Held {
  /** The item's size changed (a held stream logged another event); may let go of older items, or this one. */
  resize(bytes: number): void;
  /** The item is no longer held (fetched, resumed, answered, expired); safe to call more than once. */
  release(): void;
  /** Whether the budget let go of it. */
  readonly dropped: boolean;
}

interface Item {
  client: string;
  kind: HeldKind;
  bytes: number;
  drop: () => void;
  dropped: boolean;
}

export class HeldBytes {
  /** Every item, oldest first. */
  private readonly items = new Set<Item>();
  /** Each client's items (oldest first) and their bytes. */
  private readonly clients = new Map<string, { bytes: number; items: Set<Item> }>();
  private held = 0;
  private readonly byKind = new Map<HeldKind, number>(HELD_KINDS.map((k) => [k, 0]));
  /** Items let go of to keep within the budget, by kind (for /metrics). */
  readonly dropped = new Map<HeldKind, number>(HELD_KINDS.map((k) => [k, 0]));

  constructor(readonly limits: HeldBytesLimits) {}

  /** Bytes held now, in all. */
  get total(): number {
    return this.held;
  }

  /** Bytes held now, of one kind. */
  bytesOf(kind: HeldKind): number {
    return this.byKind.get(kind)!;
  }

  /** Bytes held now for one client. */
  clientBytes(client: string): number {
    return this.clients.get(client)?.bytes ?? 0;
  }

  /**
   * Holds `bytes` for `client`; `drop` is how the holder lets go of the item when the budget
   * needs its room (it may run before `hold` returns, when the item alone is over a limit).
   */
  hold(client: string, kind: HeldKind, bytes: number, drop: () => void): Held {
    const item: Item = { client, kind, bytes: 0, drop, dropped: false };
    let mine = this.clients.get(client);
    if (!mine) this.clients.set(client, (mine = { bytes: 0, items: new Set() }));
    mine.items.add(item);
    this.items.add(item);
    this.resize(item, bytes);
    return {
      resize: (n) => this.resize(item, n),
      release: () => this.remove(item),
      get dropped() {
        return item.dropped;
      },
    };
  }

  private resize(item: Item, bytes: number): void {
    if (!this.items.has(item)) return;
    this.count(item, bytes - item.bytes);
    const victims: Item[] = [];
    if (bytes > this.limits.perClient || bytes > this.limits.total) {
      victims.push(item);
      this.remove(item);
    } else {
      const mine = this.clients.get(item.client)!;
      for (const old of mine.items) {
        if (mine.bytes <= this.limits.perClient) break;
        victims.push(old);
        this.remove(old);
      }
      for (const old of this.items) {
        if (this.held <= this.limits.total) break;
        victims.push(old);
        this.remove(old);
      }
    }
    // Holders run after the books are straight: a drop may release or resize other items.
    for (const victim of victims) {
      victim.dropped = true;
      this.dropped.set(victim.kind, this.dropped.get(victim.kind)! + 1);
      victim.drop();
    }
  }

  private remove(item: Item): void {
    if (!this.items.delete(item)) return;
    this.count(item, -item.bytes);
    const mine = this.clients.get(item.client)!;
    mine.items.delete(item);
    if (mine.items.size === 0) this.clients.delete(item.client);
  }

  private count(item: Item, delta: number): void {
    item.bytes += delta;
    this.held += delta;
    this.byKind.set(item.kind, this.byKind.get(item.kind)! + delta);
    const mine = this.clients.get(item.client);
    if (mine) mine.bytes += delta;
  }
}
