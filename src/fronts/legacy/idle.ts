/**
 * When legacy sessions give way to others: how long an idle session lasts before the reaper
 * ends it (idle-out), and which idle session ends to make room for a new one (eviction). A
 * session is idle when nothing of it is in flight and no stream of it is open: its client is
 * between requests, or gone without a DELETE (the SDKs' close() sends none).
 *
 * The idle session may be any principal's. That is safe: it ends as an idle-out ends it (its
 * client gets 404 and initializes again, as the spec has clients do for a lost session), and
 * nothing of it passes to the newcomer (a new session gets a new id and its own upstream; a
 * session id names nothing else). Churning sessions cannot evict others' work: a session with
 * a request in flight or an open stream is never chosen, and the per-client session limit,
 * checked before any eviction, bounds how many idle sessions one client can push out (each
 * one it makes counts against it until it ends).
 */
import type { HttpSession } from './session.js';

export interface IdleTimeouts {
  /** An idle session whose client opened a GET stream ends after this. */
  sessionIdleMs: number;
  /** One whose client never did ends after this (never later than sessionIdleMs). */
  sessionIdleNoStreamMs: number;
  /** Sessions older than this are ended (404), idle or not. */
  sessionMaxAgeMs: number;
}

/**
 * How long `session` may stay idle. A client that never opened a GET stream listens for
 * nothing between its requests (scripts and benchmarks, which also tend to leave without a
 * DELETE): its session goes sooner than one whose client listens, or did.
 */
export function idleLimit(session: HttpSession, t: IdleTimeouts): number {
  return session.hasListened ? t.sessionIdleMs : Math.min(t.sessionIdleNoStreamMs, t.sessionIdleMs);
}

/** How often the reaper looks: often enough for the shortest timeout to be kept to about half of itself. */
export function reapEvery(t: IdleTimeouts): number {
  return Math.max(250, Math.min(t.sessionIdleNoStreamMs / 2, t.sessionIdleMs / 2, t.sessionMaxAgeMs / 2, 25_000));
}

/** The least recently used idle session, or undefined when every session is busy (or still starting: those are not given). */
export function evictionCandidate(sessions: Iterable<HttpSession>): HttpSession | undefined {
  let oldest: HttpSession | undefined;
  let oldestUse = Infinity;
  for (const session of sessions) {
    if (!session.isQuiet) continue;
    const used = session.lastUsed;
    if (used < oldestUse) [oldest, oldestUse] = [session, used];
  }
  return oldest;
}
