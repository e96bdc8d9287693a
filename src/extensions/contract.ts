/**
 * The filter contract: what the request core asks of an extension (content negotiation, server
 * variants, or an operator's own), the same for both eras. A filter keeps state per legacy
 * session (negotiated at `initialize`) or per modern request (from its `_meta`), built by
 * `negotiate` from the client's capabilities; the core hands that state back on every hook.
 * Hooks return a replacement, or undefined for "unchanged": a client that negotiates nothing
 * gets the upstream's bytes.
 */
import type { Logger } from 'pino';
import { isObject, type JsonRpcErrorObject, type JsonRpcNotification, type JsonRpcRequest } from '../jsonrpc/message.js';
import type { Era } from '../mcp/era.js';
import type { Assigned } from '../mcp/features.js';
import type { McpResult } from '../transformers/contract.js';
import type { ToolView } from '../upstream/tool-catalog.js';

/** What a filter sees of one request: who asked, what for, in which variant, and its own state. */
export interface FilterContext<S> {
  era: Era;
  /** The request's method and what it names (tool or prompt name, resource URI). */
  method: string;
  name?: string;
  /** The server variant the request was made in (a filter's onRequest may set it). */
  variant?: string;
  /** The request's W3C traceparent, when it is traced. */
  traceparent?: string;
  /** For onResult: the result as the upstream sent it (a filter before this one may have replaced it). */
  upstreamResult?: McpResult;
  /** A request of the proxy's own to the upstream session this request went to (legacy sessions; never seen by the client). */
  ask?: UpstreamAsk;
  /** What the proxy knows of the upstream's tools, as this session (legacy) or principal (modern) is shown them. */
  tools: ToolView;
  state: S;
  log: Logger;
}

/** Sends a request of the proxy's own upstream: its result, or a rejection (error, timeout, session gone). */
export type UpstreamAsk = (method: string, params: Record<string, unknown>) => Promise<McpResult>;

/** A filter's verdict on a request: an error to answer, a rewritten request, and the variant it runs in. */
export type RequestVerdict = { error: JsonRpcErrorObject } | { request?: JsonRpcRequest; variant?: string } | undefined;

export interface Filter<S = unknown> {
  /** For logs and metrics. */
  readonly name: string;
  /**
   * This filter's state for a session or a request, from the client's capabilities (untrusted:
   * check every field) and what its host or the operator assigned it (the client's own
   * declaration wins wherever both speak).
   */
  negotiate(capabilities: Record<string, unknown>, era: Era, log: Logger, assigned: Assigned): S;
  /**
   * What the filter learns from the upstream's initialize result (it implements the extension itself): for
   * every session and modern request.
   */
  learnUpstream?(result: McpResult, state: S): void;
  /** A legacy client's initialize result as the filter has it (the extension advertised), or undefined for unchanged. */
  onInitializeResult?(result: McpResult, state: S, log: Logger): McpResult | undefined;
  /** What it advertises in `server/discover` (entries of `capabilities.extensions`). */
  discover?(state: S): Record<string, unknown> | undefined;
  onRequest?(req: JsonRpcRequest, ctx: FilterContext<S>): RequestVerdict;
  onResult?(result: McpResult, ctx: FilterContext<S>): McpResult | undefined | Promise<McpResult | undefined>;
  /**
   * Whether onResult would look at this request's result (absent: always). A result no filter
   * looks at is relayed without being decoded.
   */
  wantsResult?(ctx: FilterContext<S>): boolean;
  /** A replacement for an upstream error, or undefined to relay it as is. */
  onError?(error: JsonRpcErrorObject, ctx: FilterContext<S>): JsonRpcErrorObject | undefined;
  /** Notifications to send instead of an upstream notification (never progress: it keeps its call alive), or undefined to relay it. */
  onNotification?(n: JsonRpcNotification, state: S): JsonRpcNotification[] | undefined;
}

/** `capabilities.extensions` of an initialize result ({} when absent or malformed). */
export function extensionsOf(result: McpResult): Record<string, unknown> {
  const capabilities = result.capabilities as { extensions?: unknown } | undefined;
  const extensions = capabilities?.extensions;
  return isObject(extensions) ? extensions : {};
}
