import { describe, expect, it } from 'vitest';
import { Deadlines } from './deadlines.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Deadlines', () => {
  it('calls each callback once its time has passed, in order, and never a cancelled one', async () => {
    const deadlines = new Deadlines(30);
    const calls: string[] = [];
    const started = performance.now();
    const at: number[] = [];
    deadlines.after(() => (calls.push('a'), at.push(performance.now() - started)));
    const b = deadlines.after(() => calls.push('b'));
    await sleep(10);
    deadlines.after(() => (calls.push('c'), at.push(performance.now() - started)));
    b.cancel();
    await sleep(25);
    expect(calls).toEqual(['a']);
    await sleep(30);
    expect(calls).toEqual(['a', 'c']);
    expect(at[0]).toBeGreaterThanOrEqual(29);
    expect(at[1]).toBeGreaterThanOrEqual(39);
    // Idle again, it arms anew.
    deadlines.after(() => calls.push('d'));
    await sleep(45);
    expect(calls).toEqual(['a', 'c', 'd']);
  });

  it('keeps up with many deadlines at once', async () => {
    const deadlines = new Deadlines(5);
    let n = 0;
    const kept = Array.from({ length: 3000 }, () => deadlines.after(() => n++)).filter((d, i) =>
      i % 3 === 0 ? (d.cancel(), false) : true,
    );
    await sleep(30);
    expect(n).toBe(kept.length);
  });
});
