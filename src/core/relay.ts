/**
 * One relay session: a client on one side, one upstream MCP session on the other (legacy era,
 * so request ids pass through unchanged). It tracks the client's pending requests to enforce
 * timeouts, to answer everything when the upstream dies, and to route progress to the request
 * that asked for it. Where a message goes on the client side is the sink's business.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ProxyError, toJsonRpcError } from '../jsonrpc/errors.js';
import {
  errorResponse,
  INVALID_PARAMS,
  isRequest,
  isResponse,
  type Frame,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../jsonrpc/message.js';
import {
  cancelledNotification,
  cancelledOf,
  invalidProgressToken,
  PROGRESS,
  progressTokenOf,
  requestProgressToken,
} from '../mcp/cancel-progress.js';
import { refusedElicitation } from '../mcp/url-elicitation.js';
import type { TagsNote } from '../ops/access-log.js';
import type { Metrics } from '../ops/metrics.js';
import { traceContextOf } from '../ops/trace-context.js';
import { failureOutcome, type UpstreamObserver } from '../upstream/client.js';
import { PendingCalls } from '../upstream/pending.js';
import { AS_SENT, Exchange, type Negotiation } from './exchange.js';
import type { CallOptions, UpstreamAnswer, UpstreamCall } from '../upstream/call.js';
import type { UpstreamConnection, UpstreamEvents } from '../upstream/types.js';

export interface ClientSink {
  /** Delivers a message to the client; `relatedId` names the client request it belongs to. */
  deliver(frame: Frame, relatedId?: JsonRpcId): void;
  /** The client cancelled request `id`: no answer will come for it. */
  cancelled?(id: JsonRpcId): void;
  /** The session is over; every pending request has been answered already. */
  end(reason: ProxyError): void;
}

export interface RelayOptions {
  /** No answer within this time → a timeout error to the client and a cancellation upstream. */
  requestTimeoutMs: number;
  /** The same for initialize, which also waits for a stdio upstream to start. */
  initializeTimeoutMs: number;
  /** Reshapes results for the negotiated context (content negotiation); absent = pure relay. */
  shaper?: ResultShaper;
  /** Counters for /metrics. */
  counters?: Metrics['counters'];
  /** Upstream latency, for /metrics. */
  observe?: UpstreamObserver;
  log: Logger;
}

/** What the relay asks of the filter chain bound to its session (see src/core/filters.ts), beside each exchange's part. */
export interface ResultShaper extends Negotiation {
  onInitialize(params: Record<string, unknown> | undefined): void;
  /** Notifications to send instead of an upstream notification (never progress), or undefined to relay it as is. */
  onNotification?(msg: JsonRpcNotification): JsonRpcNotification[] | undefined;
  /** A notification the session is owed before its next answer (its tool list changed), if any. */
  announcement?(): JsonRpcNotification | undefined;
  /** The negotiated context in a form another replica rebuilds it from. */
  snapshot?(): object;
  /** The feature tags in effect and the profile that gave some, for the access log. */
  tagsInEffect?(): TagsNote | undefined;
}

interface Pending {
  method: string;
  /** The request's passage through the filters (its variant, what shapes its result). */
  exchange: Exchange;
  /** performance.now() when it went upstream. */
  started: number;
}

/** A request of the proxy's own on the session (see RelaySession.call). */
interface OwnRequest {
  resolve(answer: UpstreamAnswer): void;
  reject(err: unknown): void;
}

