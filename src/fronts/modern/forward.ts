/**
 * A modern retry (requestState + inputResponses), or a request for a task, that reached a replica
 * other than the one holding the parked call or the task is forwarded there, once: the owner's
 * URL travels sealed in the requestState or task id, so replicas need no list of one another and
 * a balancer needs no stickiness. The owner authenticates the forwarded request itself (the
 * client's headers go along), and counts it as the client this replica saw: that address goes
 * sealed (../http/replica-client.ts), never the client's own X-Forwarded-For.
 */
import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import { takeOver } from '../http/replies.js';
import { CLIENT_HEADER } from '../http/replica-client.js';
import { ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { errorResponse, type JsonRpcId } from '../../jsonrpc/message.js';
import { httpStatusOf } from '../../mcp/http-status.js';

/** Marks a forwarded request: its receiver never forwards it again. */
export const FORWARDED_HEADER = 'mcp-proxy-forwarded-by';

/** Hop-by-hop headers, and what says where the client is: only the sealed address says that to the owner. */
const NOT_FORWARDED = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'x-forwarded-for',
  'forwarded',
  'x-real-ip',
]);
const RELAYED_BACK = ['content-type', 'cache-control', 'retry-after', 'www-authenticate'];
/** The owner's own timers decide how long a call may take; undici's 300 s defaults would cut it off. */
const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 10_000 });

/** Where a request goes: the replica holding its parked call (a retry) or its task. */
export interface Owner {
  replica: string;
  url: string;
  holds: 'call' | 'task';
}

/** The forwarding replica: its name, and the client's address sealed for the owner (CLIENT_HEADER). */
export interface Forwarder {
  replica: string;
  client: string;
}

export async function forwardToOwner(
  target: Owner,
  id: JsonRpcId,
  req: FastifyRequest,
  reply: FastifyReply,
  self: Forwarder,
  log: Logger,
): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    // A client's own mcp-proxy-* headers would pose as this replica's.
    if (typeof value === 'string' && !NOT_FORWARDED.has(name) && !name.startsWith('proxy-') && !name.startsWith('mcp-proxy-'))
      headers[name] = value;
  }
  headers[FORWARDED_HEADER] = self.replica;
  headers[CLIENT_HEADER] = self.client;
  const abort = new AbortController();
  takeOver(reply);
  reply.raw.once('close', () => abort.abort());
  try {
    const res = await request(target.url, { method: 'POST', headers, body: req.body as string, signal: abort.signal, dispatcher });
    const back: Record<string, string> = {};
    for (const name of RELAYED_BACK) if (typeof res.headers[name] === 'string') back[name] = res.headers[name];
    reply.raw.writeHead(res.statusCode, back);
    reply.raw.flushHeaders();
    await pipeline(res.body, reply.raw);
  } catch (err) {
    if (abort.signal.aborted) return;
    log.warn(
      { owner: target.replica, holds: target.holds, err: (err as Error).message },
      `could not forward a request to the replica holding its ${target.holds}`,
    );
    if (reply.raw.headersSent) return void reply.raw.destroy();
    const error =
      target.holds === 'task'
        ? new ProxyError(
            'TASK_NOT_FOUND',
            `Failed to retrieve task: the replica holding it ("${target.replica}") ` +
              'cannot be reached, and the task is lost with it: start the call again',
          )
        : new ProxyError(
            'INVALID_REQUEST_STATE',
            `The replica holding this call ("${target.replica}") cannot be reached: send the request again without requestState`,
          );
    const body = JSON.stringify(errorResponse(id, toJsonRpcError(error, 'modern')));
    reply.raw.writeHead(httpStatusOf({ refused: error }), { 'content-type': 'application/json' }).end(body);
  }
}
