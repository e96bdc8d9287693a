/**
 * Modern requests to a legacy upstream: each goes through a pooled upstream session (ids
 * remapped, the protocol's own `_meta` stripped), its input requests bridged through
 * `input_required` rounds (input-rounds.ts), and its result completed with what the revision
 * requires (`resultType`, serverInfo, cache hints; complete.ts). `server/discover` is answered
 * from the upstream's initialize result, `subscriptions/listen` by the proxy (listen.ts).
 */
import type { Logger } from 'pino';
import type { EraCompletion, Exchange } from '../../core/exchange.js';
import { modernUpstreamError, ProxyError, URL_ELICITATION_REQUIRED } from '../../jsonrpc/errors.js';
import {
  errorResponse,
  isObject,
  type Frame,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../../jsonrpc/message.js';
import { INPUT_METHODS, passesLogLevel, SUPPORTED_VERSIONS } from '../../mcp/eras.js';
import type { RequestContext } from '../../mcp/request-context.js';
import type { McpResult } from '../../transformers/contract.js';
import type { UpstreamServer } from '../../upstream/era.js';
import type { UpstreamCall } from '../../upstream/call.js';
import { CallAbort, onAbort } from '../../upstream/call-abort.js';
import { LIST_METHODS } from '../../upstream/list-cache.js';
import type { UpstreamPool } from '../../upstream/pool.js';
import type { Completion } from './complete.js';
import type { InputRounds } from './input-rounds.js';
import type { TaskWatch } from './listen.js';
import type { ModernReply } from './reply.js';
import type { Ran, UpstreamRoute } from './route.js';

export interface PooledRouteOptions {
  pool: UpstreamPool;
  /** List requests, through the list cache: they never ask the client for input. */
  lists: UpstreamCall;
  requestTimeoutMs: number;
  rounds: InputRounds;
  completion: Completion;
  /** Serves `subscriptions/listen` (listen.ts). */
  listen(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, tasks?: TaskWatch): Promise<void>;
  log: Logger;
}

export class PooledRoute implements UpstreamRoute {
  constructor(private readonly o: PooledRouteOptions) {}

  server(): Promise<UpstreamServer> {
    return this.o.pool.server();
  }

  /** A legacy server's own tasks are not the extension: the proxy's serve modern clients. */
  ownTasks(): Promise<boolean> {
    return Promise.resolve(true);
  }

  async run(req: JsonRpcRequest, exchange: Exchange, ctx: RequestContext, reply: ModernReply, within?: number): Promise<Ran> {
    const { rounds } = this.o;
    const params = exchange.request.params ?? {};
    if (LISTS.has(exchange.method) && params.requestState === undefined)
      return this.list(exchange.request, upstreamParams(params, ctx), ctx, reply);
    const resumed = params.requestState !== undefined ? await rounds.resume(req, ctx, reply, within) : 'again';
    if (resumed === 'declined') {
      const declined = { code: URL_ELICITATION_REQUIRED, message: 'The user did not complete the URL elicitation the server required' };
      return { answer: errorFrame(req.id, declined) };
    }
    // After a URL round no call waits: accepted, the request goes upstream again.
    let { call, step } =
      resumed === 'again' ? await rounds.start(exchange.method, upstreamParams(params, ctx), ctx, reply, within) : resumed;
    if (step.kind === 'done' && 'failure' in step.outcome && step.outcome.failure.code === 'UPSTREAM_SESSION_EXPIRED' && call.round === 0) {
      // The upstream forgot the pooled session (404) without running the request: once more on a new one.
      ({ call, step } = await rounds.start(exchange.method, upstreamParams(params, ctx), ctx, reply, within));
    }
    if (step.kind === 'input') return { answer: result(req.id, rounds.ask(req, ctx, call, step)) };
    if (step.kind === 'running') {
      rounds.release(call);
      return { task: call, next: step.next, shape: exchange.shapeLater };
    }
    const { outcome } = step;
    if ('failure' in outcome) throw outcome.failure;
    const res = outcome.response;
    exchange.screen(res, this.o.log);
    if (res.error?.code === URL_ELICITATION_REQUIRED && INPUT_METHODS.has(req.method)) {
      const round = rounds.urlRound(req, ctx, res.error.data);
      if (round) return { answer: result(req.id, round) };
    }
    return { response: res, frame: outcome.frame, completion: this.completion(await this.server(), call.round > 0) };
  }

  /** A list request: answered from the list cache, or through a pooled session it borrows for the call. */
  private async list(req: JsonRpcRequest, params: Record<string, unknown>, ctx: RequestContext, reply: ModernReply): Promise<Ran> {
    const signal = new CallAbort();
    onAbort(reply.cancellation, () => signal.abort(new ProxyError('CLIENT_GONE', 'The client closed the request')));
    const { frame } = await this.o.lists.call(
      { jsonrpc: '2.0', id: req.id, method: req.method, params },
      {
        caller: { principal: ctx.principal ?? '', clientKey: ctx.clientKey ?? ctx.principal ?? '', capabilities: ctx.capabilities },
        signal,
        timeoutMs: this.o.requestTimeoutMs,
        onNotification: ({ msg }) => {
          const n = msg as JsonRpcNotification;
          if (passesLogLevel(n, ctx.logLevel)) reply.notify(n);
        },
      },
    );
    return { response: frame.msg as JsonRpcResponse, frame, completion: this.completion(await this.server(), false) };
  }

  /**
   * A legacy answer completed for a modern client (complete.ts), `afterInput`: shaped by the client's input, so
   * never cached. An error is renamed where the revision forbids its code, and always written again (the
   * upstream's id is the pool's).
   */
  private completion(server: UpstreamServer, afterInput: boolean): EraCompletion {
    const { completion } = this.o;
    return {
      error: (id, error) => errorFrame(id, error),
      completeBytes: (id, method, frame) => completion.answer(id, method, frame, server, afterInput),
      complete: (a) => completion.result(a.method, a.shaped, server, afterInput),
    };
  }

  async discover(req: JsonRpcRequest, _ctx: RequestContext, reply: ModernReply, added: Record<string, unknown>): Promise<void> {
    const server = await this.server();
    const { tasks: _legacyTasks, ...capabilities } = (server.capabilities ?? {}) as Record<string, unknown>;
    const extensions = { ...(isObject(capabilities.extensions) ? capabilities.extensions : {}), ...added };
    const discovered: McpResult = {
      supportedVersions: SUPPORTED_VERSIONS,
      capabilities: Object.keys(extensions).length ? { ...capabilities, extensions } : capabilities,
      ...(typeof server.instructions === 'string' ? { instructions: server.instructions } : {}),
    };
    reply.answer(result(req.id, this.o.completion.result('server/discover', discovered, server)));
  }

  listen(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, tasks: TaskWatch | undefined): Promise<void> {
    return this.o.listen(req, ctx, reply, tasks);
  }
}

const LISTS = new Set<string>(LIST_METHODS);

function errorFrame(id: JsonRpcId, error: JsonRpcErrorObject): Frame {
  return { msg: errorResponse(id, modernUpstreamError(error)) };
}

function result(id: JsonRpcId, result: McpResult): Frame {
  return { msg: { jsonrpc: '2.0', id, result } };
}

/**
 * The request's params as the upstream sees them: no protocol `_meta`, no input round fields, and no
 * legacy `task` parameter (SEP-2663: a modern request carrying it is served as if it did not).
 */
function upstreamParams(params: Record<string, unknown>, ctx: RequestContext): Record<string, unknown> {
  const { _meta: _m, inputResponses: _i, requestState: _r, task: _t, ...rest } = params;
  const meta = ctx.progressToken === undefined ? ctx.passMeta : { ...ctx.passMeta, progressToken: ctx.progressToken };
  return meta ? { ...rest, _meta: meta } : rest;
}
