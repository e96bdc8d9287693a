/**
 * Per-client limits at the HTTP front, so that one client cannot take the machine: concurrent
 * sessions and requests in flight, counted per principal (or per client address when there is
 * no authentication). The request rate is limited by @fastify/rate-limit with the same key.
 */
import type { FastifyRequest } from 'fastify';

export interface ClientLimitsConfig {
  sessions: number;
  inFlight: number;
}

/** The key limits are counted under: the principal, or the client address without authentication. */
export function limitKey(req: FastifyRequest): string {
  return req.principal || `address:${req.ip}`;
}

export class ClientLimits {
  private readonly sessions = new Map<string, number>();
  private readonly inFlight = new Map<string, number>();

  constructor(readonly config: ClientLimitsConfig) {}

  /** Counts a new session for `key`; false when it already holds the most allowed. */
  openSession(key: string): boolean {
    return take(this.sessions, key, this.config.sessions);
  }

  sessionEnded(key: string): void {
    give(this.sessions, key);
  }

  /** Counts a request in flight; returns its release, or undefined when `key` has the most allowed. */
  begin(key: string): (() => void) | undefined {
    if (!take(this.inFlight, key, this.config.inFlight)) return undefined;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      give(this.inFlight, key);
    };
  }
}

function take(counts: Map<string, number>, key: string, limit: number): boolean {
  const n = counts.get(key) ?? 0;
  if (n >= limit) return false;
  counts.set(key, n + 1);
  return true;
}

function give(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 1) - 1;
  if (n <= 0) counts.delete(key);
  else counts.set(key, n);
}
