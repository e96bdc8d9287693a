import { describe, expect, it } from 'vitest';
import { Budget, BudgetExceeded } from './budget.js';

/** Uses `ms` of this process's CPU time. */
function burn(ms: number): void {
  const start = process.cpuUsage();
  while (true) {
    const { user, system } = process.cpuUsage(start);
    if ((user + system) / 1000 >= ms) return;
  }
}

describe('the reshaping budget', () => {
  it('counts CPU time while it runs, and throws once it is spent', () => {
    const budget = new Budget(20);
    burn(5);
    expect(() => budget.checkNow()).not.toThrow();
    burn(20);
    expect(() => budget.checkNow()).toThrow(BudgetExceeded);
  });

  it('does not count what happens while it is paused (another result shaped meanwhile)', () => {
    const mine = new Budget(20);
    mine.pause();
    const theirs = new Budget(20);
    burn(30);
    expect(() => theirs.checkNow()).toThrow(BudgetExceeded);
    expect(() => mine.checkNow()).not.toThrow();
    mine.resume();
    burn(25);
    expect(() => mine.checkNow()).toThrow(BudgetExceeded);
  });
});
