/**
 * The modern (2026-07-28) request handler, shared by the HTTP and stdio fronts: one stateless
 * request in, one answer out. In front of a legacy upstream it serves `server/discover` from the
 * upstream's initialize result, forwards the rest through a pooled upstream session (ids
 * remapped, the protocol's own `_meta` stripped), bridges input requests through
 * `input_required` rounds, and hands results through the same variant and content-negotiation
 * filters as legacy sessions, then adds what the revision requires (`resultType`, cache hints,
 * serverInfo). In front of an upstream that speaks 2026-07-28 (only, or besides legacy) it
 * passes requests through (pass-through.ts). The tasks extension is the proxy's own in front of
 * every upstream that does not offer it: one Tasks, running whichever call the upstream takes.
 */
import type { Logger } from 'pino';
import type { Requester } from '../../core/context.js';
import type { HeldBytes } from '../../core/held-bytes.js';
import { httpStatusOf } from '../../mcp/http-status.js';
import { Exchange } from '../../core/exchange.js';
import type { FilterChain } from '../../core/filters.js';
import { modernUpstreamError, ProxyError, toJsonRpcError, URL_ELICITATION_REQUIRED } from '../../jsonrpc/errors.js';
import { errorResponse, isObject, type Frame, type JsonRpcRequest, type JsonRpcResponse } from '../../jsonrpc/message.js';
import { INPUT_METHODS, META, MODERN_METHODS, MODERN_VERSIONS, readModernMeta, SUPPORTED_VERSIONS } from '../../mcp/eras.js';
import type { RequestContext } from '../../mcp/request-context.js';
import { clientNameOf } from '../../core/profiles.js';
import { traceContextOf } from '../../ops/trace-context.js';
import type { Sealer } from '../../sealing/sealer.js';
import type { McpResult } from '../../transformers/contract.js';
import type { UpstreamPool } from '../../upstream/pool.js';
import { Completion, type CacheHints } from './complete.js';
import type { Owner } from './forward.js';
import type { TaskWatch } from './listen.js';
import { InputRounds } from './input-rounds.js';
import { Tasks, TASKS_EXTENSION, type ShapeResult, type TaskCall, type TaskRoom, type TasksOptions } from './tasks.js';
import type { CallStep } from './mrtr.js';
import type { ModernReply } from './reply.js';
import type { ToolCatalog } from '../../upstream/tool-catalog.js';
import type { ParamHeaders } from '../../mcp/http-headers.js';
import { PassThrough } from './pass-through.js';
import { speaksModern, type UpstreamEra } from '../../upstream/era.js';
import type { ModernUpstream } from '../../upstream/modern-http.js';

export interface ModernHandlerOptions {
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
  /** Where what is held for absent clients is counted (listen.heldBytes). */
  held: HeldBytes;
  /** Most bytes of input requests put to the client in one round. */
  maxInputRequestBytes: number;
  /** Cache hints per method; `default` for the others. */
  cache: CacheHints;
  /** The tasks extension, served in front of the upstream (none: not offered). */
  tasks?: TasksOptions & { answerWithinMs: number };
  /** Which era the upstream speaks, and the upstream as a modern client reaches it. */
  era: UpstreamEra;
  modern: ModernUpstream;
  /** What the proxy knows of the upstream's tools: Mcp-Param-* headers, task support (shared with legacy sessions). */
  tools: ToolCatalog;
  /** Handles `subscriptions/listen` (src/fronts/modern/listen.ts); `tasks`: where task status is followed. */
  listen?(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, tasks?: TaskWatch): Promise<void>;
  log: Logger;
}

export class ModernHandler {
  private readonly rounds: InputRounds;
  private readonly completion: Completion;
  private readonly tasks: Tasks | undefined;
  /** In front of a modern upstream. */
  private readonly passThrough: PassThrough;

  constructor(private readonly opts: ModernHandlerOptions) {
    this.rounds = new InputRounds(opts);
    this.tasks = opts.tasks && new Tasks(opts.tasks);
    this.completion = new Completion(opts.cache);
    const { modern, era, filters, requestTimeoutMs, tools, sealer, log } = opts;
    const tasks = opts.tasks && { held: opts.held, inputTimeoutMs: opts.inputTimeoutMs, maxInputBytes: opts.maxInputRequestBytes };
    this.passThrough = new PassThrough({
      upstream: modern,
      server: () => era.server(),
      filters,
      tools,
      sealer,
      cache: () => this.completion.cache,
      requestTimeoutMs,
      tasks,
      log,
    });
  }

