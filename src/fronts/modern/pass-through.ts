/**
 * The route of modern requests to a modern upstream (route.ts): each goes upstream as it came (its
 * `_meta` envelope kept, so the server sees the client's capabilities, extensions and variant; the
 * mirrored headers written again from the body), after the request filters; notifications on
 * its stream are relayed as they come; `input_required` and other non-final answers pass
 * untouched, but for the server's `requestState` and task ids, which are sealed with the
 * principal they were given to (the server sees only the proxy's credentials): nobody else can
 * resume the call, or read, answer, cancel or listen to the task; any replica can carry them.
 * Complete results are the server's, their cache hints lowered where the proxy's configuration
 * says less. In front of a server that does not offer the tasks extension, the proxy's own serves
 * it: a tools/call still running after the time it was given becomes one (passed-call.ts).
 */
import type { Logger } from 'pino';
import type { HeldBytes } from '../../core/held-bytes.js';
import type { Answered, EraCompletion, Exchange } from '../../core/exchange.js';
import type { BoundFilters, FilterChain } from '../../core/filters.js';
import { ProxyError } from '../../jsonrpc/errors.js';
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
import { TokenTooLarge, type Sealer } from '../../sealing/sealer.js';
import { CACHEABLE_METHODS, META, SUPPORTED_VERSIONS } from '../../mcp/eras.js';
import type { RequestContext } from '../../mcp/request-context.js';
import { httpStatusOf } from '../../mcp/http-status.js';
import { refusedInputRequests, refusedUrlElicitations, refusedUrlError } from '../../mcp/url-elicitation.js';
import type { McpResult } from '../../transformers/contract.js';
import type { UpstreamServer } from '../../upstream/era.js';
import type { Caller, UpstreamAnswer } from '../../upstream/call.js';
import { CallAbort, onAbort } from '../../upstream/call-abort.js';
import { NO_TIMEOUT_MS, type ModernUpstream } from '../../upstream/modern-http.js';
import type { CacheHint, CacheHints } from './complete.js';
import type { ParamHeaders } from '../../mcp/http-headers.js';
import { PassedCall } from './passed-call.js';
import type { ModernReply } from './reply.js';
import type { Ran, UpstreamRoute } from './route.js';
import { TASKS_EXTENSION } from './tasks.js';
import type { ToolCatalog } from '../../upstream/tool-catalog.js';
import { TOOLS_LIST_CHANGED } from '../../upstream/tool-pins.js';

export interface PassThroughOptions {
  upstream: ModernUpstream;
  /** The upstream's discover result. */
  server(): Promise<UpstreamServer>;
  filters(): FilterChain;
  tools: ToolCatalog;
  /** Seals the server's requestState with the principal it was given to. */
  sealer: Sealer;
  /** The proxy's cache hints (`modern.cache`), read per request (a reload replaces them). */
  cache(): CacheHints;
  requestTimeoutMs: number;
  /** The proxy's own tasks extension (none: not offered), served where the server offers none. */
  tasks?: { held: HeldBytes; inputTimeoutMs: number; maxInputBytes: number };
  log: Logger;
}

export class PassThrough implements UpstreamRoute, EraCompletion {
  constructor(private readonly o: PassThroughOptions) {}

  server(): Promise<UpstreamServer> {
    return this.o.server();
  }

  /** Whether the proxy serves the tasks extension here: it offers one, and the server does not (the server's own pass through). */
  async ownTasks(): Promise<boolean> {
    if (!this.o.tasks) return false;
    const capabilities = (await this.o.server()).capabilities;
    return !(isObject(capabilities) && isObject(capabilities.extensions) && capabilities.extensions[TASKS_EXTENSION] !== undefined);
  }

