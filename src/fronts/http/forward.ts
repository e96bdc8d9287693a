/**
 * A request that reached a replica other than the one holding what it is for (a modern retry's
 * parked call, a task, a legacy session whose upstream runs there) is forwarded there, once, and
 * its answer (JSON or an SSE stream) relayed back as it comes. The owner's URL travels sealed in
 * what the client presents (requestState, task id, session token), so replicas need no list of
 * one another and a balancer needs no stickiness. The owner authenticates the forwarded request
 * itself (the client's headers go along), and counts it as the client this replica saw: that
 * address goes sealed (./replica-client.ts), never the client's own X-Forwarded-For.
 */
import { pipeline } from 'node:stream/promises';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import { toJsonRpcError, type ProxyError } from '../../jsonrpc/errors.js';
import { errorResponse, type JsonRpcId } from '../../jsonrpc/message.js';
import type { Era } from '../../mcp/era.js';
import { httpStatusOf } from '../../mcp/http-status.js';
import { clientAddress } from './client-key.js';
import { CLIENT_HEADER, sealClient } from './replica-client.js';
import type { Sealer } from '../../sealing/sealer.js';
import { takeOver } from './replies.js';

/** Marks a forwarded request: its receiver never forwards it again (a client that sends it only keeps its request here). */
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
const RELAYED_BACK = ['content-type', 'cache-control', 'retry-after', 'www-authenticate', 'mcp-session-id', 'x-accel-buffering'];
/** Without `wait`, the owner's own timers decide how long a call may take; undici's 300 s defaults would cut it off. */
const dispatcher = new Agent({ headersTimeout: 0, bodyTimeout: 0, keepAliveTimeout: 10_000 });

/** Where a request goes: the replica holding it, and its URL as other replicas reach it. */
export interface Owner {
  replica: string;
  url: string;
}

/** What the owner could not do, as the client's error: it could not be reached, or its answer did not begin in time. */
export type ForwardFailure = 'unreachable' | 'timeout';

export interface Forwarding {
  /** This replica's name (FORWARDED_HEADER) and the secret that seals the client's address for the owner. */
  replica: string;
  sealer: Sealer;
  /** The id the error goes with, and its era's wire form. */
  id: JsonRpcId | null;
  era: Era;
  /** How long the owner may take to begin its answer, and then between two of its bytes (none: its own timers decide). */
  wait?: { beginMs: number; gapMs: number };
  /** The error the client gets when forwarding fails before the answer began. */
  failed(why: ForwardFailure, detail: string): ProxyError;
  log: Logger;
}

/** Whether the request came forwarded by another replica (or a client posing as one: then it is only not forwarded on). */
export function wasForwarded(req: FastifyRequest): boolean {
  return req.headers[FORWARDED_HEADER] !== undefined;
}

/** Sends `req` (its method, headers and body as this replica read them, within its limits) to `owner` and relays the answer. */
export async function forwardTo(owner: Owner, req: FastifyRequest, reply: FastifyReply, o: Forwarding): Promise<void> {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.headers)) {
    // A client's own mcp-proxy-* headers would pose as this replica's.
    if (typeof value === 'string' && !NOT_FORWARDED.has(name) && !name.startsWith('proxy-') && !name.startsWith('mcp-proxy-'))
      headers[name] = value;
  }
  headers[FORWARDED_HEADER] = o.replica;
  headers[CLIENT_HEADER] = sealClient(o.sealer, clientAddress(req), owner.replica);
  const abort = new AbortController();
  takeOver(reply);
  reply.raw.once('close', () => abort.abort());
  const method = req.method as 'GET' | 'POST' | 'DELETE';
  try {
    const res = await request(owner.url, {
      method,
      headers,
      body: method === 'POST' ? (req.body as string) : undefined,
      signal: abort.signal,
      dispatcher,
      ...(o.wait ? { headersTimeout: o.wait.beginMs, bodyTimeout: o.wait.gapMs } : {}),
    });
    const back: Record<string, string> = {};
    for (const name of RELAYED_BACK) if (typeof res.headers[name] === 'string') back[name] = res.headers[name];
    reply.raw.writeHead(res.statusCode, back);
    reply.raw.flushHeaders();
    await pipeline(res.body, reply.raw);
  } catch (err) {
    if (abort.signal.aborted) return;
    const code = (err as { code?: string }).code;
    const why: ForwardFailure = code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT' ? 'timeout' : 'unreachable';
    o.log.warn({ owner: owner.replica, why, err: (err as Error).message }, 'could not forward a request to the replica holding it');
    // The answer had begun: the client sees its stream break, as it would have at the owner.
    if (reply.raw.headersSent) return void reply.raw.destroy();
    const error = o.failed(why, why === 'timeout' ? `its answer did not begin within ${o.wait?.beginMs} ms` : (err as Error).message);
    const body = JSON.stringify(errorResponse(o.id, toJsonRpcError(error, o.era)));
    const status = why === 'timeout' ? 504 : httpStatusOf({ refused: error });
    reply.raw.writeHead(status, { 'content-type': 'application/json' }).end(body);
  }
}
