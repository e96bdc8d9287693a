/**
 * The time a result may spend being reshaped. Upstream output is untrusted, so every
 * transformer's loops report the work they do (`check(characters)`); past the deadline it
 * throws `BudgetExceeded` and the pipeline relays the upstream's result unchanged. The clock is
 * read once per WORK_PER_CLOCK_READ units of work, so checking costs next to nothing.
 */
export class BudgetExceeded extends Error {
  constructor(readonly ms: number) {
    super(`reshaping took longer than its budget of ${ms} ms`);
    this.name = 'BudgetExceeded';
  }
}

const WORK_PER_CLOCK_READ = 16_384;

export class Budget {
  private readonly deadline: number;
  private work = 0;

  constructor(readonly ms: number) {
    this.deadline = performance.now() + ms;
  }

  /** Counts `work` units done (characters, lines, rows); throws BudgetExceeded once the deadline has passed. */
  check(work = 1): void {
    this.work += work;
    if (this.work >= WORK_PER_CLOCK_READ) {
      this.work = 0;
      this.checkNow();
    }
  }

  /** Reads the clock now: for the pipeline between steps and for loops over large items. */
  checkNow(): void {
    if (performance.now() > this.deadline) throw new BudgetExceeded(this.ms);
  }
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