  async run(req: JsonRpcRequest, exchange: Exchange, ctx: RequestContext, reply: ModernReply, within?: number): Promise<Ran> {
    const sent = this.serverTaskIds(this.unsealState(exchange.request, ctx), ctx, new Map());
    const paramHeaders = this.o.upstream.mirrorsHeaders ? await this.o.tools.paramHeaders(sent, ctx) : undefined;
    const onNotification = this.relay(ctx, reply);
    let answer: UpstreamAnswer;
    if (within !== undefined && this.o.tasks && sent.method === 'tools/call') {
      const call = new PassedCall({
        req: sent,
        send: (r, o) => this.o.upstream.call(r, { ...o, paramHeaders }),
        timeoutMs: this.o.requestTimeoutMs,
        cancellation: reply.cancellation,
        onNotification,
        clientKey: ctx.clientKey ?? ctx.principal ?? '',
        ...this.o.tasks,
      });
      if (!(await answeredWithin(call.answered, within))) {
        const shape = ({ resultType: _t, ...result }: McpResult) => exchange.shapeLater(result);
        return { task: call, next: call.next(), shape };
      }
      answer = await call.answered;
    } else answer = await this.send(sent, reply, this.o.requestTimeoutMs, onNotification, paramHeaders, callerOf(ctx));
    const { frame, status, msg } = this.checked(req.method, answer);
    if (msg.error) return { response: msg, frame, status, completion: this };
    const result = msg.result ?? {};
    if (typeof result.taskId === 'string' && (result.resultType === 'task' || TASK_REQUESTS.has(req.method))) {
      const taskId = TASK_REQUESTS.has(req.method) ? req.params!.taskId : this.sealTask(result.taskId, ctx);
      return { answer: { msg: { jsonrpc: '2.0', id: req.id, result: { ...result, taskId } } } };
    }
    if (result.resultType === 'input_required' && result.requestState !== undefined)
      return {
        answer: { msg: { jsonrpc: '2.0', id: req.id, result: { ...result, requestState: this.sealState(result.requestState, ctx) } } },
      };
    // input_required, a task: the server's own, passed as they are.
    if (result.resultType !== undefined && result.resultType !== 'complete') return { answer: frame };
    return { response: msg, frame, status, completion: this };
  }

  /** The server's error, as it sent it when nothing changed it (the request kept the client's id). */
  error(id: JsonRpcId, error: JsonRpcErrorObject, frame: Frame | undefined): Frame {
    return frame ?? { msg: errorResponse(id, error) };
  }

  /** The server completed its result: its bytes go on, unless the proxy's cache hint is to be written over the server's. */
  completeBytes(_id: JsonRpcId, method: string, frame: Frame, res: JsonRpcResponse): Frame | undefined {
    const result = res.result ?? {};
    return result.resultType !== undefined && !this.hint(method, result, false) ? frame : undefined;
  }

  complete(a: Answered): McpResult {
    const { result, shaped } = a;
    return {
      ...shaped,
      resultType: 'complete',
      ...(isObject(result._meta) ? { _meta: { ...(shaped._meta as object), ...pick(result._meta, META.serverInfo) } } : {}),
      ...this.hint(a.method, result, a.reshaped),
    };
  }

  /** The server's discover result as the proxy's: the versions the proxy serves, `extensions` added. */
  async discover(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, extensions: Record<string, unknown>): Promise<void> {
    const answer = await this.send(this.unsealState(req, ctx), reply, this.o.requestTimeoutMs, this.relay(ctx, reply));
    this.answerOwn(req, reply, answer, (result) => discovered(result, extensions));
  }

  /**
   * The server's listen stream, with the client's task ids in place of the server's (only the tasks
   * given to this principal are followed), and each list change through the filters, once per offered
   * variant, as in front of a legacy server.
   */
  async listen(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply): Promise<void> {
    const negotiation = this.o.filters().forRequest(ctx, await this.o.server());
    const named = new Map<string, string>();
    const sent = this.serverTaskIds(this.unsealState(req, ctx), ctx, named);
    const relay = this.relay(ctx, reply, { named, negotiation });
    // A changed tool definition the proxy announces (upstream.toolChanges) reaches a stream that asked for tool list changes.
    const toolsWanted = isObject(req.params?.notifications) && req.params.notifications.toolsListChanged === true;
    const announced = { ...TOOLS_LIST_CHANGED, params: { _meta: { [META.subscriptionId]: req.id } } };
    const stop = toolsWanted ? this.o.tools.pins?.onAnnounce(() => relay(announced)) : undefined;
    try {
      const answer = await this.send(sent, reply, NO_TIMEOUT_MS, relay);
      this.answerOwn(req, reply, answer, (result) => result);
    } finally {
      stop?.();
    }
  }

  private async send(
    req: JsonRpcRequest,
    reply: ModernReply,
    timeoutMs: number,
    onNotification: (n: JsonRpcNotification) => void,
    paramHeaders?: ParamHeaders,
    caller?: Caller,
  ): Promise<UpstreamAnswer> {
    const abort = new CallAbort();
    onAbort(reply.cancellation, () => abort.abort(new ProxyError('CLIENT_GONE', 'The client closed the request')));
    return this.o.upstream.call(req, {
      caller,
      signal: abort,
      timeoutMs,
      paramHeaders,
      onNotification: (n) => onNotification(n.msg as JsonRpcNotification),
    });
  }

  /**
   * Relays a call's notifications with the client's task ids (`listen`: a listen stream's, where only the tasks it
   * named are told of, and a list change goes through the filters once per offered variant); a tools list change
   * makes the catalog forget.
   */
  private relay(
    ctx: RequestContext,
    reply: ModernReply,
    listen?: { named: Map<string, string>; negotiation: BoundFilters },
  ): (n: JsonRpcNotification) => void {
    return (n) => {
      const note = this.clientTaskIds(n, ctx, listen?.named);
      if (!note) return;
      if (note.method === 'notifications/tools/list_changed') this.o.tools.changed();
      for (const m of listen?.negotiation.onNotification(note) ?? [note]) reply.notify(m);
    };
  }

