/**
 * Wiring of the upstream side: the connector to the configured server, the pool of
 * proxy-initialized upstream sessions, the shared sessions drawn from it, and the tool catalog
 * with its pins.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { Observers } from '../ops/observers.js';
import { PROXY_VERSION } from '../ops/version.js';
import { UpstreamConnector, type UpstreamEndpoint } from '../upstream/connector.js';
import type { EraSetting } from '../upstream/era.js';
import { speaksModern } from '../upstream/era.js';
import type { UpstreamCall } from '../upstream/call.js';
import { ListCache } from '../upstream/list-cache.js';
import { upstreamCapabilities, UpstreamPool } from '../upstream/pool.js';
import { SharedUpstreamSessions } from '../upstream/shared.js';
import { toolLister, ToolCatalog } from '../upstream/tool-catalog.js';
import { PinsFileError, ToolPins } from '../upstream/tool-pins.js';
import { ProxyStartError } from '../jsonrpc/errors.js';
import type { Metrics, ServerOutcome } from '../ops/metrics.js';
import { modernEnvelope } from '../mcp/eras.js';
import type { UpstreamSpec } from '../upstream/types.js';
import { describeUpstream, resolveUpstream } from '../config/upstream.js';
import { AggregateEndpoint } from '../upstream/aggregate/endpoint.js';
import { AggregateServer } from '../upstream/aggregate/server.js';

/** How the proxy names itself to upstreams. */
export const CLIENT_INFO = { name: 'mcp-negotiate-proxy', version: PROXY_VERSION };

/** How long an HTTP upstream gets to answer server/discover before it counts as legacy. */
const DISCOVER_TIMEOUT_MS = 5_000;

/**
 * The connector that starts or reaches the upstream (`era`: one of several servers' own, beside upstream.era);
 * `witness` hears every sign of whether it is usable.
 */
export function createConnector(
  config: Config,
  upstream: { spec: UpstreamSpec; target: string; era?: EraSetting },
  o: { getFollowsClient: boolean; lists?: ListCache; log: Logger; witness: (usable: boolean, cause?: string) => void },
): UpstreamConnector {
  return new UpstreamConnector({
    spec: upstream.spec,
    target: upstream.target,
    getFollowsClient: o.getFollowsClient,
    shutdownGraceMs: config.timeouts.shutdownGraceMs,
    clientInfo: CLIENT_INFO,
    era: upstream.era ?? config.upstream.era,
    discoverTimeoutMs: Math.min(DISCOVER_TIMEOUT_MS, config.timeouts.initializeMs),
    lists: o.lists,
    log: o.log,
    witness: o.witness,
  });
}

/**
 * The servers `upstreams` lists, behind one endpoint; `witness` hears whether every required one is usable
 * (throws a ConfigError for a command that cannot be split).
 */
export function createAggregate(
  config: Config,
  o: {
    demoEntry: string;
    log: Logger;
    witness: (usable: boolean, cause?: string) => void;
    count: (server: string, method: string, outcome: ServerOutcome) => void;
  },
): AggregateEndpoint {
  const { upstream, timeouts } = config;
  const servers = (config.upstreams ?? []).map((server, i) => {
    const spec = resolveUpstream({ ...server, maxJsonDepth: upstream.maxJsonDepth }, o.demoEntry, `upstreams[${i}]`);
    const target = describeUpstream(spec);
    return new AggregateServer({
      name: server.name,
      prefix: server.prefix ?? server.name,
      required: server.required,
      target,
      requestTimeoutMs: timeouts.requestMs,
      inputTimeoutMs: config.modern.inputTimeoutMs,
      modernMeta: modernEnvelope({}, CLIENT_INFO),
      connector: (witness) =>
        createConnector(
          config,
          { spec, target, era: server.era },
          { getFollowsClient: false, log: o.log.child({ server: server.name }), witness },
        ),
      changed: () => {
        const down = endpoint.downRequired();
        o.witness(down === undefined, down);
      },
      count: (method, outcome) => o.count(server.name, method, outcome),
    });
  });
  const endpoint = new AggregateEndpoint(servers, upstream.nameSeparator, { initializeTimeoutMs: timeouts.initializeMs, log: o.log });
  return endpoint;
}

/** The cache of the upstream's list answers (upstream.listCache). */
export function createListCache(config: Config, log: Logger): ListCache {
  return new ListCache({ ...config.upstream.listCache, stateless: config.upstream.stateless, log: log.child({ listCache: true }) });
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
function createPool(config: Config, connector: UpstreamEndpoint, log: Logger, observers: Observers): UpstreamPool {
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
function createToolCatalog(config: Config, connector: UpstreamEndpoint, pool: UpstreamPool | undefined, pins: ToolPins): ToolCatalog {
  const timeoutMs = config.timeouts.requestMs;
  return new ToolCatalog({
    pins,
    lister: async (who) => {
      if (!pool || speaksModern(connector.era.now ?? (await connector.era.resolve())))
        return toolLister(connector.modern, timeoutMs, { meta: modernEnvelope({}, CLIENT_INFO) });
      const principal = who.principal ?? '';
      const lease = await pool.acquire({ principal, clientKey: who.clientKey ?? principal, capabilities: {} });
      return toolLister(lease.client, timeoutMs, { release: () => lease.release() });
    },
  });
}

/** What the proxy keeps of the upstream beyond the connector: the pool and what draws on it. */
export interface UpstreamSessions {
  /** Present when modern clients are served or a stdio upstream's sessions are shared. */
  pool: UpstreamPool | undefined;
  /** Legacy sessions that borrow pooled processes (`upstream.sessions: shared`, stdio). */
  shared: SharedUpstreamSessions | undefined;
  /** What the proxy knows of the upstream's tools (kept across reloads: it describes the upstream). */
  tools: ToolCatalog;
  /** List requests through the pool, answered from the list cache (a pooled session's answer depends on its capabilities too). */
  lists: UpstreamCall | undefined;
}

/** The pool, the shared sessions and the tool catalog the config asks for. */
export function createUpstreamSessions(
  config: Config,
  connector: UpstreamEndpoint,
  o: { log: Logger; observers: Observers; lists: ListCache; counters: Metrics['counters'] },
): UpstreamSessions {
  const sharing = config.upstream.sessions === 'shared' && connector.kind === 'stdio';
  const pool = config.modern.enabled || sharing ? createPool(config, connector, o.log, o.observers) : undefined;
  const lists = pool && { call: o.lists.wrap(pool, (caller) => upstreamCapabilities(caller.capabilities)) };
  const shared = pool && lists && sharing ? new SharedUpstreamSessions(pool, lists, config.timeouts.requestMs) : undefined;
  // Loaded now: a pins file that cannot be used stops the start (PinsFileError, a ProxyStartError here).
  let pins: ToolPins;
  try {
    pins = new ToolPins({ mode: config.upstream.toolChanges, file: config.upstream.toolPins, counters: o.counters, log: o.log });
  } catch (err) {
    if (err instanceof PinsFileError) throw new ProxyStartError(`upstream.toolPins: ${err.message}`);
    throw err;
  }
  return { pool, shared, tools: createToolCatalog(config, connector, pool, pins), lists };
}
