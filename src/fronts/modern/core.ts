/**
 * The modern (2026-07-28) request core, shared by the HTTP and stdio fronts: one stateless
 * request in, one answer out. It serves `server/discover` from the upstream's initialize result,
 * forwards the rest through a pooled upstream session (ids remapped, the protocol's own `_meta`
 * stripped), bridges input requests through `input_required` rounds, and hands results through
 * the same variant and content-negotiation filters as legacy sessions, then adds what the
 * revision requires (`resultType`, cache hints, serverInfo).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { canonicalJson } from '../../jsonrpc/canonical.js';
import { modernUpstreamError, ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { errorResponse, type JsonRpcNotification, type JsonRpcRequest, type JsonRpcResponse } from '../../jsonrpc/message.js';
import type { Requester } from '../../core/context.js';
import { CACHEABLE_METHODS, INPUT_METHODS, LOG_LEVELS, META, MODERN_METHODS, MODERN_VERSIONS, modernContext, SUPPORTED_VERSIONS, type ModernContext } from '../../mcp/eras.js';
import type { FilterChain } from '../../core/filters.js';
import { traceContextOf } from '../../ops/trace-context.js';
import type { McpResult } from '../../transformers/contract.js';
import type { Sealer } from '../../sealing/sealer.js';
import { declaresInput, type UpstreamPool } from '../../upstream/pool.js';
import { paramHeadersOf } from './headers.js';
import { BridgedCall, type CallStep } from './mrtr.js';

export interface CacheHint {
  ttlMs: number;
  cacheScope: 'public' | 'private';
}

export interface ModernCoreOptions {
  pool: UpstreamPool;
  /** The filters requests run through, as the config says now. */
  filters(): FilterChain;
  requestTimeoutMs: number;
  /** How long a call parked for client input waits for the retry. */
  inputTimeoutMs: number;
  /** Seals `requestState` (shared by replicas when they share a secret). */
  sealer: Sealer;
  /** This replica's name, sealed into requestState so another replica can say where the call waits. */
  replicaId: string;
  /** Where other replicas reach this one (sealed into requestState, for forwarded retries); known once listening. */
  replicaUrl(): string | undefined;
  /** Most calls of one client parked waiting for its input at once. */
  parkedPerClient: number;
  /** Cache hints per method; `default` for the others. */
  cache: Record<string, CacheHint> & { default: CacheHint };
  /** Handles `subscriptions/listen` (src/fronts/modern/listen.ts). */
  listen?(req: JsonRpcRequest, ctx: ModernContext, reply: ModernReply): Promise<void>;
  log: Logger;
}

/** Where a modern request's answer and its notifications go (an HTTP reply, stdout). */
export interface ModernReply {
  /** A notification about this request (progress, a log message the request asked for). */
  notify(n: JsonRpcNotification): void;
  /** The answer; `refusal` when it is a limit's or a drain's refusal (HTTP: its status and Retry-After). */
  answer(res: JsonRpcResponse, refusal?: ProxyError): void;
  /** Fires when the client is gone or cancelled the request. */
  cancellation: Cancellation;
}

/** A one-shot cancellation signal; an AbortController per request would cost more than the rest of it. */
export class Cancellation {
  cancelled = false;
  private listeners: Array<() => void> | undefined;

  onCancel(fn: () => void): void {
    if (this.cancelled) fn();
    else (this.listeners ??= []).push(fn);
  }

  cancel(): void {
    if (this.cancelled) return;
    this.cancelled = true;
    const listeners = this.listeners ?? [];
    this.listeners = undefined;
    for (const fn of listeners) fn();
  }
}

const NEVER_CACHE: CacheHint = { ttlMs: 0, cacheScope: 'private' };
/** Pages of the upstream's tools/list read for the header check, at most. */
const MAX_TOOL_PAGES = 50;

