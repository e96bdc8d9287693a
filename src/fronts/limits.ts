/**
 * Per-client limits at the HTTP front, so that one client cannot take the machine: concurrent
 * sessions and requests in flight, counted per principal (or per client address when there is
 * no authentication). The request rate is limited by @fastify/rate-limit with the same key.
 */
import type { FastifyRequest } from 'fastify';
import proxyAddr from 'proxy-addr';

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

/** Whether a connection's address is one of the balancers listen.trustProxy names. */
export function trustedAddress(trustProxy: string[] | false): (address: string) => boolean {
  if (!trustProxy || trustProxy.length === 0) return () => false;
  const trust = proxyAddr.compile(trustProxy);
  return (address) => trust(address, 0);
}

/** Failures per key in fixed one-minute windows (failed authentication per address). */
export class FailureCounter {
  private windowStart = 0;
  private readonly counts = new Map<string, number>();

  constructor(private readonly perMinute: number) {}

  /** Seconds until `key` may try again; 0 when it may now. */
  blockedFor(key: string): number {
    this.roll();
    if ((this.counts.get(key) ?? 0) < this.perMinute) return 0;
    return Math.max(1, Math.ceil((this.windowStart + WINDOW_MS - Date.now()) / 1000));
  }

  note(key: string): void {
    this.roll();
    if (this.counts.size < MAX_KEYS || this.counts.has(key)) this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  private roll(): void {
    const now = Date.now();
    if (now - this.windowStart < WINDOW_MS) return;
    this.windowStart = now;
    this.counts.clear();
  }
}

const WINDOW_MS = 60_000;
/** Addresses tracked in one window at most, so that many addresses cannot grow the map without bound. */
const MAX_KEYS = 100_000;