  /** The answer, unless the server refused the proxy's credentials or asks the client to open a URL no client may be sent to. */
  private checked(method: string, answer: UpstreamAnswer): UpstreamAnswer & { msg: JsonRpcResponse } {
    const { frame, status } = answer;
    // The upstream refused the proxy's own credentials (upstream.headers): nothing the client can fix.
    if (status === 401 || status === 403)
      throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream refused the proxy's credentials (HTTP ${status}); check upstream.headers`);
    const msg = frame.msg as JsonRpcResponse;
    // Input requests ride in an input_required round, and in a task's status (tasks/get) too.
    const unsafe = msg.error ? refusedUrlElicitations(msg.error) : refusedInputRequests(msg.result?.inputRequests);
    if (unsafe) {
      this.o.log.warn({ method, reason: unsafe }, 'refused an upstream answer that asks the client to open a URL');
      throw refusedUrlError(unsafe);
    }
    return { frame, status, msg };
  }

  /** The answer to a method the proxy serves in front of the server (discover, listen): no filter looks at it. */
  private answerOwn(req: JsonRpcRequest, reply: ModernReply, answer: UpstreamAnswer, shape: (result: McpResult) => McpResult): void {
    const { frame, status, msg } = this.checked(req.method, answer);
    if (msg.error) return reply.answer(frame, { httpStatus: httpStatusOf({ error: msg.error, upstreamStatus: status }) });
    const result = msg.result ?? {};
    // The end of a listen stream that is not a result: the server's own, passed as it is.
    if (result.resultType !== undefined && result.resultType !== 'complete') return reply.answer(frame);
    const shaped = shape(result);
    const completed = this.complete({ method: req.method, result, shaped, reshaped: false });
    reply.answer({ msg: { jsonrpc: '2.0', id: req.id, result: completed } });
  }

  /**
   * The server's requestState, sealed with the principal it was given to: the server sees only
   * the proxy's credentials, so it cannot tell one principal's retry from another's.
   */
  private sealState(state: unknown, ctx: RequestContext): string {
    try {
      return this.o.sealer.seal('upstreamState', { p: ctx.principal ?? '', s: state });
    } catch (err) {
      if (!(err instanceof TokenTooLarge)) throw err;
      // Said now, to this round's request, and as the server's doing: the client's retry could only be refused.
      this.o.log.warn(
        { bytes: err.bytes, maxBytes: err.maxBytes },
        "the upstream's requestState is too large for the proxy to carry; the input round is answered with an error",
      );
      throw new ProxyError(
        'UPSTREAM_PROTOCOL',
        `The upstream server sent a requestState of ${err.bytes} bytes, more than the ` +
          `proxy can carry to the client and back (at most ${err.maxBytes}): ` +
          "this input round cannot be relayed. The server's operator can keep its requestState smaller.",
      );
    }
  }

  /**
   * The request with the server's own requestState back in it; refuses a state that is not the proxy's or was
   * given to another principal.
   */
  private unsealState(req: JsonRpcRequest, ctx: RequestContext): JsonRpcRequest {
    const state = req.params?.requestState;
    if (state === undefined) return req;
    const opened = typeof state === 'string' ? this.o.sealer.open<{ p: string; s: unknown }>('upstreamState', state) : undefined;
    if (!opened || opened.p !== (ctx.principal ?? ''))
      throw new ProxyError(
        'INVALID_REQUEST_STATE',
        'Invalid params: requestState was not issued by this proxy for this client (or was altered)',
      );
    return { ...req, params: { ...req.params, requestState: opened.s } };
  }

  private sealTask(id: string, ctx: RequestContext): string {
    return this.o.sealer.seal('upstreamTask', { p: ctx.principal ?? '', t: id });
  }

  /** The server's id of the task a client's task id names, when the proxy gave it to this principal. */
  private openTask(token: unknown, ctx: RequestContext): string | undefined {
    const opened = typeof token === 'string' ? this.o.sealer.open<{ p: string; t: string }>('upstreamTask', token) : undefined;
    return opened && opened.p === (ctx.principal ?? '') && typeof opened.t === 'string' ? opened.t : undefined;
  }

