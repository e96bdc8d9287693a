/**
 * Parts the composition root (gateway.ts) builds from the config: where other replicas reach
 * this one, the pool of upstream sessions, and the modern handler with its listen hub.
 */
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import type { Config } from './config/schema.js';
import type { FilterChain } from './core/filters.js';
import type { HeldBytes } from './core/held-bytes.js';
import { ModernHandler } from './fronts/modern/handler.js';
import { ListenHub } from './fronts/modern/listen.js';
import type { Observers } from './ops/observers.js';
import { PROXY_VERSION } from './ops/version.js';
import type { Sealer } from './sealing/sealer.js';
import type { UpstreamConnector } from './upstream/connector.js';
import { speaksModern } from './upstream/era.js';
import { UpstreamPool } from './upstream/pool.js';
import { modernToolLister, pooledToolLister, ToolCatalog } from './upstream/tool-catalog.js';

/** How the proxy names itself to upstreams. */
export const CLIENT_INFO = { name: 'mcp-negotiate-proxy', version: PROXY_VERSION };

/**
 * Where other replicas reach this one: configured; bound to every interface (a container), its
 * host name, as peers on its network resolve it; else the listening URL, once known.
 */
export function replicaAddress(config: Config): { url: string | undefined; listening(url: string): void } {
  const wildcard = ['0.0.0.0', '::', '[::]'].includes(config.listen.host);
  const address = {
    url:
      config.replicas.url ??
      (wildcard && config.listen.port !== 0 ? `http://${hostname()}:${config.listen.port}${config.listen.path}` : undefined),
    listening(url: string) {
      if (!wildcard) address.url ??= url;
    },
  };
  return address;
}

/** How the pool's sessions are shared: per client, and among calls that hold one alone (they may ask for input). */
function poolShares(config: Config): { maxSessions: number; perClient: number; maxExclusive: number } {
  const { maxSessions, perClient } = config.modern.pool;
  return {
    maxSessions,
    perClient: perClient ?? Math.max(1, Math.floor(maxSessions / 4)),
    // A quarter of the sessions is kept for calls that cannot ask for input.
    maxExclusive: Math.max(1, maxSessions - Math.ceil(maxSessions / 4)),
  };
}

/**
 * Sessions held alone by running tasks, which outlive their request (and their client may leave):
 * a client's tasks leave it one of its sessions for calls it waits on, and tasks in all leave
 * half of the exclusive sessions to calls whose client waits for them.
 */
export function taskSessionShares(config: Config): { perClient: number; total: number } {
  const { perClient, maxExclusive } = poolShares(config);
  return { perClient: Math.max(1, perClient - 1), total: Math.max(1, Math.floor(maxExclusive / 2)) };
}

/** The pool of proxy-initialized upstream sessions (modern requests, and legacy sessions with `upstream.sessions: shared`). */
export function createPool(config: Config, connector: UpstreamConnector, log: Logger, observers: Observers): UpstreamPool {
  return new UpstreamPool({
    connect: (events, poolLog) => connector.connect(events, poolLog),
    ...poolShares(config),
    sharePrincipals: config.upstream.stateless,
    idleMs: config.modern.pool.idleMs,
    warmSpare: config.modern.pool.warmSpare && connector.kind === 'stdio',
    initializeTimeoutMs: config.timeouts.initializeMs,
    clientInfo: CLIENT_INFO,
    log: log.child({ pool: true }),
    observe: observers.upstream,
  });
}

/**
 * The upstream's tool catalog, which the proxy fills itself when it must: listed as a modern client (an upstream
 * that speaks 2026-07-28), or on a pooled session of a legacy upstream.
 */
export function createToolCatalog(config: Config, connector: UpstreamConnector, pool: UpstreamPool | undefined): ToolCatalog {
  const timeoutMs = config.timeouts.requestMs;
  return new ToolCatalog({
    lister: async (who) =>
      !pool || speaksModern(connector.era.now ?? (await connector.era.resolve()))
        ? modernToolLister(connector.modern, timeoutMs, CLIENT_INFO)
        : pooledToolLister(pool, who, timeoutMs),
  });
}

/** The modern-era handler over the pool, with its listen hub. */
export function createModernHandler(
  config: Config,
  pool: UpstreamPool,
  connector: UpstreamConnector,
  tools: ToolCatalog,
  filters: () => FilterChain,
  log: Logger,
  replica: { sealer: Sealer; replicaId: string; replicaUrl: () => string | undefined },
  held: HeldBytes,
): { handler: ModernHandler; hub: ListenHub } {
  const hub = new ListenHub(pool, filters, log, config.timeouts.requestMs);
  const handler = new ModernHandler({
    pool,
    filters,
    requestTimeoutMs: config.timeouts.requestMs,
    inputTimeoutMs: config.modern.inputTimeoutMs,
    parkedPerClient: config.modern.parkedPerClient,
    held,
    maxInputRequestBytes: config.modern.maxInputRequestBytes,
    ...replica,
    cache: config.modern.cache,
    ...(config.modern.tasks.enabled
      ? { tasks: { ...config.modern.tasks, ...replica, exclusive: taskSessionShares(config), held, log } }
      : {}),
    listen: (req, ctx, reply, tasks) => hub.listen(req, ctx, reply, tasks),
    era: connector.era,
    modern: connector.modern,
    tools,
    log,
  });
  return { handler, hub };
}
