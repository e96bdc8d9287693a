/**
 * Per-client limits at the HTTP front, so that one client cannot take the machine: concurrent
 * sessions and requests in flight, counted per principal (or per client address when there is
 * no authentication; what applies when unset: ./limit-defaults.ts). The request rate is limited
 * by @fastify/rate-limit with the same key.
 * Both are checked before a POST's body is read, so that bodies trickling in count too.
 */
import rateLimit from '@fastify/rate-limit';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import proxyAddr from 'proxy-addr';
import { ProxyError } from '../../jsonrpc/errors.js';
import { sendError } from './errors.js';

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

/** Registers the rate limit and the in-flight count; routes opt in to the rate limit with `RATE_LIMITED_ROUTE`. */
export async function registerLimits(app: FastifyInstance, o: RequestLimits): Promise<InFlight> {
  let count = 0;
  let idle: (() => void) | undefined;
  // After the rate limit (an onRequest hook of the route), before the body is read.
  app.addHook('preParsing', (req, reply, payload, done) => {
    if (req.method !== 'POST' || req.routeOptions.url !== o.path) return done(null, payload);
    const release = o.limits.begin(limitKey(req));
    if (!release) {
      o.refuse(req, 'in_flight');
      return sendError(reply, new ProxyError('RATE_LIMITED', `Too many requests in flight: at most ${o.limits.config.inFlight} per client at once`));
    }
    count++;
    // Every response closes, also one still queued behind pipelined others when its socket dies (tested).
    reply.raw.once('close', () => {
      release();
      if (--count === 0) idle?.();
    });
    done(null, payload);
  });
  const max = o.limits.config.requestsPerSecond;
  // Off (loopback without authentication): no limiter at all, rather than one that never refuses.
  if (Number.isFinite(max)) {
    const off = { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false };
    await app.register(rateLimit, {
      global: false,
      hook: 'onRequest', // after authentication (the key is the principal), before the body is read
      max,
      timeWindow: 1000,
      keyGenerator: limitKey,
      addHeadersOnExceeding: off,
      addHeaders: { ...off, 'retry-after': true },
      onExceeded: (req) => o.refuse(req, 'rate'),
      errorResponseBuilder: (_req, ctx) => ({ statusCode: 429, message: `Too many requests: at most ${ctx.max} per second per client; retry after ${ctx.after}` }),
    });
  }
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

/** Route options that put a route under the per-client request rate. */
export const RATE_LIMITED_ROUTE = { config: { rateLimit: {} } };

/** The limits per client (Infinity: off); see ./limit-defaults.ts for what applies when unset. */
export interface ClientLimitsConfig {
  requestsPerSecond: number;
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

/**
 * Failures per client address in fixed one-minute windows (failed authentication). IPv6
 * addresses count by their /64 (one host has a whole /64 to rotate through); once MAX_KEYS
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

/** What a client address counts as: an IPv4 address (also when mapped into IPv6), or an IPv6 address's /64. */
export function addressKey(address: string): string {
  if (!address.includes(':')) return address;
  if (address.startsWith('::ffff:') && address.includes('.')) return address.slice(7);
  const bare = address.split('%')[0].toLowerCase();
  const [head, tail] = bare.split('::');
  const groups = head ? head.split(':') : [];
  if (tail !== undefined) {
    const rest = tail ? tail.split(':') : [];
    while (groups.length + rest.length < 8) groups.push('0');
    groups.push(...rest);
  }
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}