  /** New cache hints (a config reload). */
  setCache(cache: CacheHints): void {
    this.completion.cache = cache;
  }

  get replicaId(): string {
    return this.opts.replicaId;
  }

  get log(): Logger {
    return this.opts.log;
  }

  /** Mcp-Param-* header → argument for a tools/call (see ToolCatalog). */
  async paramHeaders(req: JsonRpcRequest, ctx: RequestContext): Promise<ParamHeaders | undefined> {
    try {
      return await this.opts.tools.paramHeaders(req, ctx);
    } catch (err) {
      // The listing's pooled session was refused as only a 2026-07-28 server does (a stdio upstream before its
      // era is found): list again in that era.
      if (!this.opts.era.tookRefusal(err)) throw err;
      return this.opts.tools.paramHeaders(req, ctx);
    }
  }

  /** For a retry whose call waits on another reachable replica, or a request for tasks it holds: that replica (see InputRounds, Tasks). */
  ownerElsewhere(req: JsonRpcRequest, ctx: RequestContext): Owner | undefined {
    // The proxy's own tasks, in front of any upstream (the server's own task ids are sealed for another purpose: none here).
    if (req.method.startsWith('tasks/')) return this.tasks?.ownerElsewhere(req, ctx);
    if (speaksModern(this.opts.era.now)) return undefined; // nothing waits on a replica: the upstream holds what a retry needs
    if (req.method === 'subscriptions/listen') return this.listenOwner(req, ctx);
    return this.rounds.ownerElsewhere(req, ctx);
  }

  /**
   * The context of a modern request from `who`; throws the modern rejection (unknown method: 404 on HTTP; bad
   * `_meta`) when it has none.
   */
  requestContext(req: JsonRpcRequest, who: Requester): RequestContext {
    // A 2026-07-28 upstream answers for the methods it knows (an extension's own ones too).
    if (!MODERN_METHODS.has(req.method) && !speaksModern(this.opts.era.now))
      throw new ProxyError('METHOD_NOT_FOUND', `Method not found: ${req.method} is not part of protocol version ${MODERN_VERSIONS[0]}`);
    const clientInfo = (req.params?._meta as Record<string, unknown> | undefined)?.[META.clientInfo];
    const { principal, client, path, featuresHeader } = who;
    const assigned = this.opts.filters().assign({ principal, path, featuresHeader, clientName: clientNameOf(clientInfo) });
    return { era: 'modern', ...readModernMeta(req), principal, clientKey: client, assigned, log: this.opts.log };
  }

  /**
   * A listen request naming tasks that one other reachable replica holds, all of them: its stream
   * is served there (any replica serves the upstream's notifications alike).
   */
  private listenOwner(req: JsonRpcRequest, ctx: RequestContext): Owner | undefined {
    const taskIds = (req.params?.notifications as { taskIds?: unknown } | undefined)?.taskIds;
    if (!this.tasks || !Array.isArray(taskIds) || taskIds.length === 0) return undefined;
    const owners = taskIds.map((id) => this.tasks!.ownerOf(id, ctx));
    return owners.every((o) => o !== undefined && o.replica === owners[0]!.replica) ? owners[0] : undefined;
  }

  /** Serves one request; every outcome, including the proxy's own failures, ends in `reply.answer`. */
  async handle(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, again = false): Promise<void> {
    try {
      if (speaksModern(this.opts.era.now ?? (await this.opts.era.resolve()))) return await this.passedThrough(req, ctx, reply);
      if (req.method === 'subscriptions/listen' && this.opts.listen) return await this.opts.listen(req, ctx, reply, this.tasks);
      const result =
        req.method === 'server/discover'
          ? await this.discover(ctx)
          : TASK_METHODS.has(req.method)
            ? await this.taskRequest(req, ctx)
            : await this.forward(req, ctx, reply);
      if ('frame' in result) reply.answer(result.frame);
      else if ('error' in result) reply.answer({ msg: errorResponse(req.id, result.error as JsonRpcResponse['error'] & object) });
      else reply.answer({ msg: { jsonrpc: '2.0', id: req.id, result: result.result } });
    } catch (err) {
      // The pooled session's initialize was refused as only a 2026-07-28 server does: the upstream is modern after all.
      if (!again && this.opts.era.tookRefusal(err)) {
        return this.handle(req, ctx, reply, true);
      }
      if (!(err instanceof ProxyError)) this.opts.log.error({ err: (err as Error)?.message, method: req.method }, 'modern request failed');
      // The status the code names, as for the same refusal before `handle` (a failure after acceptance names 200).
      reply.answer(
        { msg: errorResponse(req.id, toJsonRpcError(err, 'modern')) },
        { httpStatus: httpStatusOf({ refused: err }), retryAfter: err instanceof ProxyError ? err.retryAfter : undefined },
      );
    }
  }

