/**
 * Per-client limits at the HTTP front, so that one client cannot take the machine: concurrent
 * sessions, requests in flight and requests per second, counted per principal (or per client
 * address when there is no authentication; what applies when unset: ./limit-defaults.ts).
 * Requests are checked before a POST's body is read, so that bodies trickling in count too.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import proxyAddr from 'proxy-addr';
import { ProxyError } from '../../jsonrpc/errors.js';
import { addressKey, limitKey } from './client-key.js';
import { sendError } from './errors.js';
import { routeOf, trackRoutes } from './route.js';

export interface RequestLimits {
  /** The MCP endpoint's path (the only one limited). */
  path: string;
  limits: ClientLimits;
  /** A request refused by a limit (counted in /metrics, named in the access log). */
  refuse(req: FastifyRequest, reason: 'rate' | 'in_flight'): void;
}

/** POSTs being answered, and a way to hear when the last of them is over (draining). */
export interface InFlight {
  readonly count: number;
  whenIdle(fn: () => void): void;
}

/**
 * Registers the request rate and the in-flight count on the MCP endpoint: after authentication
 * (the key is the principal), before the body is read. The rate is counted apart for each HTTP
 * method; only POSTs are in flight.
 */
export function registerLimits(app: FastifyInstance, o: RequestLimits): InFlight {
  trackRoutes(app);
  let count = 0;
  let idle: (() => void) | undefined;
  const max = o.limits.config.requestsPerSecond;
  // Off (loopback without authentication): no counting at all, rather than a count that never refuses.
  const rates = Number.isFinite(max) ? new Map<string, RequestRate>() : undefined;
  // The last onRequest hook (authentication's comes before it): nothing runs between it and reading the body.
  app.addHook('onRequest', (req, reply, done) => {
    if (routeOf(req) !== o.path) return done();
    const key = limitKey(req);
    if (rates) {
      let rate = rates.get(req.method);
      if (!rate) rates.set(req.method, (rate = new RequestRate(max)));
      const wait = rate.take(key);
      if (wait > 0) {
        o.refuse(req, 'rate');
        reply.header('retry-after', String(wait));
        return sendError(
          reply,
          new ProxyError(
            'RATE_LIMITED',
            `Too many requests: at most ${max} per second per client; retry after ${wait} second${wait === 1 ? '' : 's'}`,
          ),
        );
      }
    }
    if (req.method !== 'POST') return done();
    const release = o.limits.begin(key);
    if (!release) {
      o.refuse(req, 'in_flight');
      return sendError(
        reply,
        new ProxyError('RATE_LIMITED', `Too many requests in flight: at most ${o.limits.config.inFlight} per client at once`),
      );
    }
    count++;
    // Every response closes, also one still queued behind pipelined others when its socket dies (tested).
    reply.raw.once('close', () => {
      release();
      if (--count === 0) idle?.();
    });
    done();
  });
  return {
    get count() {
      return count;
    },
    whenIdle(fn) {
      idle = fn;
      if (count === 0) fn();
    },
  };
}

/** Clients whose request rate is tracked at once, per HTTP method; past it the least recently seen is forgotten. */
const RATE_KEYS = 5000;

/**
 * Requests per client in fixed windows of one second, each starting with the client's first
 * request after the last one ended; beyond `max` in a window a request is refused until the
 * window ends.
 */
export class RequestRate {
  /** Least recently seen first. */
  private readonly windows = new Map<string, { start: number; count: number }>();
  private newest: string | undefined;

  constructor(
    readonly max: number,
    private readonly windowMs = 1000,
  ) {}

  /** Counts a request of `key`: 0 when it is within the rate, else the seconds until its window ends. */
  take(key: string, now = Date.now()): number {
    let window = this.windows.get(key);
    if (window === undefined) {
      if (this.windows.size >= RATE_KEYS) this.windows.delete(this.windows.keys().next().value!);
      window = { start: now, count: 0 };
      this.windows.set(key, window);
    } else {
      if (key !== this.newest) {
        this.windows.delete(key);
        this.windows.set(key, window);
      }
      if (now - window.start >= this.windowMs) {
        window.start = now;
        window.count = 0;
      }
    }
    this.newest = key;
    return ++window.count <= this.max ? 0 : Math.ceil((window.start + this.windowMs - now) / 1000);
  }
}