/** What a requestState holds: the parked call, the round it answers, what it is bound to, and where it waits. */
interface RequestState {
  call: string;
  round: number;
  /** The request's method and a digest of its arguments: a state fits only the request that got it. */
  method: string;
  digest: string;
  /** Expiry, ms since the epoch. */
  exp: number;
  replica: string;
  /** Where that replica takes forwarded retries. */
  url?: string;
  /** Who got it: nobody else may resume the call. */
  principal: string;
}

export class ModernCore {
  /** Calls under way that may ask for input, by their random key (what a requestState names). */
  private readonly parked = new Map<string, BridgedCall>();
  /** Tools that mirror arguments into headers (x-mcp-header), learnt from tools/list results. */
  private readonly toolHeaders = new Map<string, Map<string, string>>();
  /** Whether toolHeaders holds the upstream's whole current tool list, and the listing under way. */
  private toolsListed = false;
  private listing: Promise<void> | undefined;
  /** Bumped by every change of the upstream's tools: a listing that started before one is stale. */
  private toolsGeneration = 0;

  constructor(private readonly opts: ModernCoreOptions) {}

  /** New cache hints (a config reload). */
  setCache(cache: ModernCoreOptions['cache']): void {
    this.opts.cache = cache;
  }

  get replicaId(): string {
    return this.opts.replicaId;
  }

  get log(): Logger {
    return this.opts.log;
  }

  /**
   * Mcp-Param-* header → argument for a tools/call, from the tool's listed input schema. The
   * upstream's tools are listed first when nothing has listed them yet (or since they changed):
   * the check never depends on a client having asked for tools/list.
   */
  async paramHeaders(req: JsonRpcRequest, ctx: ModernContext): Promise<Map<string, string> | undefined> {
    if (req.method !== 'tools/call' || typeof req.params?.name !== 'string') return undefined;
    // Listed once, and again after a change; a listing that fails refuses the call (fail closed: the header would go unchecked).
    if (!this.toolsListed) await (this.listing ??= this.listToolsUpstream(ctx).finally(() => (this.listing = undefined)));
    return this.toolHeaders.get(req.params.name);
  }

  /** The upstream's tool list changed: learn it again before the next header check (a listing under way does not count). */
  toolsChanged(): void {
    this.toolsListed = false;
    this.toolsGeneration++;
  }

  get parkedCount(): number {
    return this.parked.size;
  }

  /**
   * For a retry whose call waits on another replica that can be reached: that replica. Anything
   * else (no requestState, not valid, this replica's own, no URL) is left to `handle`.
   */
  ownerElsewhere(req: JsonRpcRequest, ctx: ModernContext): { replica: string; url: string } | undefined {
    const token = req.params?.requestState;
    if (typeof token !== 'string') return undefined;
    const state = this.opts.sealer.open<RequestState>('requestState', token);
    if (!state || state.replica === this.opts.replicaId || !state.url || state.principal !== (ctx.principal ?? '')) return undefined;
    return { replica: state.replica, url: state.url };
  }

  /** The context of a modern request from `who`; throws the modern rejection (unknown method: 404 on HTTP; bad `_meta`) when it has none. */
  requestContext(req: JsonRpcRequest, who: Requester): ModernContext {
    if (!MODERN_METHODS.has(req.method)) throw new ProxyError('METHOD_NOT_FOUND', `Method not found: ${req.method} is not part of protocol version ${MODERN_VERSIONS[0]}`);
    return { ...modernContext(req), ...who };
  }

  /** Serves one request; every outcome, including the proxy's own failures, ends in `reply.answer`. */
  async handle(req: JsonRpcRequest, ctx: ModernContext, reply: ModernReply): Promise<void> {
    try {
      if (req.method === 'subscriptions/listen' && this.opts.listen) return await this.opts.listen(req, ctx, reply);
      const result = req.method === 'server/discover' ? await this.discover(ctx) : await this.forward(req, ctx, reply);
      if ('error' in result) reply.answer(errorResponse(req.id, result.error as JsonRpcResponse['error'] & object));
      else reply.answer({ jsonrpc: '2.0', id: req.id, result: result.result });
    } catch (err) {
      if (!(err instanceof ProxyError)) this.opts.log.error({ err: (err as Error)?.message, method: req.method }, 'modern request failed');
      reply.answer(errorResponse(req.id, toJsonRpcError(err, 'modern')), err instanceof ProxyError && err.retryAfter ? err : undefined);
    }
  }

