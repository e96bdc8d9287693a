/**
 * A legacy client's session on one upstream, in the era the upstream speaks: the bridge to a
 * 2026-07-28 server, or a legacy session (of its own, shared, or another replica's) that moves to
 * the bridge when the upstream refuses its initialize as only a 2026-07-28 server does. While the
 * era is still being asked, what the client sends waits.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import type { ServerEra } from '../mcp/era.js';
import type { UpstreamEndpoint } from './connector.js';
import { deferredConnection } from './deferred.js';
import { withModernFallback } from './era-fallback.js';
import type { ToolCatalog } from './tool-catalog.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

export interface ClientSessionOptions {
  who: { principal: string; clientKey: string };
  /** What the proxy knows of the upstream's tools (a 2026-07-28 upstream's Mcp-Param-* headers). */
  tools: ToolCatalog;
  requestTimeoutMs: number;
  /** How long a client gets to answer a modern upstream's input request. */
  inputTimeoutMs: number;
  /** A legacy session of the upstream; may throw a ProxyError when none can be had now. */
  legacy(events: UpstreamEvents): UpstreamConnection;
  /** Goes on with a session another replica started: it stays legacy. */
  resuming?: boolean;
  log: Logger;
}

export function clientSession(connector: UpstreamEndpoint, events: UpstreamEvents, o: ClientSessionOptions): UpstreamConnection {
  const era = connector.era.now;
  if (era) return sessionIn(connector, era, events, o);
  const known = connector.era.resolve().then((found) => () => sessionIn(connector, found, events, o));
  return deferredConnection(known, (err) =>
    events.onClose(err instanceof ProxyError ? err : new ProxyError('UPSTREAM_START_FAILED', String(err))),
  );
}

function sessionIn(connector: UpstreamEndpoint, era: ServerEra, events: UpstreamEvents, o: ClientSessionOptions): UpstreamConnection {
  const { who, tools } = o;
  const bridge = (ev: UpstreamEvents) =>
    connector.bridge(ev, {
      who,
      requestTimeoutMs: o.requestTimeoutMs,
      inputTimeoutMs: o.inputTimeoutMs,
      paramHeaders: (req) => tools.paramHeaders(req, who),
      toolsSeen: (result) => (result ? tools.learn(result) : tools.changed()),
      log: o.log,
    });
  if (era === 'modern') return bridge(events);
  if (!connector.era.found || o.resuming) return o.legacy(events);
  return withModernFallback(events, o.legacy, bridge, (error) => connector.era.tookRefusal(error));
}
