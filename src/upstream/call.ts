/**
 * The one way the proxy calls an upstream with a request of its own or a client's: one request
 * in, its answer out, failures typed. A 2026-07-28 server over HTTP (modern-http.ts) or stdio
 * (modern-stdio.ts), a legacy upstream session the proxy initialized (client.ts: a pooled or
 * shared one) and a client's relayed session (core/relay.ts) all implement it. Beneath it, the
 * transports only carry frames (types.ts: UpstreamConnection). A call on a pooled session that may
 * ask the client for input keeps the session's richer handle (UpstreamClient.request), which holds
 * the call's time limit while the client answers.
 */
import { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcRequest, JsonRpcResponse } from '../jsonrpc/message.js';
import type { ParamHeaders } from '../mcp/http-headers.js';
import type { CallSignal } from './call-abort.js';
import type { McpResult } from '../transformers/contract.js';

export interface UpstreamAnswer {
  /** The response, with the upstream's bytes. */
  frame: Frame;
  /** Its HTTP status (a rejection comes with a 4xx and a JSON-RPC error body); 200 where the transport has none. */
  status: number;
}

/** Whom a call is made for: the principal, the client per-client limits count, and the capabilities it declared. */
export interface Caller {
  principal: string;
  clientKey: string;
  capabilities: Record<string, unknown>;
}

export interface CallOptions {
  /**
   * Whom the call serves: a pooled upstream borrows a session of theirs, and a list answer may be shared with
   * their other calls (list-cache.ts). None: the proxy's own call, never answered from a cache.
   */
  caller?: Caller;
  /** Aborts the call (the client left, or cancelled): it is cancelled upstream, and the call rejects with the signal's reason. */
  signal?: CallSignal;
  /** No answer within this time (progress restarts it) → REQUEST_TIMEOUT, and the request is cancelled upstream. */
  timeoutMs: number;
  /** The tool's Mcp-Param-* headers (header, lower case → argument), for a tools/call over Streamable HTTP. */
  paramHeaders?: ParamHeaders;
  /** A notification about the call (progress, a log message). */
  onNotification?(frame: Frame): void;
}

export interface UpstreamCall {
  /** Sends one request; resolves with its answer, rejects with a ProxyError when none can be had (or the signal's reason). */
  call(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer>;
}

/** The result of an answer, or the upstream's error as a failure saying which request it refused. */
export function resultOf({ frame }: UpstreamAnswer, method: string): McpResult {
  const msg = frame.msg as JsonRpcResponse;
  if (msg.error) throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream refused ${method}: ${msg.error.message}`);
  return msg.result ?? {};
}