  close(): void {
    for (const call of [...this.parked.values()]) call.expire();
  }

  private async discover(ctx: ModernContext): Promise<{ result: McpResult }> {
    const server = await this.opts.pool.server();
    const negotiation = this.opts.filters().forRequest(ctx.clientCapabilities, server, this.opts.log);
    const { tasks: _legacyTasks, ...capabilities } = (server.capabilities ?? {}) as Record<string, any>;
    const extensions = { ...capabilities.extensions, ...negotiation.discoverExtensions() };
    const result: McpResult = {
      supportedVersions: SUPPORTED_VERSIONS,
      capabilities: Object.keys(extensions).length ? { ...capabilities, extensions } : capabilities,
      ...(typeof server.instructions === 'string' ? { instructions: server.instructions } : {}),
    };
    return { result: this.complete('server/discover', result, server) };
  }

  private async forward(req: JsonRpcRequest, ctx: ModernContext, reply: ModernReply): Promise<{ result: McpResult } | { error: unknown }> {
    const server = await this.opts.pool.server();
    const negotiation = this.opts.filters().forRequest(ctx.clientCapabilities, server, this.opts.log);
    const check = negotiation.onRequest(req);
    if (check && 'error' in check) return { error: check.error };
    const params = (check?.request ?? req).params ?? {};
    const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined;
    let { call, step } = params.requestState !== undefined ? await this.resume(req, ctx, reply) : await this.start(req.method, upstreamParams(params, ctx), ctx, reply);
    if (step.kind === 'done' && 'failure' in step.outcome && step.outcome.failure.code === 'UPSTREAM_SESSION_EXPIRED' && call.round === 0) {
      // The upstream forgot the pooled session (404) without running the request: once more on a new one.
      ({ call, step } = await this.start(req.method, upstreamParams(params, ctx), ctx, reply));
    }
    if (step.kind === 'input') return { result: this.inputRequired(req, ctx, call, step) };
    const { outcome } = step;
    if ('failure' in outcome) throw outcome.failure;
    const res = outcome.response;
    if (res.error) {
      const annotated = negotiation.annotateError(res.error, check?.scope) ?? res.error;
      return { error: modernUpstreamError(annotated) };
    }
    if (req.method === 'tools/list') this.learnToolHeaders(res.result);
    const traceparent = traceContextOf(ctx.passMeta)?.traceparent;
    const shaped = (await negotiation.shape(req.method, name, res.result ?? {}, check?.scope, traceparent)) ?? res.result ?? {};
    return { result: this.complete(req.method, shaped, server, call.round > 0) };
  }

  private async start(method: string, params: Record<string, unknown>, ctx: ModernContext, reply: ModernReply): Promise<{ call: BridgedCall; step: CallStep }> {
    const principal = ctx.principal ?? '';
    const client = ctx.client ?? principal;
    // A call that may ask for input gets a session of its own: the upstream's request then belongs to it alone.
    const exclusive = INPUT_METHODS.has(method) && declaresInput(ctx.clientCapabilities);
    // A call that may park frees its client's oldest waiting one first, so it finds a session.
    if (exclusive) await this.trimParked(client, this.opts.parkedPerClient - 1);
    const lease = await this.opts.pool.acquire({ principal, client, capabilities: ctx.clientCapabilities }, exclusive);
    if (reply.cancellation.cancelled) {
      lease.release();
      throw new ProxyError('CLIENT_GONE', 'The client cancelled the request before it reached the upstream');
    }
    // Random, never a counter: a requestState from before a restart names no call of this one.
    const key = randomBytes(16).toString('base64url');
    const call = new BridgedCall(lease, {
      key,
      principal,
      clientKey: client,
      method,
      params,
      clientCapabilities: ctx.clientCapabilities,
      timeoutMs: this.opts.requestTimeoutMs,
      inputTimeoutMs: this.opts.inputTimeoutMs,
      cancellation: reply.cancellation,
      onNotification: logFilter(ctx, reply),
      onForget: () => this.parked.delete(key),
      onExpired: () => this.opts.log.info({ method, call: key, inputTimeoutMs: this.opts.inputTimeoutMs }, 'a call waiting for client input got no retry in time; cancelled upstream'),
    });
    this.parked.set(key, call);
    return { call, step: await call.next() };
  }

