/** Wiring of the modern front: the handler of 2026-07-28 requests over the pool, with its listen hub. */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import type { FilterChain } from '../core/filters.js';
import type { HeldBytes } from '../core/held-bytes.js';
import { ModernHandler } from '../fronts/modern/handler.js';
import { ListenHub } from '../fronts/modern/listen.js';
import type { Sealer } from '../sealing/sealer.js';
import type { UpstreamEndpoint } from '../upstream/connector.js';
import type { UpstreamCall } from '../upstream/call.js';
import type { UpstreamPool } from '../upstream/pool.js';
import type { ToolCatalog } from '../upstream/tool-catalog.js';
import { taskSessionShares } from './upstream.js';

export interface ModernFront {
  handler: ModernHandler;
  hub: ListenHub;
}

/** The modern-era handler over the pool, with its listen hub. */
export function createModernHandler(
  config: Config,
  pool: UpstreamPool,
  /** List requests through the pool, answered from the list cache. */
  lists: UpstreamCall,
  connector: UpstreamEndpoint,
  tools: ToolCatalog,
  filters: () => FilterChain,
  log: Logger,
  replica: { sealer: Sealer; replicaId: string; replicaUrl: () => string | undefined },
  held: HeldBytes,
): ModernFront {
  const hub = new ListenHub(pool, filters, log, config.timeouts.requestMs);
  const handler = new ModernHandler({
    pool,
    lists,
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