  close(): void {
    this.rounds.close();
    this.tasks?.close();
  }

  /** In front of a modern upstream: passed through, but for the proxy's own tasks where the server offers none. */
  private async passedThrough(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply): Promise<void> {
    if (!this.tasks || !(await this.passThrough.servesTasks())) return this.passThrough.handle(req, ctx, reply);
    if (TASK_METHODS.has(req.method))
      return reply.answer({ msg: { jsonrpc: '2.0', id: req.id, result: (await this.taskRequest(req, ctx)).result } });
    const room = await this.taskRoom(req, ctx);
    try {
      const offer = room && {
        ms: room.ms,
        start: (call: TaskCall, pending: Promise<CallStep>, shape: ShapeResult) => this.tasks!.start(call, pending, ctx, shape, room),
      };
      return await this.passThrough.handle(req, ctx, reply, offer);
    } finally {
      room?.release(); // a call answered at once gives its place back (a task took it over)
    }
  }

  /** tasks/get, tasks/update, tasks/cancel; only for a request that declares the extension. */
  private async taskRequest(req: JsonRpcRequest, ctx: RequestContext): Promise<{ result: McpResult }> {
    if (!this.tasks)
      throw new ProxyError(
        'METHOD_NOT_FOUND',
        `Method not found: ${req.method} (this proxy does not offer the ${TASKS_EXTENSION} extension)`,
      );
    if (!Tasks.declared(ctx))
      throw missingTasks(`${req.method} is part of the ${TASKS_EXTENSION} extension, which this request does not declare`);
    if (req.method === 'tasks/get') return { result: this.tasks.get(req, ctx) };
    if (req.method === 'tasks/update') return { result: await this.tasks.update(req, ctx) };
    return { result: this.tasks.cancel(req, ctx) };
  }

  /**
   * For a tools/call that may become a task: how long it may take before it does, and the place
   * reserved for that task (undefined: it never becomes one; a client with too many tasks running
   * is answered as without tasks). Refuses a task-only tool to a client without tasks or with too many.
   */
  private async taskRoom(req: JsonRpcRequest, ctx: RequestContext): Promise<(TaskRoom & { ms: number }) | undefined> {
    if (!this.tasks || req.method !== 'tools/call') return undefined;
    const support = await this.opts.tools.taskSupport(req, ctx);
    const declared = Tasks.declared(ctx);
    if (support === 'required' && !declared)
      throw missingTasks(
        `Tool "${String(req.params?.name)}" runs only as a task, and this request does not declare the ${TASKS_EXTENSION} extension`,
      );
    // "forbidden" (the SDK's default for every tool) is about the upstream's own legacy tasks; this one is the proxy's.
    if (!declared) return undefined;
    const room = this.tasks.reserve(ctx);
    if (room) return { ms: this.opts.tasks!.answerWithinMs, ...room };
    this.opts.log.debug({ tool: req.params?.name }, 'no room for another task of this client: the call is answered without one');
    if (support === 'required')
      throw new ProxyError(
        'TOO_MANY_TASKS',
        `Tool "${String(req.params?.name)}" runs only as a task, and this client has ` +
          'as many tasks running as it may (modern.tasks.perClient; tasks that may ask ' +
          'for input also share modern.pool sessions); wait for one to finish or cancel one',
      );
    return undefined;
  }

