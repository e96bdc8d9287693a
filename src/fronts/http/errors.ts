/**
 * The one place the HTTP front turns a refusal into a response: the error's HTTP status, its
 * JSON-RPC wire form, `Retry-After` for refusals worth retrying, and `Connection: close` when the
 * request's body was not read (the proxy does not wait for a body it will not use).
 */
import type { Socket } from 'node:net';
import type { FastifyReply } from 'fastify';
import { ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { errorResponse, type JsonRpcId } from '../../jsonrpc/message.js';
import type { Era } from '../../mcp/era.js';
import { httpStatusOf } from '../../mcp/http-status.js';
import { refusalOf } from './connections.js';

/** `err`: a ProxyError, or anything else as a 500 with an internal error; `era`: the wire form the client expects. */
export function sendError(reply: FastifyReply, err: unknown, id: JsonRpcId | null = null, era: Era = 'legacy'): FastifyReply {
  const known = err instanceof ProxyError ? err : undefined;
  if (known?.retryAfter && !reply.hasHeader('retry-after')) reply.header('retry-after', String(known.retryAfter));
  const socket = reply.request.raw.socket;
  if (refusalOf(socket)) reply.header('connection', 'close');
  else if (!reply.request.raw.complete) {
    reply.header('connection', 'close');
    lingerOnClose(socket);
  }
  return reply
    .code(httpStatusOf({ refused: err }))
    .type('application/json')
    .send(JSON.stringify(errorResponse(id, toJsonRpcError(err, era))));
}

/** How long a refused connection still takes (and drops) what its client sends after the answer. */
const LINGER_MS = 2000;

/**
 * Closes a connection whose client may still be sending the body it was refused for without a
 * reset: a reset can reach the client before the answer, and it then sees a broken pipe instead
 * of the refusal. The answer goes out, the proxy's side ends, and what still comes is read and
 * dropped until the client closes or LINGER_MS pass (what HTTP servers call a lingering close).
 */
function lingerOnClose(socket: Socket): void {
  socket.destroySoon = function (this: Socket) {
    this.end();
    this.resume();
    const timer = setTimeout(() => this.destroy(), LINGER_MS);
    timer.unref();
    this.once('close', () => clearTimeout(timer));
  };
}

/** What Fastify itself refuses (body too large, wrong media type, a plugin's 429) as the proxy's errors. */
export function fastifyError(err: { statusCode?: number; code?: string; message: string }, maxBodyBytes: number): ProxyError {
  if (err.statusCode === 429) return new ProxyError('RATE_LIMITED', err.message);
  if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE')
    return new ProxyError('BODY_TOO_LARGE', `Request body is larger than the limit of ${maxBodyBytes} bytes`);
  if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE')
    return new ProxyError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json');
  return new ProxyError('BAD_REQUEST', err.message);
}
