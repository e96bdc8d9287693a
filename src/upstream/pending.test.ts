import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { PendingCalls } from './pending.js';

describe('PendingCalls', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('times a call out once, restarts its timer on progress, holds it for input, and settles everything on close', () => {
    const timedOut: Array<[unknown, string, number]> = [];
    const calls = new PendingCalls<string>((id, call, ms) => timedOut.push([id, call, ms]));
    calls.add(1, 'a', 1000, 'tok-a');
    calls.add(2, 'b', 1000);
    calls.add(3, 'c', 1000);
    vi.advanceTimersByTime(900);
    expect(calls.progressed('tok-a')).toEqual({ id: 1, call: 'a' });
    calls.hold(3);
    vi.advanceTimersByTime(200);
    expect(timedOut).toEqual([[2, 'b', 1000]]);
    expect(calls.has(2)).toBe(false);
    vi.advanceTimersByTime(900);
    expect(timedOut.map(([id]) => id)).toEqual([2, 1]);
    expect(calls.progressed('tok-a')).toBeUndefined();
    expect(calls.only()).toBe('c');
    calls.resume(3);
    expect(calls.settleAll()).toEqual([[3, 'c']]);
    vi.advanceTimersByTime(5000);
    expect(timedOut).toHaveLength(2);
  });
});