  private async discover(ctx: RequestContext): Promise<{ result: McpResult }> {
    const server = await this.opts.pool.server();
    const negotiation = this.opts.filters().forRequest(ctx, server);
    const { tasks: _legacyTasks, ...capabilities } = (server.capabilities ?? {}) as Record<string, unknown>;
    const extensions = {
      ...(isObject(capabilities.extensions) ? capabilities.extensions : {}),
      ...negotiation.discoverExtensions(),
      ...(this.tasks ? { [TASKS_EXTENSION]: {} } : {}),
    };
    const result: McpResult = {
      supportedVersions: SUPPORTED_VERSIONS,
      capabilities: Object.keys(extensions).length ? { ...capabilities, extensions } : capabilities,
      ...(typeof server.instructions === 'string' ? { instructions: server.instructions } : {}),
    };
    return { result: this.completion.result('server/discover', result, server) };
  }

  private async forward(
    req: JsonRpcRequest,
    ctx: RequestContext,
    reply: ModernReply,
  ): Promise<{ result: McpResult } | { error: unknown } | { frame: Frame }> {
    const server = await this.opts.pool.server();
    const negotiation = this.opts.filters().forRequest(ctx, server);
    const exchange = Exchange.open(req, negotiation, traceContextOf(ctx.passMeta)?.traceparent);
    if ('refused' in exchange) return { error: exchange.refused };
    const params = exchange.request.params ?? {};
    const room = await this.taskRoom(req, ctx);
    const within = room?.ms;
    try {
      const resumed = params.requestState !== undefined ? await this.rounds.resume(req, ctx, reply, within) : 'again';
      if (resumed === 'declined')
        return {
          error: modernUpstreamError({
            code: URL_ELICITATION_REQUIRED,
            message: 'The user did not complete the URL elicitation the server required',
          }),
        };
      // After a URL round no call waits: accepted, the request goes upstream again.
      let { call, step } =
        resumed === 'again' ? await this.rounds.start(req.method, upstreamParams(params, ctx), ctx, reply, within) : resumed;
      if (
        step.kind === 'done' &&
        'failure' in step.outcome &&
        step.outcome.failure.code === 'UPSTREAM_SESSION_EXPIRED' &&
        call.round === 0
      ) {
        // The upstream forgot the pooled session (404) without running the request: once more on a new one.
        ({ call, step } = await this.rounds.start(req.method, upstreamParams(params, ctx), ctx, reply, within));
      }
      if (step.kind === 'input') return { result: this.rounds.park(req, ctx, call, step) };
      if (step.kind === 'running') {
        this.rounds.release(call);
        return { result: this.tasks!.start(call, step.next, ctx, exchange.shapeLater, room!) };
      }
      const { outcome } = step;
      if ('failure' in outcome) throw outcome.failure;
      const res = outcome.response;
      exchange.screen(res, this.opts.log);
      if (res.error?.code === URL_ELICITATION_REQUIRED && INPUT_METHODS.has(req.method)) {
        const round = this.rounds.urlRound(req, ctx, res.error.data);
        if (round) return { result: round };
      }
      const afterInput = call.round > 0;
      if (req.method === 'tools/list' && !res.error) this.opts.tools.learn(res.result);
      else if (!res.error && !exchange.wantsResult()) {
        // Nothing looks at the result: it is completed on its bytes when it can be.
        const frame = outcome.frame && this.completion.answer(req.id, req.method, outcome.frame, server, afterInput);
        if (frame) return { frame };
      }
      const settled = await exchange.settle(res, this.opts.log);
      if (res.error) return { error: modernUpstreamError(settled && 'error' in settled ? settled.error : res.error) };
      const shaped = settled && 'result' in settled ? settled.result : (res.result ?? {});
      return { result: this.completion.result(req.method, shaped, server, afterInput) };
    } finally {
      room?.release(); // a call answered at once gives its place back (a task took it over)
    }
  }
}

const TASK_METHODS = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);

function missingTasks(message: string): ProxyError {
  return new ProxyError('MISSING_CLIENT_CAPABILITY', message, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
}

/**
 * The request's params as the upstream sees them: no protocol `_meta`, no MRTR fields, and no
 * legacy `task` parameter (SEP-2663: a modern request carrying it is served as if it did not).
 */
function upstreamParams(params: Record<string, unknown>, ctx: RequestContext): Record<string, unknown> {
  const { _meta: _m, inputResponses: _i, requestState: _r, task: _t, ...rest } = params;
  const meta = ctx.progressToken === undefined ? ctx.passMeta : { ...ctx.passMeta, progressToken: ctx.progressToken };
  return meta ? { ...rest, _meta: meta } : rest;
}
