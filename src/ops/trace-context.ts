/**
 * W3C trace context across the proxy: a client's `traceparent` / `tracestate` HTTP headers are
 * carried into the request's `params._meta` (where MCP puts trace context, and the only place a
 * stdio upstream can see it), unless `_meta` already has one; an HTTP upstream also gets them
 * as headers. Malformed values are dropped. Nothing happens for requests without trace context.
 */
import { isObject, isRequest, type Frame } from '../jsonrpc/message.js';

const TRACEPARENT = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;
const MAX_TRACESTATE = 512;

export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

/** The trace context of HTTP headers (or `_meta`), when it is well-formed. */
export function traceContextOf(source: Record<string, unknown> | undefined): TraceContext | undefined {
  const parent = source?.traceparent;
  if (typeof parent !== 'string' || !TRACEPARENT.test(parent)) return undefined;
  const state = source?.tracestate;
  const tracestate = typeof state === 'string' && state.length <= MAX_TRACESTATE && /^[\x20-\x7e]*$/.test(state) ? state : undefined;
  return tracestate ? { traceparent: parent, tracestate } : { traceparent: parent };
}

/**
 * The request with the trace context in `params._meta`: unchanged when it has one of its own,
 * unless `replace` (the proxy traces the request: the upstream's parent is the proxy's span).
 */
export function withTraceContext(frame: Frame, trace: TraceContext, replace = false): Frame {
  const msg = frame.msg;
  if (!isRequest(msg)) return frame;
  const meta = msg.params?._meta ?? {};
  if (!isObject(meta) || ('traceparent' in meta && !replace)) return frame;
  return { msg: { ...msg, params: { ...msg.params, _meta: { ...meta, ...trace } } } };
}
