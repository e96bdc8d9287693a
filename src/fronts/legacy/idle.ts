/**
 * When legacy sessions give way to others: which idle session ends to make room for a new one
 * (eviction). A session is idle when nothing of it is in flight and no stream of it is open:
 * its client is between requests, or gone without a DELETE (the SDKs' close() sends none).
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
