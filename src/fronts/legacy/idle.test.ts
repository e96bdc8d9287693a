import { describe, expect, it } from 'vitest';
import { evictionCandidate, idleLimit, reapEvery } from './idle.js';
import type { HttpSession } from './session.js';

/** What idle.ts reads of a session. */
const session = (name: string, lastUsed: number, isQuiet = true, hasListened = false) =>
  ({ name, lastUsed, isQuiet, hasListened }) as unknown as HttpSession & { name: string };
const TIMEOUTS = { sessionIdleMs: 600_000, sessionIdleNoStreamMs: 60_000, sessionMaxAgeMs: 86_400_000 };

describe('evictionCandidate', () => {
  it('picks the least recently used idle session, never a busy one', () => {
    const busyOldest = session('busy', 1, false);
    const candidate = evictionCandidate([
      session('recent', 300),
      busyOldest,
      session('older', 200),
      session('listening', 100, false, true),
    ]);
    expect((candidate as HttpSession & { name: string }).name).toBe('older');
    expect(evictionCandidate([busyOldest, session('streaming', 5, false, true)])).toBeUndefined();
    expect(evictionCandidate([])).toBeUndefined();
  });
});

describe('idleLimit', () => {
  it('gives a session that never listened the shorter timeout, never longer than sessionIdleMs', () => {
    expect(idleLimit(session('script', 0), TIMEOUTS)).toBe(60_000);
    expect(idleLimit(session('sdk', 0, true, true), TIMEOUTS)).toBe(600_000);
    expect(idleLimit(session('script', 0), { ...TIMEOUTS, sessionIdleMs: 2500 })).toBe(2500);
    expect(reapEvery(TIMEOUTS)).toBe(25_000);
    expect(reapEvery({ ...TIMEOUTS, sessionIdleNoStreamMs: 1000 })).toBe(500);
  });
});