  /** Parks the call and tells the client what it must supply, with the state that resumes it. */
  private inputRequired(req: JsonRpcRequest, ctx: ModernContext, call: BridgedCall, step: Extract<CallStep, { kind: 'input' }>): McpResult {
    // Calls started together may all reach this point: the cap holds here, whatever raced before.
    void this.trimParked(call.clientKey, this.opts.parkedPerClient, call);
    const state: RequestState = { call: call.key, round: call.round, ...binding(req), exp: Date.now() + this.opts.inputTimeoutMs, replica: this.opts.replicaId, url: this.opts.replicaUrl(), principal: ctx.principal ?? '' };
    const requestState = this.opts.sealer.seal('requestState', state);
    return { resultType: 'input_required', inputRequests: step.inputRequests, requestState };
  }

  private async resume(req: JsonRpcRequest, ctx: ModernContext, reply: ModernReply): Promise<{ call: BridgedCall; step: CallStep }> {
    const params = req.params!;
    if (typeof params.requestState !== 'string') throw new ProxyError('INVALID_REQUEST_STATE', 'Invalid params: requestState must be the string the server sent');
    const state = this.opts.sealer.open<RequestState>('requestState', params.requestState);
    const bound = binding(req);
    if (!state || state.method !== bound.method || state.digest !== bound.digest) {
      throw new ProxyError('INVALID_REQUEST_STATE', 'requestState is not valid for this request: it was altered, belongs to another request, or was issued by a proxy with another secret');
    }
    if (state.principal !== (ctx.principal ?? '')) throw new ProxyError('INVALID_REQUEST_STATE', 'requestState was issued to another client identity: send the request again without requestState');
    if (!(state.exp > Date.now())) throw new ProxyError('INVALID_REQUEST_STATE', 'requestState has expired: send the request again without requestState and inputResponses');
    if (state.replica !== this.opts.replicaId) {
      throw new ProxyError('INVALID_REQUEST_STATE', `The call this requestState resumes waits on replica "${state.replica}", which this one cannot forward to (set replicas.url on every replica): send the request again without requestState`);
    }
    const call = this.parked.get(state.call);
    if (!call || call.principal !== state.principal || call.round !== state.round || !call.awaitingInput) {
      throw new ProxyError('INVALID_REQUEST_STATE', 'No call is waiting for this requestState (it finished, timed out, or was answered already): send the request again without requestState');
    }
    const responses = params.inputResponses;
    if (typeof responses !== 'object' || responses === null || Array.isArray(responses)) {
      throw new ProxyError('INVALID_REQUEST_STATE', 'Invalid params: a retry with requestState needs inputResponses (an object keyed like inputRequests)');
    }
    return { call, step: await call.resume(responses as Record<string, unknown>, reply.cancellation, logFilter(ctx, reply)) };
  }

