/**
 * Deadlines that all wait the same time (an `auto` reply becomes a stream when its answer takes
 * longer than STREAM_AFTER_MS): they come due in the order they were set, so one timer serves
 * them all, armed for the oldest, instead of a timer set and cleared for every request.
 * A deadline cancelled before it is due costs nothing more than its place in the queue (and
 * lets go of what its callback held); one may be met up to a tenth of the delay late.
 */

export interface Deadline {
  cancel(): void;
}

class Entry implements Deadline {
  constructor(
    readonly at: number,
    public fn: (() => void) | undefined,
  ) {}

  cancel(): void {
    this.fn = undefined;
  }
}

export class Deadlines {
  private queue: Entry[] = [];
  private head = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly ms: number) {}

  /** Calls `fn` once `ms` have passed, unless cancelled first. */
  after(fn: () => void): Deadline {
    const entry = new Entry(performance.now() + this.ms, fn);
    this.queue.push(entry);
    if (!this.timer) this.arm(this.ms);
    return entry;
  }

  private arm(ms: number): void {
    this.timer = setTimeout(() => this.run(), ms);
    // What waits here is a socket's response, which keeps the process alive on its own.
    this.timer.unref();
  }

  private run(): void {
    this.timer = undefined;
    const now = performance.now();
    // Due ones are called; cancelled ones, due or not, are dropped, so that a timer is armed
    // again only for a deadline still waiting (when answers come quickly: about once per `ms`).
    while (this.head < this.queue.length) {
      const entry = this.queue[this.head];
      if (entry.fn && entry.at > now) break;
      this.head++;
      const fn = entry.fn;
      entry.fn = undefined;
      fn?.();
    }
    if (this.head === this.queue.length) {
      this.queue = [];
      this.head = 0;
      return;
    }
    if (this.head >= 1024) {
      this.queue = this.queue.slice(this.head);
      this.head = 0;
    }
    // Deadlines close together are met together: a tenth of `ms` late at most.
    this.arm(Math.max(this.ms / 10, this.queue[this.head].at - now));
  }
}

const byDelay = new Map<number, Deadlines>();

/** The shared deadlines for one delay. */
export function deadlinesOf(ms: number): Deadlines {
  let deadlines = byDelay.get(ms);
  if (!deadlines) byDelay.set(ms, (deadlines = new Deadlines(ms)));
  return deadlines;
}
