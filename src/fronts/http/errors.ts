/**
 * The one place the HTTP front turns a refusal into a response: the error's HTTP status, its
 * JSON-RPC wire form, `Retry-After` for refusals worth retrying, and `Connection: close` when the
 * request's body was not read (the proxy does not wait for a body it will not use).
 */
import type { FastifyReply } from 'fastify';
import { ProxyError, toJsonRpcError, type Era } from '../../jsonrpc/errors.js';
import { errorResponse, type JsonRpcId } from '../../jsonrpc/message.js';
import { refusalOf } from './connections.js';

/** `err`: a ProxyError, or anything else as a 500 with an internal error; `era`: the wire form the client expects. */
export function sendError(reply: FastifyReply, err: unknown, id: JsonRpcId | null = null, era: Era = 'legacy'): FastifyReply {
  const known = err instanceof ProxyError ? err : undefined;
  if (known?.retryAfter && !reply.hasHeader('retry-after')) reply.header('retry-after', String(known.retryAfter));
  if (!reply.request.raw.complete || refusalOf(reply.request.raw.socket)) reply.header('connection', 'close');
  return reply.code(known?.httpStatus ?? 500).type('application/json').send(JSON.stringify(errorResponse(id, toJsonRpcError(err, era))));
}

/** What Fastify itself refuses (body too large, wrong media type, a plugin's 429) as the proxy's errors. */
export function fastifyError(err: { statusCode?: number; code?: string; message: string }, maxBodyBytes: number): ProxyError {
  if (err.statusCode === 429) return new ProxyError('RATE_LIMITED', err.message);
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE') return new ProxyError('BODY_TOO_LARGE', `Request body is larger than the limit of ${maxBodyBytes} bytes`);
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') return new ProxyError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  return new ProxyError('BAD_REQUEST', err.message);
}