  /**
   * The request with the server's task ids in place of the client's (each noted in `named`): a
   * tasks request for a task not given to this principal is refused; a listen request follows
   * only the tasks that were.
   */
  private serverTaskIds(req: JsonRpcRequest, ctx: RequestContext, named: Map<string, string>): JsonRpcRequest {
    if (TASK_REQUESTS.has(req.method)) {
      const id = this.openTask(req.params?.taskId, ctx);
      if (id === undefined)
        throw new ProxyError('TASK_NOT_FOUND', 'Failed to retrieve task: Task not found (unknown, expired, or issued to another client)');
      named.set(id, req.params!.taskId as string);
      return { ...req, params: { ...req.params, taskId: id } };
    }
    const wanted = req.method === 'subscriptions/listen' ? req.params?.notifications : undefined;
    if (!isObject(wanted) || !Array.isArray(wanted.taskIds)) return req;
    for (const token of wanted.taskIds.slice(0, MAX_TASK_IDS)) {
      const id = this.openTask(token, ctx);
      if (id !== undefined) named.set(id, token as string);
    }
    return { ...req, params: { ...req.params, notifications: { ...wanted, taskIds: [...named.keys()] } } };
  }

  /**
   * A notification with the client's task ids in place of the server's. On a listen stream
   * (`named`), only the tasks the client named are told of; elsewhere a task is the request's own.
   */
  private clientTaskIds(
    n: JsonRpcNotification,
    ctx: RequestContext,
    named: Map<string, string> | undefined,
  ): JsonRpcNotification | undefined {
    const params = n.params;
    if (n.method === 'notifications/tasks' && typeof params?.taskId === 'string') {
      const taskId = named ? named.get(params.taskId) : this.sealTask(params.taskId, ctx);
      return taskId === undefined ? undefined : { ...n, params: { ...params, taskId } };
    }
    const honoured =
      n.method === 'notifications/subscriptions/acknowledged' && isObject(params?.notifications) ? params.notifications : undefined;
    if (!named || !honoured || !Array.isArray(honoured.taskIds)) return n;
    const taskIds = honoured.taskIds.flatMap((id) => (typeof id === 'string' && named.has(id) ? [named.get(id)!] : []));
    return { ...n, params: { ...params, notifications: { ...honoured, taskIds } } };
  }

  /**
   * The cache hint to write over the server's: where the proxy's configuration names the method,
   * the smaller time; the narrower scope, and `private` for a result the proxy reshaped (it is
   * this client's); where the server gave none, the proxy's default. Undefined when the server's stands.
   */
  private hint(method: string, result: McpResult, reshaped: boolean): CacheHint | undefined {
    if (!CACHEABLE_METHODS.has(method)) return undefined;
    const cache = this.o.cache();
    const ours = Object.hasOwn(cache, method) ? cache[method] : undefined;
    const theirs =
      typeof result.ttlMs === 'number' && (result.cacheScope === 'public' || result.cacheScope === 'private')
        ? { ttlMs: result.ttlMs, cacheScope: result.cacheScope }
        : undefined;
    if (!theirs) return reshaped ? { ...(ours ?? cache.default), cacheScope: 'private' } : (ours ?? cache.default);
    const ttlMs = Math.min(ours?.ttlMs ?? theirs.ttlMs, theirs.ttlMs);
    const cacheScope = reshaped || ours?.cacheScope === 'private' || theirs.cacheScope === 'private' ? 'private' : 'public';
    return ttlMs === theirs.ttlMs && cacheScope === theirs.cacheScope ? undefined : { ttlMs, cacheScope };
  }
}

/** Requests that name a task (by the id the proxy gave the client). */
const TASK_REQUESTS = new Set(['tasks/get', 'tasks/update', 'tasks/cancel']);
/** Tasks one listen request may follow. */
const MAX_TASK_IDS = 100;

/** The server's discover result as the proxy's: the versions the proxy serves, the filters' extensions added. */
function discovered(result: McpResult, extensions: Record<string, unknown>): McpResult {
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  const all = { ...(isObject(capabilities.extensions) ? capabilities.extensions : {}), ...extensions };
  return {
    ...result,
    supportedVersions: SUPPORTED_VERSIONS,
    capabilities: Object.keys(all).length ? { ...capabilities, extensions: all } : capabilities,
  };
}

/** Whether the upstream answered within `ms` (with an answer or a failure). */
async function answeredWithin(answer: Promise<unknown>, ms: number): Promise<boolean> {
  if (ms <= 0) return false; // 0: a task at once, not a race with the answer
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => (timer = setTimeout(resolve, ms, false)));
  try {
    return await Promise.race([
      answer.then(
        () => true,
        () => true,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Whom a request is passed through for: a list answer may be shared with their other requests (list-cache.ts). */
function callerOf(ctx: RequestContext): Caller {
  return { principal: ctx.principal ?? '', clientKey: ctx.clientKey ?? ctx.principal ?? '', capabilities: ctx.capabilities };
}

function pick(from: Record<string, unknown>, key: string): Record<string, unknown> {
  return key in from ? { [key]: from[key] } : {};
}
