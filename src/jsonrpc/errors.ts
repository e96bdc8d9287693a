/**
 * The proxy's own failures: a typed error with a stable string code, and the one function that
 * turns any error into a JSON-RPC error object. An upstream's JSON-RPC error is data and is
 * relayed as it came; it never passes through here.
 */
import { INTERNAL_ERROR, INVALID_REQUEST, type JsonRpcErrorObject } from './message.js';

/** -32000 and -32001 are the codes the official SDKs use for these two situations. */
export const CONNECTION_CLOSED = -32000;
export const REQUEST_TIMEOUT = -32001;

export type ProxyErrorCode =
  | 'UPSTREAM_CLOSED'
  | 'UPSTREAM_START_FAILED'
  | 'UPSTREAM_SESSION_EXPIRED'
  | 'UPSTREAM_UNREACHABLE'
  | 'UPSTREAM_PROTOCOL'
  | 'REQUEST_TIMEOUT'
  | 'CLIENT_GONE'
  | 'DUPLICATE_ID'
  | 'SHUTTING_DOWN'
  | 'TRANSFORM_FAILED';

const WIRE_CODES: Record<ProxyErrorCode, number> = {
  UPSTREAM_CLOSED: CONNECTION_CLOSED,
  UPSTREAM_START_FAILED: CONNECTION_CLOSED,
  UPSTREAM_SESSION_EXPIRED: CONNECTION_CLOSED,
  UPSTREAM_UNREACHABLE: CONNECTION_CLOSED,
  UPSTREAM_PROTOCOL: INTERNAL_ERROR,
  REQUEST_TIMEOUT: REQUEST_TIMEOUT,
  CLIENT_GONE: CONNECTION_CLOSED,
  DUPLICATE_ID: INVALID_REQUEST,
  SHUTTING_DOWN: CONNECTION_CLOSED,
  TRANSFORM_FAILED: INTERNAL_ERROR,
};

export class ProxyError extends Error {
  constructor(
    readonly code: ProxyErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ProxyError';
  }
}

/** The wire form of any error; `data.code` carries the stable string code for proxy errors. */
export function toJsonRpcError(err: unknown): JsonRpcErrorObject {
  if (err instanceof ProxyError) {
    return { code: WIRE_CODES[err.code], message: err.message, data: { code: err.code, ...err.details } };
  }
  return { code: INTERNAL_ERROR, message: `Internal proxy error: ${(err as Error)?.message ?? String(err)}` };
}
