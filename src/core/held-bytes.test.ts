import { describe, expect, it } from 'vitest';
import { HeldBytes } from './held-bytes.js';

describe('HeldBytes', () => {
  it('lets go of a client’s oldest items past its share, and nobody else’s', () => {
    const budget = new HeldBytes({ perClient: 10, total: 100 });
    const dropped: string[] = [];
    const hold = (client: string, name: string, bytes: number) => budget.hold(client, 'task_result', bytes, () => dropped.push(name));
    hold('a', 'a1', 4);
    hold('b', 'b1', 4);
    hold('a', 'a2', 4);
    hold('a', 'a3', 4);
    expect(dropped).toEqual(['a1']);
    expect(budget.clientBytes('a')).toBe(8);
    expect(budget.clientBytes('b')).toBe(4);
    expect(budget.total).toBe(12);
    expect(budget.dropped.get('task_result')).toBe(1);
  });

  it('lets go of the oldest item of anyone past the total', () => {
    const budget = new HeldBytes({ perClient: 10, total: 12 });
    const dropped: string[] = [];
    budget.hold('a', 'stream', 5, () => dropped.push('a1'));
    budget.hold('b', 'input_round', 5, () => dropped.push('b1'));
    budget.hold('c', 'task_result', 5, () => dropped.push('c1'));
    expect(dropped).toEqual(['a1']);
    expect(budget.total).toBe(10);
    expect(budget.bytesOf('stream')).toBe(0);
    expect(budget.bytesOf('input_round')).toBe(5);
  });

  it('drops an item bigger than a limit on its own at once, keeping the others', () => {
    const budget = new HeldBytes({ perClient: 10, total: 100 });
    const dropped: string[] = [];
    budget.hold('a', 'task_result', 6, () => dropped.push('small'));
    const big = budget.hold('a', 'task_result', 11, () => dropped.push('big'));
    expect(dropped).toEqual(['big']);
    expect(big.dropped).toBe(true);
    expect(budget.clientBytes('a')).toBe(6);
  });

  it('counts resizes, and forgets released items once', () => {
    const budget = new HeldBytes({ perClient: 10, total: 100 });
    const dropped: string[] = [];
    const old = budget.hold('a', 'stream', 2, () => dropped.push('old'));
    const growing = budget.hold('a', 'stream', 2, () => dropped.push('growing'));
    growing.resize(7);
    expect(budget.clientBytes('a')).toBe(9);
    growing.resize(9);
    expect(dropped).toEqual(['old']);
    growing.release();
    growing.release();
    old.release();
    expect(budget.total).toBe(0);
    expect(budget.clientBytes('a')).toBe(0);
    growing.resize(5); // released: no longer counted
    expect(budget.total).toBe(0);
  });

  it('keeps its books straight when a drop releases or adds other items', () => {
    const budget = new HeldBytes({ perClient: 10, total: 100 });
    let other: ReturnType<HeldBytes['hold']> | undefined;
    budget.hold('a', 'stream', 6, () => other?.release());
    other = budget.hold('a', 'stream', 1, () => undefined);
    budget.hold('a', 'stream', 6, () => undefined);
    expect(budget.clientBytes('a')).toBe(6);
    expect(budget.total).toBe(6);
  });
});