  /** Every page of the upstream's tools/list (at most MAX_TOOL_PAGES), into toolHeaders. */
  private async listToolsUpstream(ctx: ModernContext): Promise<void> {
    const principal = ctx.principal ?? '';
    const lease = await this.opts.pool.acquire({ principal, client: ctx.client ?? principal, capabilities: {} });
    const generation = this.toolsGeneration;
    try {
      let cursor: unknown;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const { outcome } = lease.client.request('tools/list', cursor === undefined ? {} : { cursor }, {}, this.opts.requestTimeoutMs);
        const done = await outcome;
        if ('failure' in done) throw done.failure;
        const result = done.response.result;
        if (!result) break; // no tools to list: nothing is mirrored
        this.learnToolHeaders(result, page === 0);
        cursor = result.nextCursor;
        if (typeof cursor !== 'string') break;
      }
      this.toolsListed = generation === this.toolsGeneration;
    } finally {
      lease.release();
    }
  }

  /**
   * Keeps at most `keep` of a client's calls waiting for its input (besides `spare`), giving up
   * the oldest (most likely abandoned: its requestState then resumes nothing), so that one client
   * holds at most `parkedPerClient` upstream sessions waiting on itself. Resolves once their
   * upstream sessions are free.
   */
  private async trimParked(client: string, keep: number, spare?: BridgedCall): Promise<void> {
    const waiting: BridgedCall[] = [];
    for (const call of this.parked.values()) if (call.clientKey === client && call.awaitingInput && call !== spare) waiting.push(call); // in the order they started
    const over = waiting.slice(0, Math.max(0, waiting.length - keep));
    for (const call of over) {
      this.opts.log.info({ call: call.key.slice(0, 8), parkedPerClient: this.opts.parkedPerClient }, 'a client has more calls waiting for its input than it may; its oldest is given up');
      call.expire();
    }
    await Promise.all(over.map((call) => call.done));
  }

  /**
   * Notes the header-mirrored arguments of listed tools. `fresh` (the first page of the proxy's
   * own listing) forgets earlier ones; a client's listing only adds and updates, so that it can
   * never make the proxy forget the tools on pages it did not ask for.
   */
  private learnToolHeaders(result: McpResult | undefined, fresh = false): void {
    const tools = result?.tools;
    if (!Array.isArray(tools)) return;
    if (fresh) this.toolHeaders.clear();
    for (const tool of tools as Array<Record<string, unknown>>) {
      if (typeof tool?.name !== 'string') continue;
      const headers = paramHeadersOf(tool.inputSchema);
      if (headers) this.toolHeaders.set(tool.name, headers);
      else this.toolHeaders.delete(tool.name);
    }
  }

  /** A complete result as the revision wants it: resultType, cache hints where cacheable, serverInfo. */
  private complete(method: string, result: McpResult, server: McpResult, afterInput = false): McpResult {
    const out: McpResult = { ...result, resultType: 'complete', _meta: { ...(result._meta as object), [META.serverInfo]: server.serverInfo } };
    if (CACHEABLE_METHODS.has(method)) {
      // What a client's input shaped is never served to anyone again from a cache.
      const hint = afterInput ? NEVER_CACHE : (this.opts.cache[method] ?? this.opts.cache.default);
      out.ttlMs = hint.ttlMs;
      out.cacheScope = hint.cacheScope;
    }
    return out;
  }
}

/**
 * The request's params as the upstream sees them: no protocol `_meta`, no MRTR fields, and no
 * legacy `task` parameter (SEP-2663: a modern request carrying it is served as if it did not).
 */
function upstreamParams(params: Record<string, unknown>, ctx: ModernContext): Record<string, unknown> {
  const { _meta: _m, inputResponses: _i, requestState: _r, task: _t, ...rest } = params;
  const meta = ctx.progressToken === undefined ? ctx.passMeta : { ...ctx.passMeta, progressToken: ctx.progressToken };
  return meta ? { ...rest, _meta: meta } : rest;
}

/** What a requestState is bound to: the method and a digest of its arguments. */
function binding(req: JsonRpcRequest): { method: string; digest: string } {
  const { _meta: _m, inputResponses: _i, requestState: _r, ...rest } = req.params ?? {};
  return { method: req.method, digest: createHash('sha256').update(canonicalJson(rest)).digest('base64url') };
}

/** Progress always; `notifications/message` only at or above the request's log level (none without one). */
function logFilter(ctx: ModernContext, reply: ModernReply): (n: JsonRpcNotification) => void {
  return (n) => {
    if (n.method === 'notifications/message') {
      const level = LOG_LEVELS.indexOf(String(n.params?.level));
      if (ctx.logLevel === undefined || level < ctx.logLevel) return;
    }
    reply.notify(n);
  };
}
