/**
 * Wiring of the front the config chooses: HTTP (legacy sessions and modern requests on one
 * endpoint, with per-client limits, authentication and the probes) or stdio (one client).
 */
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { LegacyRelays } from '../core/legacy-relays.js';
import type { Authenticator } from '../fronts/http/auth.js';
import { describeLimits, perClientLimits } from '../fronts/http/limit-defaults.js';
import { ClientLimits } from '../fronts/http/limits.js';
import { startHttpFront, type HttpFront } from '../fronts/http/server.js';
import type { LegacySessions, LegacySessionsOptions } from '../fronts/legacy/http.js';
import { ModernHttp } from '../fronts/modern/http.js';
import { startStdioDownstream, type StdioDownstream } from '../fronts/stdio.js';
import type { UpstreamEndpoint } from '../upstream/connector.js';
import type { ModernFront } from './modern.js';
import type { Operations } from './operations.js';
import type { Replica } from './replicas.js';

/** The per-client limits in effect, logged once with why some are off. */
export function createClientLimits(config: Config, authenticated: boolean, log: Logger): ClientLimits {
  const perClient = perClientLimits(config, authenticated);
  const described = describeLimits(perClient);
  log.info({ perClient: described.values, oneLocalUser: perClient.oneLocalUser }, described.message);
  return new ClientLimits(perClient);
}

/** Listens on the configured address; resolves once it does. */
export function startHttp(
  config: Config,
  o: {
    legacy: LegacySessions;
    modern: ModernFront | undefined;
    limits: ClientLimits;
    slowReaders: LegacySessionsOptions['slowReaders'];
    authenticator: Authenticator;
    replica: Replica;
    connector: UpstreamEndpoint;
    ops: Operations;
    log: Logger;
  },
): Promise<HttpFront> {
  const { replica, ops } = o;
  return startHttpFront({
    listen: config.listen,
    profilePaths: Object.values(config.profiles).flatMap((p) => (p.path === undefined ? [] : [p.path])),
    legacy: o.legacy,
    modern: o.modern && new ModernHttp(o.modern.handler, o.slowReaders, replica.sealer),
    limits: o.limits,
    auth: { authenticator: o.authenticator, config: config.auth },
    replicaUrl: () => replica.address.url,
    replicas: replica.sealer.shared ? { sealer: replica.sealer, replicaId: replica.replicaId } : undefined,
    tracing: ops.tracing,
    health: () => o.connector.report(),
    serverOf: o.connector.serverOf && ((rpc, target) => o.connector.serverOf!(rpc, target)),
    readiness: () => ops.readiness.check(),
    metrics: ops.metrics,
    log: o.log,
  });
}

/** Serves the one client on `input` and `output`. */
export function startStdio(
  config: Config,
  o: { input: Readable; output: Writable; relays: LegacyRelays; modern: ModernFront | undefined; log: Logger },
): StdioDownstream {
  return startStdioDownstream({
    input: o.input,
    output: o.output,
    openSession: (sink, sessionLog, who) => o.relays.open(sink, sessionLog, who),
    modern: o.modern?.handler,
    limits: { maxBatch: config.listen.maxBatchSize, maxDepth: config.listen.maxJsonDepth },
    log: o.log,
  });
}
