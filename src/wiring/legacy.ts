/**
 * Wiring of the legacy front: the relays that open a client session's upstream session (dedicated
 * or shared), and the HTTP sessions that hold them, resumable at any replica when sessions move.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { FilterChain, FiltersSnapshot } from '../core/filters.js';
import type { HeldBytes } from '../core/held-bytes.js';
import { LegacyRelays } from '../core/legacy-relays.js';
import type { ClientLimits } from '../fronts/http/limits.js';
import { LegacySessions, type LegacySessionsOptions } from '../fronts/legacy/http.js';
import { SessionTokens } from '../fronts/legacy/session-tokens.js';
import type { Metrics } from '../ops/metrics.js';
import type { Observers } from '../ops/observers.js';
import type { UpstreamEndpoint } from '../upstream/connector.js';
import type { Replica } from './replicas.js';
import type { UpstreamSessions } from './upstream.js';

/** The relays every legacy session opens through, over HTTP or stdio. */
export function createRelays(
  config: Config,
  connector: UpstreamEndpoint,
  upstream: UpstreamSessions,
  o: { filters: () => FilterChain; metrics: Metrics; observers: Observers },
): LegacyRelays {
  return new LegacyRelays({
    connector,
    shared: upstream.shared,
    filters: o.filters,
    maxProcesses: config.upstream.maxProcesses,
    requestTimeoutMs: config.timeouts.requestMs,
    initializeTimeoutMs: config.timeouts.initializeMs,
    inputTimeoutMs: config.modern.inputTimeoutMs,
    tools: upstream.tools,
    counters: o.metrics.counters,
    observe: o.observers.upstream,
  });
}

/** Legacy HTTP sessions over `relays`, sealed with the replica's tokens. */
export function createLegacySessions(
  config: Config,
  relays: LegacyRelays,
  replica: Replica,
  o: {
    held: HeldBytes;
    counters: Metrics['counters'];
    limits: ClientLimits;
    slowReaders: LegacySessionsOptions['slowReaders'];
    log: Logger;
  },
): LegacySessions {
  return new LegacySessions({
    maxSessions: config.listen.maxSessions,
    sessionIdleMs: config.timeouts.sessionIdleMs,
    sessionIdleNoStreamMs: config.timeouts.sessionIdleNoStreamMs,
    resumableStreams: config.listen.resumableStreams,
    held: o.held,
    sessionMaxAgeMs: config.timeouts.sessionMaxAgeMs,
    openSession: (sink, sessionLog, who) => relays.open(sink, sessionLog, who),
    resumeSession: replica.sessionsMove
      ? (sink, sessionLog, claims, who) => {
          const upstream = claims.upstream;
          if (!upstream?.id) return undefined;
          const snapshot = (claims.negotiation ?? { client: {} }) as FiltersSnapshot;
          return relays.resume(sink, sessionLog, who, { id: upstream.id, protocolVersion: upstream.protocolVersion }, snapshot);
        }
      : undefined,
    upstreamFull: () => relays.full(),
    evictionHelps: () => relays.evictionHelps(),
    counters: o.counters,
    tokens: new SessionTokens(replica.sealer, replica.replicaId, () => replica.address.url),
    forwarding: replica.sealer.shared ? { sealer: replica.sealer, requestMs: config.timeouts.requestMs } : undefined,
    limits: o.limits,
    slowReaders: o.slowReaders,
    log: o.log,
  });
}
