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
import { isNotification, isObject, isRequest, isResponse, type Frame, type JsonRpcId, type JsonRpcNotification, type JsonRpcRequest } from '../jsonrpc/message.js';
import { META } from '../mcp/eras.js';
import type { ModernExchange, ModernSendOptions, ModernUpstream } from './modern-http.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

interface Waiter {
  /** The request as the caller sent it (its id and progress token are given back). */
  req: JsonRpcRequest;
  o: ModernSendOptions;
  settle(err: unknown, answer?: ModernExchange): void;
  /** Progress came: the time limit starts again. */
  progressed(): void;
}

export class ModernStdioUpstream implements ModernUpstream {
  readonly mirrorsHeaders = false;
  private connection: UpstreamConnection | undefined;
  private closed = false;
  /** Requests under way, by the proxy's id on the pipe (also their progress token there). */
  private readonly waiting = new Map<string, Waiter>();
  private next = 0;

  constructor(
    private readonly connect: (events: UpstreamEvents) => UpstreamConnection,
    private readonly log: Logger,
  ) {}

  send(req: JsonRpcRequest, o: ModernSendOptions): Promise<ModernExchange> {
    const id = `mcp-negotiate-proxy-${++this.next}`;
    const meta = isObject(req.params?._meta) ? req.params._meta : undefined;
    const params = meta && meta.progressToken !== undefined ? { ...req.params, _meta: { ...meta, progressToken: id } } : req.params;
    return new Promise((resolve, reject) => {
      if (o.signal?.aborted) return reject(o.signal.reason);
      const timer = setTimeout(() => {
        settle(new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer ${req.method} within ${o.timeoutMs} ms`, { timeoutMs: o.timeoutMs }));
        this.cancel(id, `Request timed out after ${o.timeoutMs} ms`);
      }, o.timeoutMs);
      const onAbort = () => {
        settle(o.signal!.reason);
        this.cancel(id, 'The client cancelled the request');
      };
      const settle = (err: unknown, answer?: ModernExchange) => {
        if (!this.waiting.delete(id)) return;
        clearTimeout(timer);
        o.signal?.removeEventListener('abort', onAbort);
        if (answer) resolve(answer);
        else reject(err);
      };
      o.signal?.addEventListener('abort', onAbort, { once: true });
      this.waiting.set(id, { req, o, settle, progressed: () => timer.refresh() });
      try {
        if (this.closed) throw new ProxyError('UPSTREAM_CLOSED', 'The proxy is shutting down');
        this.process().send({ msg: { jsonrpc: '2.0', id, method: req.method, ...(params ? { params } : {}) } });
      } catch (err) {
        settle(err);
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
      onFailure: (id, err) => this.waiting.get(String(id))?.settle(err),
      onClose: (err) => {
        if (this.connection !== connection) return; // one the proxy let go of already
        this.connection = undefined;
        this.failAll(err);
      },
    });
    return (this.connection = connection);
  }

  private failAll(err: ProxyError): void {
    for (const waiter of [...this.waiting.values()]) waiter.settle(err);
  }

  private cancel(id: string, reason: string): void {
    this.connection?.send({ msg: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } } });
  }

  private heard(frame: Frame): void {
    const msg = frame.msg;
    if (isResponse(msg)) {
      const waiter = msg.id === null ? undefined : this.waiting.get(String(msg.id));
      if (!waiter) return this.log.debug({ id: msg.id }, 'dropped an upstream response nobody waits for');
      return waiter.settle(undefined, { frame: { msg: { ...msg, id: waiter.req.id } }, status: 200 });
    }
    if (isRequest(msg)) {
      // A 2026-07-28 server asks for input through input_required, never with a request of its own.
      return this.connection?.send({ msg: { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } } });
    }
    if (isNotification(msg)) this.route(msg);
  }

  /** The one request under way, listen streams aside (they never carry log messages); undefined when there are several. */
  private onlyCall(): Waiter | undefined {
    let only: Waiter | undefined;
    for (const waiter of this.waiting.values()) {
      if (waiter.req.method === 'subscriptions/listen') continue;
      if (only) return undefined;
      only = waiter;
    }
    return only;
  }

  /** A notification to the request it belongs to: by progress token, by listen stream, or the only one under way. */
  private route(n: JsonRpcNotification): void {
    const params = n.params ?? {};
    const meta = isObject(params._meta) ? params._meta : {};
    const token = params.progressToken;
    const stream = meta[META.subscriptionId];
    const owner = token !== undefined ? this.waiting.get(String(token)) : stream !== undefined ? this.waiting.get(String(stream)) : n.method === 'notifications/message' ? this.onlyCall() : undefined;
    const original = (owner?.req.params?._meta as Record<string, unknown> | undefined)?.progressToken;
    // Progress for a request that asked for none, or a log message for one that set no level, is not its.
    const wanted = token !== undefined ? original !== undefined : stream !== undefined || (owner?.req.params?._meta as Record<string, unknown> | undefined)?.[META.logLevel] !== undefined;
    if (!owner || !wanted) return this.log.debug({ method: n.method }, 'dropped an upstream notification that names no request under way');
    if (n.method === 'notifications/progress') owner.progressed();
    const mapped: JsonRpcNotification =
      token !== undefined ? { ...n, params: { ...params, progressToken: original as JsonRpcId } }
      : stream !== undefined ? { ...n, params: { ...params, _meta: { ...meta, [META.subscriptionId]: owner.req.id } } }
      : n;
    owner.o.onNotification?.({ msg: mapped });
  }
}
