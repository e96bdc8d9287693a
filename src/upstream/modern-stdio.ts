/**
 * The proxy as a modern (2026-07-28) client of a stdio server: one process serves every request
 * (the era keeps nothing between them), started when first needed and again after it exits.
 * Request ids and progress tokens are the proxy's own on the pipe, so clients cannot collide;
 * answers, progress and a listen stream's notifications are mapped back to the request they
 * belong to. A log message names no request over stdio: it goes to the only call under way
 * (listen streams aside) when that call asked for log messages, and is dropped otherwise, as is
 * any other notification that names no request (the process serves every client). Cancelling sends `notifications/cancelled`.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import { withId } from '../jsonrpc/envelope.js';
import {
  isNotification,
  isObject,
  isRequest,
  isResponse,
  type Frame,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from '../jsonrpc/message.js';
import {
  cancelledNotification,
  progressTokenOf,
  requestProgressToken,
  withProgressToken,
  withRequestProgressToken,
} from '../mcp/cancel-progress.js';
import { META } from '../mcp/eras.js';
import type { CallOptions, UpstreamAnswer } from './call.js';
import type { ModernUpstream } from './modern-http.js';
import { PendingCalls } from './pending.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

interface Waiter {
  /** The request as the caller sent it (its id and progress token are given back). */
  req: JsonRpcRequest;
  o: CallOptions;
  resolve(answer: UpstreamAnswer): void;
  reject(err: unknown): void;
  /** Stops listening to the caller's signal. */
  done(): void;
}

export class ModernStdioUpstream implements ModernUpstream {
  readonly mirrorsHeaders = false;
  private connection: UpstreamConnection | undefined;
  private closed = false;
  /**
   * Calls under way, and listen streams apart (a log message goes to the only call), by the proxy's id on the
   * pipe (also their progress token there).
   */
  private readonly calls = new PendingCalls<Waiter>((id, w, ms) => this.timedOut(String(id), w, ms));
  private readonly streams = new PendingCalls<Waiter>((id, w, ms) => this.timedOut(String(id), w, ms));
  private next = 0;

  constructor(
    private readonly connect: (events: UpstreamEvents) => UpstreamConnection,
    private readonly log: Logger,
  ) {}

  call(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer> {
    const id = `mcp-negotiate-proxy-${++this.next}`;
    const token = requestProgressToken(req.params) !== undefined ? id : undefined;
    const params = token ? withRequestProgressToken(req.params, token) : req.params;
    const pending = req.method === 'subscriptions/listen' ? this.streams : this.calls;
    return new Promise((resolve, reject) => {
      if (o.signal?.aborted) return reject(o.signal.reason);
      const onAbort = () => {
        if (!pending.settle(id)) return;
        waiter.done();
        reject(o.signal!.reason);
        this.cancel(id, 'The client cancelled the request');
      };
      const waiter: Waiter = { req, o, resolve, reject, done: () => o.signal?.removeEventListener('abort', onAbort) };
      o.signal?.addEventListener('abort', onAbort, { once: true });
      pending.add(id, waiter, o.timeoutMs, token);
      try {
        if (this.closed) throw new ProxyError('UPSTREAM_CLOSED', 'The proxy is shutting down');
        this.process().send({ msg: { jsonrpc: '2.0', id, method: req.method, ...(params ? { params } : {}) } });
      } catch (err) {
        if (pending.settle(id)) {
          waiter.done();
          reject(err);
        }
      }
    });
  }

  /** Ends the process; what waits gets UPSTREAM_CLOSED. */
  async close(): Promise<void> {
    this.closed = true;
    const connection = this.connection;
    this.connection = undefined;
    this.failAll(new ProxyError('UPSTREAM_CLOSED', 'The proxy is shutting down'));
    await connection?.close();
  }

  private process(): UpstreamConnection {
    if (this.connection) return this.connection;
    const connection: UpstreamConnection = this.connect({
      onMessage: (frame) => this.heard(frame),
      onFailure: (id, err) => this.settle(String(id))?.reject(err),
      onClose: (err) => {
        if (this.connection !== connection) return; // one the proxy let go of already
        this.connection = undefined;
        this.failAll(err);
      },
    });
    return (this.connection = connection);
  }

  /** Stops waiting for `id`; its waiter, or undefined. */
  private settle(id: string): Waiter | undefined {
    const waiter = this.calls.settle(id) ?? this.streams.settle(id);
    waiter?.done();
    return waiter;
  }

  private timedOut(id: string, waiter: Waiter, ms: number): void {
    waiter.done();
    waiter.reject(new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer ${waiter.req.method} within ${ms} ms`, { timeoutMs: ms }));
    this.cancel(id, `Request timed out after ${ms} ms`);
  }

  private failAll(err: ProxyError): void {
    for (const [, waiter] of [...this.calls.settleAll(), ...this.streams.settleAll()]) {
      waiter.done();
      waiter.reject(err);
    }
  }

  private cancel(id: string, reason: string): void {
    this.connection?.send({ msg: cancelledNotification(id, reason) });
  }

  private heard(frame: Frame): void {
    const msg = frame.msg;
    if (isResponse(msg)) {
      const waiter = msg.id === null ? undefined : this.settle(String(msg.id));
      if (!waiter) return this.log.debug({ id: msg.id }, 'dropped an upstream response nobody waits for');
      return waiter.resolve({ frame: withId(frame, waiter.req.id), status: 200 });
    }
    if (isRequest(msg)) {
      // A 2026-07-28 server asks for input through input_required, never with a request of its own.
      return this.connection?.send({
        msg: { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } },
      });
    }
    if (isNotification(msg)) this.route(msg);
  }

  /**
   * A notification to the request it belongs to: by progress token (which restarts its time limit), by listen
   * stream, or a log message to the only call under way that asked for them.
   */
  private route(n: JsonRpcNotification): void {
    const params = n.params ?? {};
    const meta = isObject(params._meta) ? params._meta : {};
    const token = progressTokenOf(n);
    const stream = meta[META.subscriptionId];
    if (token !== undefined) {
      const owner = (this.calls.progressed(token) ?? this.streams.progressed(token))?.call;
      return owner ? this.deliver(owner, withProgressToken(n, requestProgressToken(owner.req.params))) : this.dropped(n);
    }
    if (stream !== undefined) {
      const owner = this.streams.get(String(stream));
      return owner
        ? this.deliver(owner, { ...n, params: { ...params, _meta: { ...meta, [META.subscriptionId]: owner.req.id } } })
        : this.dropped(n);
    }
    const only = n.method === 'notifications/message' ? this.calls.only() : undefined;
    const wanted = (only?.req.params?._meta as Record<string, unknown> | undefined)?.[META.logLevel] !== undefined;
    return only && wanted ? this.deliver(only, n) : this.dropped(n);
  }

  private deliver(owner: Waiter, n: JsonRpcNotification): void {
    owner.o.onNotification?.({ msg: n });
  }

  private dropped(n: JsonRpcNotification): void {
    this.log.debug({ method: n.method }, 'dropped an upstream notification that names no request under way');
  }
}
