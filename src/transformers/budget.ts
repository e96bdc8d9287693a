/**
 * The time a result may spend being reshaped. Upstream output is untrusted, so every
 * transformer's loops report the work they do (`check(characters)`); past the deadline it
 * throws `BudgetExceeded` and the pipeline relays the upstream's result unchanged. The clock is
 * the process's CPU time while the result's own transformers run: the budget protects the event
 * loop from one result's cost, and neither other processes on a busy machine nor other results
 * shaped at the same time may change what a client gets. It is read once per
 * WORK_PER_CLOCK_READ units of work, so checking costs next to nothing.
 */
export class BudgetExceeded extends Error {
  constructor(readonly ms: number) {
    super(`reshaping took longer than its budget of ${ms} ms`);
    this.name = 'BudgetExceeded';
  }
}

const WORK_PER_CLOCK_READ = 16_384;

export class Budget {
  /** CPU ms spent in stretches that have ended. */
  private spent = 0;
  /** cpuMs() when the running stretch began, or undefined while paused. */
  private since: number | undefined = cpuMs();
  private work = 0;

  constructor(readonly ms: number) {}

  /**
   * Stops counting, e.g. while other results' work runs: results shaped at the same time take
   * turns at their awaits, and one must not pay for another.
   */
  pause(): void {
    if (this.since === undefined) return;
    this.spent += cpuMs() - this.since;
    this.since = undefined;
  }

  resume(): void {
    this.since ??= cpuMs();
  }

  /** Counts `work` units done (characters, lines, rows); throws BudgetExceeded once the budget is spent. */
  check(work = 1): void {
    this.work += work;
    if (this.work >= WORK_PER_CLOCK_READ) {
      this.work = 0;
      this.checkNow();
    }
  }

  /** Reads the clock now: for the pipeline between steps and for loops over large items. */
  checkNow(): void {
    const running = this.since === undefined ? 0 : cpuMs() - this.since;
    if (this.spent + running > this.ms) throw new BudgetExceeded(this.ms);
  }
}

/** CPU time this process has used, in ms (user and system, all its threads). */
function cpuMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * True when a result holds more than `max` characters of text (string lengths, keys included),
 * walking it without recursion and stopping as soon as the limit is passed.
 */
export function largerThan(value: unknown, max: number): boolean {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') size += v.length;
    else if (Array.isArray(v)) {
      size += v.length;
      for (const item of v) stack.push(item);
    } else if (v !== null && typeof v === 'object') {
      for (const [key, item] of Object.entries(v)) {
        size += key.length + 1;
        stack.push(item);
      }
    } else size += 4;
    if (size > max) return true;
  }
  return false;
}
