/**
 * The modern (2026-07-28) request driver, shared by the HTTP and stdio fronts: one stateless
 * request in, one answer out, whatever era the upstream speaks. It runs every request the same
 * way: the request filters, the offer of one of the proxy's tasks, the call upstream by the
 * route of the upstream's era (route.ts: a pooled session to a legacy server, passed through to
 * a 2026-07-28 one), then the screening of the answer, error annotation or result shaping, and
 * the completion the route gives. The methods the proxy serves itself are local handlers:
 * `server/discover`, `subscriptions/listen`, and `tasks/*` where the proxy's own tasks are served
 * (in front of every upstream that does not offer the extension).
 */
import type { Logger } from 'pino';
import type { Requester } from '../../core/context.js';
import type { HeldBytes } from '../../core/held-bytes.js';
import { httpStatusOf } from '../../mcp/http-status.js';
import { Exchange } from '../../core/exchange.js';
import type { FilterChain } from '../../core/filters.js';
import { ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { errorResponse, type Frame, type JsonRpcId, type JsonRpcRequest } from '../../jsonrpc/message.js';
import { META, MODERN_METHODS, MODERN_VERSIONS, readModernMeta } from '../../mcp/eras.js';
import type { RequestContext } from '../../mcp/request-context.js';
import { clientNameOf } from '../../core/profiles.js';
import { traceContextOf } from '../../ops/trace-context.js';
import type { Sealer } from '../../sealing/sealer.js';
import type { McpResult } from '../../transformers/contract.js';
import type { UpstreamCall } from '../../upstream/call.js';
import type { UpstreamPool } from '../../upstream/pool.js';
import { Completion, type CacheHints } from './complete.js';
import type { Owner } from './forward.js';
import type { TaskWatch } from './listen.js';
import { InputRounds } from './input-rounds.js';
import { Tasks, TASKS_EXTENSION, type TaskRoom, type TasksOptions } from './tasks.js';
import type { ModernReply } from './reply.js';
import { PooledRoute } from './pooled-route.js';
import type { UpstreamRoute } from './route.js';
import type { ToolCatalog } from '../../upstream/tool-catalog.js';
import type { ParamHeaders } from '../../mcp/http-headers.js';
import { PassThrough } from './pass-through.js';
import { speaksModern, type UpstreamEra } from '../../upstream/era.js';
import type { ModernUpstream } from '../../upstream/modern-http.js';

export interface ModernHandlerOptions {
  pool: UpstreamPool;
  /** List requests through the pool, answered from the list cache (src/upstream/list-cache.ts). */
  lists: UpstreamCall;
  /** The filters requests run through, as the config says now. */
  filters(): FilterChain;
  requestTimeoutMs: number;
  /** How long a call waiting for client input waits for the retry. */
  inputTimeoutMs: number;
  /** Seals `requestState` (shared by replicas when they share a secret). */
  sealer: Sealer;
  /** This replica's name, sealed into requestState so another replica can say where the call waits. */
  replicaId: string;
  /** Where other replicas reach this one (sealed into requestState, for forwarded retries); known once listening. */
  replicaUrl(): string | undefined;
  /** Most calls of one client waiting for its input at once (modern.parkedPerClient). */
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
  /** Handles `subscriptions/listen` in front of a legacy upstream (listen.ts); `tasks`: where task status is followed. */
  listen(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, tasks?: TaskWatch): Promise<void>;
  log: Logger;
}

export class ModernHandler {
  private readonly rounds: InputRounds;
  private readonly completion: Completion;
  private readonly tasks: Tasks | undefined;
  /** The routes to an upstream of each era. */
  private readonly pooled: PooledRoute;
  private readonly passThrough: PassThrough;

  constructor(private readonly opts: ModernHandlerOptions) {
    this.rounds = new InputRounds(opts);
    this.tasks = opts.tasks && new Tasks(opts.tasks);
    this.completion = new Completion(opts.cache);
    const { modern, era, filters, requestTimeoutMs, tools, sealer, log } = opts;
    this.pooled = new PooledRoute({
      pool: opts.pool,
      lists: opts.lists,
      rounds: this.rounds,
      completion: this.completion,
      requestTimeoutMs,
      listen: opts.listen,
      log,
    });
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
      const route = speaksModern(this.opts.era.now ?? (await this.opts.era.resolve())) ? this.passThrough : this.pooled;
      await (this.local.get(req.method) ?? this.drive)(req, ctx, reply, route);
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

  /** The one path of every request the upstream answers: filters, the call, the answer screened, annotated or shaped, and completed. */
  private readonly drive: LocalHandler = async (req, ctx, reply, route) => {
    const server = await route.server();
    const exchange = Exchange.open(req, this.opts.filters().forRequest(ctx, server), traceContextOf(ctx.passMeta)?.traceparent);
    if ('refused' in exchange) return reply.answer({ msg: errorResponse(req.id, exchange.refused) });
    const room = (await route.ownTasks()) ? await this.taskRoom(exchange.request, ctx) : undefined;
    try {
      const ran = await route.run(req, exchange, ctx, reply, room?.ms);
      if ('answer' in ran) return reply.answer(ran.answer);
      if ('task' in ran) return reply.answer(resultFrame(req.id, this.tasks!.start(ran.task, ran.next, ctx, ran.shape, room!)));
      const { response: res, frame, status, completion } = ran;
      if (exchange.method === 'tools/list' && !res.error) this.opts.tools.learn(res.result);
      const answer = await exchange.answer(req.id, res, frame, completion, this.opts.log);
      reply.answer(answer, res.error && { httpStatus: httpStatusOf({ error: res.error, upstreamStatus: status }) });
    } finally {
      room?.release(); // a call answered at once gives its place back (a task took it over)
    }
  };

  /** tasks/get, tasks/update, tasks/cancel, where the proxy's own tasks are served; only for a request that declares the extension. */
  private readonly taskRequest: LocalHandler = async (req, ctx, reply, route) => {
    if (!(await route.ownTasks())) return this.drive(req, ctx, reply, route); // the server's own tasks
    if (!this.tasks)
      throw new ProxyError(
        'METHOD_NOT_FOUND',
        `Method not found: ${req.method} (this proxy does not offer the ${TASKS_EXTENSION} extension)`,
      );
    if (!Tasks.declared(ctx))
      throw missingTasks(`${req.method} is part of the ${TASKS_EXTENSION} extension, which this request does not declare`);
    const result =
      req.method === 'tasks/get'
        ? this.tasks.get(req, ctx)
        : req.method === 'tasks/update'
          ? await this.tasks.update(req, ctx)
          : this.tasks.cancel(req, ctx);
    reply.answer(resultFrame(req.id, result));
  };

  /** The upstream's description, with the filters' extensions and the proxy's tasks added. */
  private readonly discover: LocalHandler = async (req, ctx, reply, route) => {
    const negotiation = this.opts.filters().forRequest(ctx, await route.server());
    const extensions = {
      ...negotiation.discoverExtensions(),
      ...(this.tasks && (await route.ownTasks()) ? { [TASKS_EXTENSION]: {} } : {}),
    };
    await route.discover(req, ctx, reply, extensions);
  };

  /** The methods the proxy serves itself, in front of every upstream. */
  private readonly local = new Map<string, LocalHandler>([
    ['server/discover', this.discover],
    ['subscriptions/listen', (req, ctx, reply, route) => route.listen(req, ctx, reply, this.tasks)],
    ['tasks/get', this.taskRequest],
    ['tasks/update', this.taskRequest],
    ['tasks/cancel', this.taskRequest],
  ]);

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
}

function missingTasks(message: string): ProxyError {
  return new ProxyError('MISSING_CLIENT_CAPABILITY', message, { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } });
}

type LocalHandler = (req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, route: UpstreamRoute) => Promise<void>;

function resultFrame(id: JsonRpcId, result: McpResult): Frame {
  return { msg: { jsonrpc: '2.0', id, result } };
}
