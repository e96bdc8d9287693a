/**
 * Connection discipline at the HTTP front, so that slow or numerous connections cannot take
 * the process's file descriptors: the request line and headers must arrive within
 * `headersTimeoutMs` and the whole body within `bodyTimeoutMs` more (Node answers 408 and
 * closes), idle keep-alive connections close after `keepAliveTimeoutMs`, and connections
 * beyond `max` in all or `perAddress` from one client address are refused: their first
 * request gets 503 or 429 with `Connection: close`, and one that sends nothing is closed.
 * Addresses of trusted balancers (listen.trustProxy) are not capped per address: every client
 * behind them shares their address. An address counts under its key (./client-key.ts: an IPv6
 * address by its /64).
 */
import type { Server, ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from 'pino';
import { ProxyError } from '../../jsonrpc/errors.js';
import { addressKey } from './client-key.js';

export interface ConnectionLimits {
  headersTimeoutMs: number;
  bodyTimeoutMs: number;
  keepAliveTimeoutMs: number;
  max: number;
  perAddress: number;
}

/** How long a refused connection may stay open for its refusal to be asked for and read. */
const REFUSED_GRACE_MS = 2000;
/** Refusals are logged at most this often (with how many there were), not once each. */
const LOG_EVERY_MS = 10_000;

const refusals = new WeakMap<Socket, ProxyError>();

/** The server options that enforce the timeouts (Node's own 408 on a late request). */
export function timeoutOptions(limits: ConnectionLimits): { http: ServerOptions; requestTimeout: number; keepAliveTimeout: number } {
  return {
    http: {
      headersTimeout: limits.headersTimeoutMs,
      // How often Node looks for late requests: the timeouts are enforced this precisely.
      connectionsCheckingInterval: Math.max(250, Math.min(1000, limits.headersTimeoutMs / 4)),
    },
    requestTimeout: limits.headersTimeoutMs + limits.bodyTimeoutMs,
    keepAliveTimeout: limits.keepAliveTimeoutMs,
  };
}

/**
 * Counts open connections, in all and per address; those over a cap are marked refused
 * (see refusalOf) and closed after a grace period. `trusted` tells a balancer's address.
 * Returns the count of open connections (for /metrics).
 */
export function capConnections(
  server: Server,
  limits: ConnectionLimits,
  trusted: (address: string) => boolean,
  log: Logger,
  onRefused: (reason: 'connections' | 'per_address') => void,
): { open(): number } {
  let open = 0;
  const perAddress = new Map<string, number>();
  let lastLog = 0;
  let unlogged = 0;
  server.on('connection', (socket: Socket) => {
    const remote = socket.remoteAddress ?? '';
    const address = addressKey(remote);
    open++;
    const mine = (perAddress.get(address) ?? 0) + 1;
    perAddress.set(address, mine);
    socket.once('close', () => {
      open--;
      const n = (perAddress.get(address) ?? 1) - 1;
      if (n <= 0) perAddress.delete(address);
      else perAddress.set(address, n);
    });
    let refusal: ProxyError | undefined;
    if (open > limits.max) {
      refusal = new ProxyError(
        'TOO_MANY_CONNECTIONS',
        `Too many open connections (listen.connections.max: ${limits.max}); try again shortly`,
      );
      onRefused('connections');
    } else if (mine > limits.perAddress && !trusted(remote)) {
      refusal = new ProxyError(
        'RATE_LIMITED',
        `Too many open connections from this address (listen.connections.perAddress: ${limits.perAddress}); reuse one, or close some`,
      );
      onRefused('per_address');
    }
    if (!refusal) return;
    refusals.set(socket, refusal);
    socket.setTimeout(REFUSED_GRACE_MS, () => socket.destroy());
    unlogged++;
    const now = Date.now();
    if (now - lastLog >= LOG_EVERY_MS) {
      log.warn({ refused: unlogged, open, address, reason: refusal.code }, 'connections refused: over the connection caps');
      lastLog = now;
      unlogged = 0;
    }
  });
  return { open: () => open };
}

/** Why this request's connection is refused, if it is (answered at once, then closed). */
export function refusalOf(socket: Socket): ProxyError | undefined {
  return refusals.get(socket);
}
