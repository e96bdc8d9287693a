/**
 * The proxy as a legacy (2025-11-25) client of the upstream: it issues its own request ids,
 * sends its own initialize, keeps the pending map and fails every waiter when the connection
 * closes. Server→client messages are routed to the call they belong to: by the HTTP stream
 * that carried them, or, over stdio where nothing says so, to the only call in flight on an
 * exclusive session. What belongs to no call is answered here (ping, roots/list) or handed to
 * `onUnrelated` (list_changed, resources/updated).
 */
import type { Logger } from 'pino';
import { maskSecrets } from '../ops/mask.js';
import type { UpstreamOutcome } from '../ops/metrics.js';
import { traceContextOf } from '../ops/trace-context.js';
import {
  cancelledNotification,
  invalidProgressToken,
  progressTokenOf,
  PROGRESS,
  requestProgressToken,
  withProgressToken,
  withRequestProgressToken,
} from '../mcp/cancel-progress.js';
import { refusedElicitation } from '../mcp/url-elicitation.js';
import { ProxyError, type ProxyErrorCode } from '../jsonrpc/errors.js';
import {
  errorResponse,
  INVALID_PARAMS,
  isRequest,
  isResponse,
  METHOD_NOT_FOUND,
  type Frame,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../jsonrpc/message.js';
import { PendingCalls } from './pending.js';
import type { CallOptions, UpstreamAnswer, UpstreamCall } from './call.js';
import { onAbort } from './call-abort.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

/** Failures that are the client giving up on a call (cancelled, or input never came), not an upstream outcome. */
const CLIENT_ENDED = new Set<ProxyErrorCode>(['CLIENT_GONE', 'INPUT_TIMEOUT', 'HELD_BYTES_EXCEEDED']);

export const UPSTREAM_PROTOCOL_VERSION = '2025-11-25';
const CALL_CANCELLED = new ProxyError('CLIENT_GONE', 'The request was cancelled');

export interface CallHooks {
  /** Progress and log messages of this call (progress tokens already mapped back). */
  onNotification?(n: JsonRpcNotification): void;
  /** A server→client request made during this call; answer it with `client.respond`. */
  onServerRequest?(r: JsonRpcRequest): void;
}

/**
 * The upstream's response (`frame`: as it came, with its bytes), or the proxy's own reason there is none
 * (closed, timed out, cancelled).
 */
export type CallOutcome = { response: JsonRpcResponse; frame?: Frame } | { failure: ProxyError };

interface PendingCall {
  method: string;
  hooks: CallHooks;
  resolve(outcome: CallOutcome): void;
  /** The client's own progress token, restored on progress notifications. */
  progressToken?: string | number;
}

export interface UpstreamClientOptions {
  capabilities: Record<string, unknown>;
  clientInfo: { name: string; version: string };
  initializeTimeoutMs: number;
  log: Logger;
  /** Notifications that belong to no call. */
  onUnrelated?(n: JsonRpcNotification): void;
  /** The connection is gone (crash, exit, 404); every pending call was answered with `err`. */
  onClose?(err: ProxyError): void;
  /** How long each call took the upstream, and how it ended (for /metrics). */
  observe?: UpstreamObserver;
}

export type UpstreamObserver = (method: string, outcome: UpstreamOutcome, seconds: number, traceparent?: string) => void;

/** Failures that mean the upstream session is gone; the others are an error on the way (refused, unreachable, malformed). */
const SESSION_GONE = new Set<ProxyErrorCode>([
  'UPSTREAM_CLOSED',
  'UPSTREAM_SESSION_EXPIRED',
  'UPSTREAM_START_FAILED',
  'SHUTTING_DOWN',
  'SESSION_IDLE',
  'CLIENT_GONE',
]);

/** How a call the upstream did not answer counts in metrics and traces. */
export function failureOutcome(failure: ProxyError): UpstreamOutcome {
  return failure.code === 'REQUEST_TIMEOUT' || failure.code === 'TASK_TIMEOUT'
    ? 'timeout'
    : SESSION_GONE.has(failure.code)
      ? 'closed'
      : 'error';
}

export class UpstreamClient implements UpstreamCall {
  /** The upstream's initialize result, once ready. */
  server: Record<string, unknown> | undefined;
  readonly ready: Promise<Record<string, unknown>>;
  closed: ProxyError | undefined;
  private readonly connection: UpstreamConnection;
  private readonly pending = new PendingCalls<PendingCall>((id, call, ms) => this.timedOut(id, call, ms));
  private nextId = 1;

  constructor(
    connect: (events: UpstreamEvents) => UpstreamConnection,
    private readonly opts: UpstreamClientOptions,
  ) {
    this.connection = connect({
      onMessage: (frame, related) => this.onMessage(frame, related),
      onFailure: (id, err) => this.pending.settle(id)?.resolve({ failure: err }),
      onClose: (err) => this.onClose(err),
    });
    this.ready = this.initialize();
    this.ready.catch(() => undefined); // failures reach whoever awaits ready
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /** Sends a request under a fresh id; the outcome never rejects. */
  request(
    method: string,
    params: Record<string, unknown> | undefined,
    hooks: CallHooks,
    timeoutMs: number,
  ): { id: JsonRpcId; outcome: Promise<CallOutcome> } {
    const id = this.nextId++;
    const outcome = new Promise<CallOutcome>((resolve) => {
      if (this.closed) return resolve({ failure: this.closed });
      // A token the schema does not allow: refused, as the relay and the modern front refuse it.
      const badToken = invalidProgressToken(params);
      if (badToken) return resolve({ response: errorResponse(id, { code: INVALID_PARAMS, message: badToken }) });
      const clientToken = requestProgressToken(params);
      const observe = this.opts.observe;
      const started = observe ? performance.now() : 0;
      const traceparent = observe ? traceContextOf(params?._meta as Record<string, unknown> | undefined)?.traceparent : undefined;
      const settled = observe
        ? (o: CallOutcome) => {
            // A call the client gave up on says nothing about the upstream: not observed, as in the relay.
            if ('response' in o || !CLIENT_ENDED.has(o.failure.code)) {
              observe(
                method,
                'response' in o ? (o.response.error ? 'error' : 'ok') : failureOutcome(o.failure),
                (performance.now() - started) / 1000,
                traceparent,
              );
            }
            resolve(o);
          }
        : resolve;
      const call: PendingCall = { method, hooks, resolve: settled, progressToken: clientToken };
      // The upstream sees a progress token of the proxy's own: the call's id.
      if (clientToken !== undefined) params = withRequestProgressToken(params, id);
      this.pending.add(id, call, timeoutMs, clientToken === undefined ? undefined : id);
      this.connection.send({ msg: { jsonrpc: '2.0', id, method, params } });
    });
    return { id, outcome };
  }

  /** Gives the call a new time limit, from now. */
  retime(id: JsonRpcId, timeoutMs: number): void {
    this.pending.retime(id, timeoutMs);
  }

  /**
   * One call (UpstreamCall): the upstream's answer under the session's own id, or its failure as a rejection;
   * `signal` cancels it upstream.
   */
  async call(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer> {
    const notify = o.onNotification;
    const { id, outcome } = this.request(req.method, req.params, notify ? { onNotification: (n) => notify({ msg: n }) } : {}, o.timeoutMs);
    const signal = o.signal;
    const cancelled = () =>
      this.cancel(id, 'The request was cancelled', signal!.reason instanceof ProxyError ? signal!.reason : CALL_CANCELLED);
    if (signal) onAbort(signal, cancelled);
    const done = await outcome;
    signal?.removeEventListener('abort', cancelled);
    if ('failure' in done) throw done.failure;
    return { frame: done.frame ?? { msg: done.response }, status: 200 };
  }

  /** Stops the call's timer while the proxy waits for the client (input_required); `resume` restarts it. */
  hold(id: JsonRpcId): void {
    this.pending.hold(id);
  }

  resume(id: JsonRpcId): void {
    this.pending.resume(id);
  }

  /** Answers a server→client request. */
  respond(id: JsonRpcId, outcome: { result: Record<string, unknown> } | { error: JsonRpcErrorObject }): void {
    if (!this.closed) this.connection.send({ msg: { jsonrpc: '2.0', id, ...outcome } });
  }

  notify(method: string, params?: Record<string, unknown>): void {
    if (!this.closed) this.connection.send({ msg: { jsonrpc: '2.0', method, params } });
  }

  private cancelUpstream(id: JsonRpcId, reason: string): void {
    if (!this.closed) this.connection.send({ msg: cancelledNotification(id, reason) });
  }

  /** Gives up on a call: `notifications/cancelled` upstream, and `err` to whoever waits. */
  cancel(id: JsonRpcId, reason: string, err: ProxyError): void {
    const call = this.pending.settle(id);
    if (!call) return;
    this.cancelUpstream(id, reason);
    call.resolve({ failure: err });
  }

  close(): Promise<void> {
    return this.connection.close();
  }

  private async initialize(): Promise<Record<string, unknown>> {
    const { outcome } = this.request(
      'initialize',
      { protocolVersion: UPSTREAM_PROTOCOL_VERSION, capabilities: this.opts.capabilities, clientInfo: this.opts.clientInfo },
      {},
      this.opts.initializeTimeoutMs,
    );
    const done = await outcome;
    const res = 'response' in done ? done.response : undefined;
    if (!res || res.error) {
      // A session that never initialized is of no use: close it, so that a pool drops it.
      // Clients see the upstream's reason masked (it may quote its configuration), never its body;
      // an HTTP status is kept (it tells a refusal of the handshake from a failing server).
      const failure = 'failure' in done ? done.failure : undefined;
      const status = failure?.details?.status;
      const err = res
        ? refusedInitialize(res.error!.message, { upstreamCode: res.error!.code })
        : failure!.code === 'UPSTREAM_PROTOCOL'
          ? refusedInitialize(failure!.message, typeof status === 'number' ? { status } : undefined)
          : failure!;
      this.onClose(err);
      void this.connection.close();
      throw err;
    }
    this.notify('notifications/initialized');
    this.server = res.result ?? {};
    return this.server;
  }

  /** A call the upstream did not answer in time: cancelled upstream, a timeout error to whoever waits. */
  private timedOut(id: JsonRpcId, call: PendingCall, ms: number): void {
    this.opts.log.warn({ id, method: call.method, ms }, 'upstream request timed out');
    this.cancelUpstream(id, `Request timed out after ${ms} ms`);
    call.resolve({
      failure: new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer ${call.method} within ${ms} ms`, { timeoutMs: ms }),
    });
  }

  /** The call a server message belongs to: the HTTP stream's request, else the only call of an exclusive stdio session. */
  private owner(related: JsonRpcId | undefined): PendingCall | undefined {
    if (related !== undefined) return this.pending.get(related);
    const only = this.pending.only();
    return only?.method === 'initialize' ? undefined : only;
  }

  private onMessage(frame: Frame, related?: JsonRpcId): void {
    const msg = frame.msg;
    if (isResponse(msg)) {
      const call = msg.id === null ? undefined : this.pending.settle(msg.id);
      if (call) call.resolve({ response: msg, frame });
      else this.opts.log.debug({ id: msg.id }, 'dropped an upstream response nobody waits for');
      return;
    }
    if (isRequest(msg)) return this.onServerRequest(msg, related);
    if (msg.method === PROGRESS) {
      const token = progressTokenOf(msg);
      const call = token === undefined ? undefined : this.pending.progressed(token)?.call;
      if (call) call.hooks.onNotification?.(withProgressToken(msg, call.progressToken));
      return;
    }
    if (msg.method === 'notifications/message') return this.owner(related)?.hooks.onNotification?.(msg);
    this.opts.onUnrelated?.(msg);
  }

  private onServerRequest(req: JsonRpcRequest, related: JsonRpcId | undefined): void {
    if (req.method === 'ping') return this.respond(req.id, { result: {} });
    const refused = refusedElicitation(req.method, req.params);
    if (refused) {
      this.opts.log.warn({ method: req.method, reason: refused }, 'refused an upstream request to the client');
      return this.respond(req.id, { error: { code: INVALID_PARAMS, message: `The proxy refused ${refused}` } });
    }
    const call = this.owner(related);
    if (call?.hooks.onServerRequest) return call.hooks.onServerRequest(req);
    if (req.method === 'roots/list') return this.respond(req.id, { result: { roots: [] } });
    this.opts.log.debug({ method: req.method }, 'answered an upstream request that belongs to no call');
    this.respond(req.id, {
      error: { code: METHOD_NOT_FOUND, message: `${req.method} is not available: no client request to relate it to` },
    });
  }

  private onClose(err: ProxyError): void {
    if (this.closed) return;
    this.closed = err;
    for (const [, call] of this.pending.settleAll()) call.resolve({ failure: err });
    this.opts.onClose?.(err);
  }
}

function refusedInitialize(reason: string, data?: Record<string, unknown>): ProxyError {
  return new ProxyError('UPSTREAM_START_FAILED', `The upstream refused initialize: ${maskSecrets(reason).slice(0, 1000)}`, data);
}
