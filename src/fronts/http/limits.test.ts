import { describe, expect, it } from 'vitest';
import { ClientLimits, FailureCounter, RequestRate } from './limits.js';

describe('FailureCounter', () => {
  it('blocks an address after its budget, forgives what succeeded, and gives many addresses one shared overflow', () => {
    const failures = new FailureCounter(3);
    for (let i = 0; i < 3; i++) failures.note('203.0.113.9');
    expect(failures.blockedFor('203.0.113.9')).toBeGreaterThan(0);
    expect(failures.blockedFor('2001:db8:0:1::7')).toBe(0);
    const ok = failures.note('2001:db8:0:1::7');
    failures.note('2001:db8:0:1::8');
    failures.note('2001:db8:0:1::9');
    ok.forgive();
    expect(failures.blockedFor('2001:db8:0:1::1')).toBe(0);
    failures.note('2001:db8:0:1::10');
    expect(failures.blockedFor('2001:db8:0:1::1')).toBeGreaterThan(0); // the same /64
    // Past 100,000 tracked addresses, new ones share one budget.
    for (let i = 0; i < 100_000; i++) failures.note(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`);
    for (const a of ['198.51.100.1', '198.51.100.2', '198.51.100.3']) failures.note(a);
    expect(failures.blockedFor('198.51.100.4')).toBeGreaterThan(0);
  });
});

describe('RequestRate', () => {
  it('allows max requests per one-second window from the first one, then the rest of the window in whole seconds', () => {
    const rate = new RequestRate(3);
    expect([0, 10, 20].map((t) => rate.take('a', 1000 + t))).toEqual([0, 0, 0]);
    expect(rate.take('a', 1500)).toBe(1);
    expect(rate.take('b', 1500)).toBe(0); // another client has its own window
    expect(rate.take('a', 1999)).toBe(1);
    expect(rate.take('a', 2000)).toBe(0); // a new window
    expect(rate.take('a', 2001)).toBe(0);
  });

  it('forgets the least recently seen client once 5000 are tracked', () => {
    const rate = new RequestRate(1);
    expect(rate.take('first', 0)).toBe(0);
    expect(rate.take('second', 0)).toBe(0);
    expect(rate.take('first', 1)).toBe(1); // seen again: now the most recent
    for (let i = 0; i < 4999; i++) rate.take(`c${i}`, 2); // the last one is the 5001st
    expect(rate.take('first', 3)).toBe(1); // still tracked
    expect(rate.take('second', 3)).toBe(0); // forgotten, so counted afresh
  });
});

describe('ClientLimits', () => {
  it('counts sessions and requests in flight per client, and frees what ends', () => {
    const limits = new ClientLimits({ requestsPerSecond: Infinity, sessions: 1, inFlight: 2 });
    const first = limits.begin('a')!;
    expect(limits.begin('a')).toBeDefined();
    expect(limits.begin('a')).toBeUndefined();
    expect(limits.begin('b')).toBeDefined();
    first();
    first(); // a release counts once
    expect(limits.begin('a')).toBeDefined();
    expect(limits.begin('a')).toBeUndefined();
    expect(limits.openSession('a')).toBe(true);
    expect(limits.openSession('a')).toBe(false);
    limits.sessionEnded('a');
    limits.sessionEnded('a'); // never below zero
    expect(limits.openSession('a')).toBe(true);
    expect(limits.openSession('a')).toBe(false);
  });

  it('still counts right past the point where idle clients are forgotten', () => {
    const limits = new ClientLimits({ requestsPerSecond: Infinity, sessions: 1, inFlight: 1 });
    const held = limits.begin('held')!;
    for (let i = 0; i < 3000; i++) limits.begin(`c${i}`)!();
    expect(limits.begin('held')).toBeUndefined();
    held();
    expect(limits.begin('held')).toBeDefined();
  });
});
