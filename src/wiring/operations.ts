/**
 * Wiring of operations: readiness (the upstream's start-up check and /readyz), metrics and the
 * observers that feed them and the spans of tracing.
 */
import type { ListCache } from '../upstream/list-cache.js';
import type { Logger } from 'pino';
import { HELD_KINDS, type HeldBytes } from '../core/held-bytes.js';
import { ProxyError, ProxyStartError } from '../jsonrpc/errors.js';
import { Metrics } from '../ops/metrics.js';
import { Observers } from '../ops/observers.js';
import { logWhileWaiting, seconds } from '../ops/progress.js';
import { Readiness } from '../ops/readiness.js';
import type { Tracing } from '../ops/tracing.js';
import type { UpstreamEndpoint } from '../upstream/connector.js';

/** A readiness answer is reused this long; a probe gets this long to initialize an upstream session. */
const READY_TTL_MS = 5_000;
const READY_PROBE_TIMEOUT_MS = 10_000;

export interface Operations {
  readiness: Readiness;
  metrics: Metrics;
  observers: Observers;
  /** Spans for the configured OTLP endpoint; none = tracing off. */
  tracing: Tracing | undefined;
}

/** Readiness probes `connector`; the metrics' gauges read `sessions` (client sessions now) and `held`. */
export function createOperations(
  connector: UpstreamEndpoint,
  o: {
    sessions: () => number;
    held: HeldBytes;
    lists: ListCache;
    toolPins?: () => { pinned: number; refused: number } | undefined;
    tracing: Tracing | undefined;
    log: Logger;
  },
): Operations {
  const { held, tracing } = o;
  const readiness = new Readiness(() => connector.probe(READY_PROBE_TIMEOUT_MS, o.log.child({ probe: true })), READY_TTL_MS);
  const metrics = new Metrics({
    sessions: o.sessions,
    upstreamProcesses: () => connector.children.size,
    lists: () => o.lists.counts,
    held: () => HELD_KINDS.map((kind) => ({ kind, bytes: held.bytesOf(kind), dropped: held.dropped.get(kind)! })),
    toolPins: o.toolPins,
    servers: connector.serverStatus && (() => connector.serverStatus!()),
  });
  return { readiness, metrics, observers: new Observers(metrics, tracing), tracing };
}

/**
 * Checks the upstream once at start-up and logs the outcome. With --fail-fast nothing is served
 * meanwhile: it has its own (shorter) time limit, progress is logged, and a failure stops the start.
 */
export function checkUpstreamAtStart(
  connector: UpstreamEndpoint,
  readiness: Readiness,
  o: { target: string; initializeMs: number; failFast: { timeoutMs: number } | undefined; log: Logger },
): Promise<void> {
  const { log, target, failFast } = o;
  const limitMs = failFast?.timeoutMs ?? o.initializeMs;
  const probe = connector.probe(limitMs, log.child({ probe: true }));
  const watched = failFast
    ? logWhileWaiting(probe, limitMs, log, (waited, limit) => `waiting for the upstream to answer initialize (${waited} of ${limit})…`)
    : probe;
  return watched.then(
    () => {
      readiness.note(true);
      log.info({ upstream: target }, 'upstream ready');
    },
    (err: Error) => {
      readiness.note(false, err.message);
      log.error({ upstream: target, cause: err.message }, 'upstream not ready: sessions will fail until it is');
      if (!failFast) return;
      const slow = err instanceof ProxyError && err.code === 'REQUEST_TIMEOUT';
      const hint = slow
        ? ` (--fail-fast-timeout ${limitMs}): raise it if the upstream needs ` +
          'longer to start (npx may download first), or check that it speaks MCP'
        : '';
      const why = slow ? `it did not answer initialize within ${seconds(limitMs)}` : err.message;
      throw new ProxyStartError(`The upstream ${target} is not usable (--fail-fast): ${why}${hint}`);
    },
  );
}