export class RelaySession implements UpstreamCall {
  /** Last time the client sent something or got an answer (ms since epoch); upstream chatter does not count. */
  lastActivity = Date.now();
  /** The client's requests waiting for the upstream, by the client's own ids. */
  private readonly pending = new PendingCalls<Pending>((id, p, ms) => this.timeout(id, p, ms));
  /** The proxy's own requests, by ids no client picks (a prefix and 122 random bits). */
  private readonly own = new PendingCalls<OwnRequest>((id, p, ms) => {
    p.reject(new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer the proxy's own request within ${ms} ms`));
    this.cancelUpstream(id, `Request timed out after ${ms} ms`);
  });
  private readonly upstream: UpstreamConnection;
  private ended = false;

  constructor(
    connect: (events: UpstreamEvents) => UpstreamConnection,
    private readonly sink: ClientSink,
    private readonly opts: RelayOptions,
  ) {
    this.upstream = connect({
      onMessage: (frame, relatedId) => this.fromUpstream(frame, relatedId),
      onFailure: (id, err) => {
        this.own.settle(id)?.reject(err);
        const p = this.pending.settle(id);
        if (!p) return;
        this.observe(p, failureOutcome(err));
        this.answer(id, err);
      },
      onClose: (err) => {
        if (!this.ended && this.opts.counters) this.opts.counters.upstreamClosed++;
        this.finish(err);
      },
      onWaiting: (id, waiting) => (waiting ? this.pending.hold(id) : this.pending.resume(id)),
    });
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** A message from the client; whatever fails on the way, a request gets an answer. */
  fromClient(frame: Frame): void {
    try {
      this.relayFromClient(frame);
    } catch (err) {
      const msg = frame.msg;
      this.opts.log.error(
        { err: (err as Error).message, method: 'method' in msg ? msg.method : undefined },
        'could not relay a client message',
      );
      if (isRequest(msg) && (this.pending.settle(msg.id) || !this.ended)) this.answer(msg.id, err);
    }
  }

  private relayFromClient(frame: Frame): void {
    this.lastActivity = Date.now();
    const msg = frame.msg;
    if (isRequest(msg)) {
      if (this.ended) return this.answer(msg.id, new ProxyError('UPSTREAM_CLOSED', 'The upstream session has ended'));
      if (this.pending.has(msg.id)) return this.answer(msg.id, duplicateId(msg.id));
      const badToken = invalidProgressToken(msg.params);
      if (badToken) return this.sink.deliver({ msg: errorResponse(msg.id, { code: INVALID_PARAMS, message: badToken }) }, msg.id);
      const params = msg.params;
      const traceparent = this.opts.observe ? traceContextOf(params?._meta as Record<string, unknown> | undefined)?.traceparent : undefined;
      const exchange = Exchange.open(msg, this.opts.shaper, traceparent);
      if ('refused' in exchange) return this.sink.deliver({ msg: errorResponse(msg.id, exchange.refused) }, msg.id);
      if (exchange.request !== msg) frame = { msg: exchange.request };
      this.pending.add(
        msg.id,
        { method: msg.method, exchange, started: performance.now() },
        this.limitFor(msg.method),
        requestProgressToken(params),
      );
      if (msg.method === 'initialize') this.opts.shaper?.onInitialize(params);
      if (this.opts.counters) this.opts.counters.requestsRelayed++;
    } else {
      // The client gave up on a request: nothing will answer it, so stop waiting for it here.
      const id = cancelledOf(msg)?.requestId;
      if (id !== undefined && this.pending.settle(id)) this.sink.cancelled?.(id);
    }
    if (!this.ended) this.upstream.send(frame);
  }

  /**
   * A request of the proxy's own on this session (UpstreamCall), under an id no client picks: never shown to the
   * client, answered here (rejects on a timeout, the signal, or the session's end).
   */
  call(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer> {
    if (this.ended) return Promise.reject(new ProxyError('UPSTREAM_CLOSED', 'The upstream session has ended'));
    const id = `mcp-negotiate-proxy-${randomUUID()}`;
    return new Promise((resolve, reject) => {
      this.own.add(id, { resolve, reject }, o.timeoutMs);
      o.signal?.addEventListener('abort', () => {
        if (!this.own.settle(id)) return;
        this.cancelUpstream(id, 'The request was cancelled');
        reject(o.signal!.reason);
      });
      this.upstream.send({ msg: { jsonrpc: '2.0', id, method: req.method, params: req.params } });
    });
  }

  /** The client can no longer receive the answer to `id` (its stream closed): cancel upstream. */
  abandon(id: JsonRpcId, reason: string): void {
    const p = this.pending.settle(id);
    if (p && p.method !== 'initialize') this.cancelUpstream(id, reason);
  }

  /** Ends the session from the client side (DELETE; idle and shutdown when the upstream cannot outlive it): answers what is pending. */
  async close(reason: ProxyError): Promise<void> {
    this.finish(reason);
    await this.upstream.close();
  }

  /** Ends the session here but leaves the upstream session alive for another replica; closes it when it cannot outlive us. */
  async detach(reason: ProxyError): Promise<void> {
    if (!this.upstream.detach) return this.close(reason);
    this.finish(reason);
    this.upstream.detach();
  }

  /** What a sealed session token carries about this session. */
  describe(): { upstream?: { id?: string; protocolVersion?: string }; negotiation?: object } {
    return { upstream: this.upstream.session?.(), negotiation: this.opts.shaper?.snapshot?.() };
  }

  /** The feature tags in effect for this session and the profile that gave some (for the access log). */
  tagsInEffect(): TagsNote | undefined {
    return this.opts.shaper?.tagsInEffect?.();
  }

  /** A notification of the proxy's own that belongs to no request (a tool list change it announces): as if the upstream sent it. */
  announce(n: JsonRpcNotification): void {
    if (!this.ended) this.fromUpstream({ msg: n });
  }

  /** The client's GET stream opened (true) or closed (false) here. */
  clientListening(on: boolean): void {
    this.upstream.listen?.(on);
  }

  private fromUpstream(frame: Frame, relatedId?: JsonRpcId): void {
    const msg = frame.msg;
    if (isResponse(msg)) {
      const id = msg.id;
      const own = id === null ? undefined : this.own.settle(id);
      if (own) return own.resolve({ frame, status: 200 });
      const p = id === null ? undefined : this.pending.settle(id);
      if (!p) {
        this.opts.log.debug({ id }, 'dropped an upstream response nobody waits for');
        return;
      }
      this.observe(p, msg.error ? 'error' : 'ok');
      this.lastActivity = Date.now();
      try {
        this.respond(frame, msg, id!, p);
      } catch (err) {
        this.answer(id!, err);
      }
      return;
    }
    if (msg.method === PROGRESS) {
      const token = progressTokenOf(msg);
      const owner = token === undefined ? undefined : this.pending.progressed(token);
      return this.sink.deliver(frame, owner?.id ?? relatedId);
    }
    if (isRequest(msg)) {
      const refused = refusedElicitation(msg.method, msg.params);
      if (refused) return this.refuseUpstreamRequest(msg, refused, relatedId);
    }
    // Progress goes as it came (it keeps its call alive); filters see the other notifications.
    if (!isRequest(msg)) {
      const replaced = this.opts.shaper?.onNotification?.(msg);
      if (replaced) return replaced.forEach((n) => this.sink.deliver({ msg: n }, relatedId));
    }
    this.sink.deliver(frame, relatedId);
  }

  /** A server→client request no client may be asked (see src/mcp/url-elicitation.ts): answered to the upstream here, and logged. */
  private refuseUpstreamRequest(req: JsonRpcRequest, reason: string, relatedId: JsonRpcId | undefined): void {
    this.opts.log.warn({ method: req.method, relatedId, reason }, 'refused an upstream request to the client');
    this.upstream.send({ msg: errorResponse(req.id, { code: INVALID_PARAMS, message: `The proxy refused ${reason}` }) });
  }

  /** The upstream's response as the filters have it (the upstream's bytes when none changed it). */
  private respond(frame: Frame, msg: JsonRpcResponse, id: JsonRpcId, p: Pending): void {
    const answer = p.exchange.answer(id, msg, frame, AS_SENT, this.opts.log);
    if (!(answer instanceof Promise)) return this.deliverAnswer(answer, id);
    answer.then(
      (out) => this.deliverAnswer(out, id),
      (err) => this.answer(id, err),
    );
  }

  /** An answer, after what the filters owe the session first (a list change its request made). */
  private deliverAnswer(frame: Frame, id: JsonRpcId): void {
    const owed = this.opts.shaper?.announcement?.();
    if (owed) this.sink.deliver({ msg: owed }, id);
    this.sink.deliver(frame, id);
  }

  private timeout(id: JsonRpcId, p: Pending, ms: number): void {
    this.observe(p, 'timeout');
    if (this.opts.counters) this.opts.counters.requestTimeouts++;
    this.opts.log.warn({ id, method: p.method, ms }, 'upstream request timed out');
    this.answer(id, new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer ${p.method} within ${ms} ms`, { timeoutMs: ms }));
    if (p.method !== 'initialize') this.cancelUpstream(id, `Request timed out after ${ms} ms`);
  }

  private limitFor(method: string): number {
    return method === 'initialize' ? this.opts.initializeTimeoutMs : this.opts.requestTimeoutMs;
  }

  private cancelUpstream(id: JsonRpcId, reason: string): void {
    if (this.ended) return;
    this.upstream.send({ msg: cancelledNotification(id, reason) });
  }

  private observe(p: Pending, outcome: Parameters<UpstreamObserver>[1]): void {
    this.opts.observe?.(p.method, outcome, (performance.now() - p.started) / 1000, p.exchange.traceparent);
  }

  private answer(id: JsonRpcId, err: unknown): void {
    this.lastActivity = Date.now();
    this.sink.deliver({ msg: errorResponse(id, toJsonRpcError(err)) }, id);
  }

  /** Answers every pending request with `err`, then tells the sink; runs once. */
  private finish(err: ProxyError): void {
    if (this.ended) return;
    this.ended = true;
    for (const [, own] of this.own.settleAll()) own.reject(err);
    for (const [id, p] of this.pending.settleAll()) {
      this.observe(p, 'closed');
      this.answer(id, err);
    }
    this.sink.end(err);
  }
}

export function duplicateId(id: JsonRpcId): ProxyError {
  return new ProxyError('DUPLICATE_ID', `Request id ${JSON.stringify(id)} is already in use`);
}
