/**
 * What the proxy knows of one exchange: built once by the front that took the request (today
 * the modern handler, from the request's `_meta` and who sent it) and handed to what serves it
 * (input rounds, tasks, listen streams, pass-through, the filter chain, the pool, the upstream's
 * tool headers). It lives in mcp/, not core/, because parts below the core (the pool, the tool
 * headers) take it too. Filters still see their own FilterContext (docs/architecture.md): no
 * extension sees the principal.
 */
import type { Logger } from 'pino';
import type { ProgressToken } from './cancel-progress.js';
import type { Era } from './era.js';
import type { Assigned } from './features.js';

export interface RequestContext {
  era: Era;
  /** Who sent the request, as the front authenticated it ('' without authentication). */
  principal: string;
  /** What per-client limits count: the principal, or the client's address without authentication. */
  clientKey: string;
  /** The client's capabilities, as it declared them (untrusted). */
  capabilities: Record<string, unknown>;
  /** The tags and variant its host (MCP-Features) or the operator (a profile) assigned it. */
  assigned: Assigned;
  /** Severity index into LOG_LEVELS from which notifications/message are sent; undefined = none. */
  logLevel?: number;
  progressToken?: ProgressToken;
  /** The request's `_meta` without the protocol's own keys (its trace context among them): what the upstream may see. */
  passMeta: Record<string, unknown> | undefined;
  log: Logger;
}

/** What a request says about itself, before the front adds who sent it. */
export type RequestEnvelope = Pick<RequestContext, 'capabilities' | 'logLevel' | 'progressToken' | 'passMeta'>;
