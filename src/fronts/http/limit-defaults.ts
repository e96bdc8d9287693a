/**
 * The per-client limits in effect: what listen.perClient sets, else a default that depends on
 * whether the proxy can tell clients apart. With authentication each principal is a client; on
 * a non-loopback bind, or behind a trusted balancer, each address is. Bound to loopback without
 * authentication, every local program is the same client (127.0.0.1), so a per-client limit is
 * a limit on all local programs together: the one local user's IDE, scripts and benchmarks
 * throttle one another, and nobody else is kept apart by it. There a limit left unset is off;
 * the global caps (listen.maxSessions, upstream.maxProcesses with session eviction,
 * listen.connections) still bound what the proxy takes.
 *
 * Counting per session instead was the other choice, and the worse one: initialize and modern
 * requests carry no session, so they would still share the address's count (a loop of short
 * sessions would meet the limit at once), a session limit cannot be counted per session at
 * all, and the session id is whatever the client sends until it is checked, so a key per
 * session is a key the client picks.
 */
import type { Config } from '../../config/schema.js';
import { CLIENT_LIMITS, DEFAULT_CLIENT_SESSIONS } from '../../config/schema-listen.js';
import { isLoopbackBind } from './guards.js';
import type { ClientLimitsConfig } from './limits.js';

export interface PerClientLimits extends ClientLimitsConfig {
  /** Loopback without authentication: every local program is one client, and unset limits are off. */
  oneLocalUser: boolean;
}

/** The limits listen.perClient sets or implies (Infinity: off); `authenticated`: auth.tokens or auth.jwt is configured. */
export function perClientLimits(config: Config, authenticated: boolean): PerClientLimits {
  const { host, trustProxy, perClient } = config.listen;
  const oneLocalUser = !authenticated && trustProxy === false && isLoopbackBind(host);
  const unset = (strict: number) => (oneLocalUser ? Infinity : strict);
  return {
    requestsPerSecond: perClient.requestsPerSecond ?? unset(CLIENT_LIMITS.requestsPerSecond),
    inFlight: perClient.inFlight ?? unset(CLIENT_LIMITS.inFlight),
    sessions: perClient.sessions ?? unset(clientSessions(config)),
    oneLocalUser,
  };
}

/**
 * Concurrent legacy sessions per client: configured, or what suits the upstream where clients are told apart
 * (loopback without authentication: see perClientLimits).
 */
export function clientSessions(config: Config): number {
  const { upstream } = config;
  const configured = config.listen.perClient.sessions;
  if (configured !== undefined) return configured;
  const isolatedProcesses = !upstream.url && upstream.sessions === 'isolated';
  return isolatedProcesses ? Math.max(1, Math.floor(upstream.maxProcesses / 2)) : DEFAULT_CLIENT_SESSIONS;
}

/** The start-up log line that says which limits apply (and why some are off), with the values as log fields. */
export function describeLimits(limits: PerClientLimits): { values: Record<string, number | 'off'>; message: string } {
  const value = (n: number): number | 'off' => (Number.isFinite(n) ? n : 'off');
  const values = { requestsPerSecond: value(limits.requestsPerSecond), inFlight: value(limits.inFlight), sessions: value(limits.sessions) };
  const listed = Object.entries(values)
    .map(([name, v]) => `${name} ${v}`)
    .join(', ');
  const why = limits.oneLocalUser
    ? ' (loopback without authentication: every local program is the same client, so limits left ' +
      'unset are off; set listen.perClient to have them, or configure auth to count per principal)'
    : '';
  return { values, message: `per-client limits: ${listed}${why}` };
}