/** The limits per client (Infinity: off); see ./limit-defaults.ts for what applies when unset. */
export interface ClientLimitsConfig {
  requestsPerSecond: number;
  sessions: number;
  inFlight: number;
}

export class ClientLimits {
  private readonly sessions = new Counts();
  private readonly inFlight = new Counts();

  constructor(readonly config: ClientLimitsConfig) {}

  /** Counts a new session for `key`; false when it already holds the most allowed. */
  openSession(key: string): boolean {
    return this.sessions.take(key, this.config.sessions);
  }

  sessionEnded(key: string): void {
    this.sessions.give(key);
  }

  /** Counts a request in flight; returns its release, or undefined when `key` has the most allowed. */
  begin(key: string): (() => void) | undefined {
    if (!this.inFlight.take(key, this.config.inFlight)) return undefined;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.inFlight.give(key);
    };
  }
}

/**
 * A count per client. A count back at zero stays (deleting a map's last key and adding it again
 * for the next request makes V8 rebuild the map's table each time) until many are kept: then
 * the zeros go, all at once.
 */
class Counts {
  private readonly counts = new Map<string, number>();
  private sweepAbove = 1024;

  take(key: string, limit: number): boolean {
    const n = this.counts.get(key) ?? 0;
    if (n >= limit) return false;
    this.counts.set(key, n + 1);
    if (n === 0 && this.counts.size > this.sweepAbove) this.sweep();
    return true;
  }

  give(key: string): void {
    const n = this.counts.get(key);
    if (n !== undefined && n > 0) this.counts.set(key, n - 1);
  }

  private sweep(): void {
    for (const [key, n] of this.counts) if (n === 0) this.counts.delete(key);
    this.sweepAbove = Math.max(1024, this.counts.size * 2);
  }
}

/** Whether a connection's address is one of the balancers listen.trustProxy names. */
export function trustedAddress(trustProxy: string[] | false): (address: string) => boolean {
  if (!trustProxy || trustProxy.length === 0) return () => false;
  const trust = proxyAddr.compile(trustProxy);
  return (address) => trust(address, 0);
}

/**
 * Failures per client address in fixed one-minute windows (failed authentication), counted
 * under the address's key (./client-key.ts: an IPv6 address by its /64); once MAX_KEYS
 * addresses are tracked in a window, every further one shares one overflow count, so many
 * addresses buy no extra guesses.
 */
export class FailureCounter {
  private windowStart = 0;
  private readonly counts = new Map<string, number>();

  constructor(private readonly perMinute: number) {}

  /** Seconds until `address` may try again; 0 when it may now. */
  blockedFor(address: string): number {
    this.roll();
    if ((this.counts.get(this.keyOf(address)) ?? 0) < this.perMinute) return 0;
    return Math.max(1, Math.ceil((this.windowStart + WINDOW_MS - Date.now()) / 1000));
  }

  /** Counts an attempt; `forgive` takes it back (it succeeded, or was no guess). */
  note(address: string): { forgive(): void } {
    this.roll();
    const key = this.keyOf(address);
    const window = this.windowStart;
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
    return {
      forgive: () => {
        const n = this.counts.get(key);
        if (n === undefined || this.windowStart !== window) return;
        if (n <= 1) this.counts.delete(key);
        else this.counts.set(key, n - 1);
      },
    };
  }

  private keyOf(address: string): string {
    const key = addressKey(address);
    return this.counts.has(key) || this.counts.size < MAX_KEYS ? key : OVERFLOW;
  }

  private roll(): void {
    const now = Date.now();
    if (now - this.windowStart < WINDOW_MS) return;
    this.windowStart = now;
    this.counts.clear();
  }
}

const WINDOW_MS = 60_000;
/** Addresses tracked in one window at most; the rest share OVERFLOW. */
const MAX_KEYS = 100_000;
const OVERFLOW = 'overflow';
