/**
 * The one place that decides the HTTP status an answer goes with, for every HTTP front and
 * either era. The proxy's own refusals take the status their code names (jsonrpc/errors.ts);
 * a 2026-07-28 upstream's rejection keeps its own; the rest follows the revision.
 */
import { MISSING_CLIENT_CAPABILITY, ProxyError } from '../jsonrpc/errors.js';
import { METHOD_NOT_FOUND, type JsonRpcErrorObject } from '../jsonrpc/message.js';

/** What an answer's status is decided from (one of them, or an answer's error, or nothing: a result). */
export interface StatusSource {
  /** The proxy refused or failed the request: a ProxyError's status, 500 for anything else. */
  refused?: unknown;
  /** The body was no JSON-RPC message the proxy can read. */
  unreadable?: boolean;
  /** The answer's JSON-RPC error, if it is one. */
  error?: Pick<JsonRpcErrorObject, 'code'>;
  /** The status a 2026-07-28 upstream answered a passed-through request with (200 over stdio, which has none). */
  upstreamStatus?: number;
}

export function httpStatusOf(answer: StatusSource): number {
  if ('refused' in answer) return answer.refused instanceof ProxyError ? answer.refused.httpStatus : 500;
  if (answer.unreadable) return 400;
  const { error, upstreamStatus } = answer;
  // The server's own rejections are the client's (-32021 with 400, -32601 with 404).
  if (upstreamStatus !== undefined && upstreamStatus >= 400 && upstreamStatus < 500) return upstreamStatus;
  // A missing capability found during a call is still a rejection of the request; an unknown
  // method is a 404 whoever found it (a legacy upstream's -32601 too), as the revision maps it.
  if (error?.code === MISSING_CLIENT_CAPABILITY) return 400;
  return error?.code === METHOD_NOT_FOUND ? 404 : 200;
}
