/**
 * What a legacy session hears from a modern upstream between requests: one
 * `subscriptions/listen` stream, asking for the resources the client subscribed to and, while it
 * listens, for list changes. The stream is opened again whenever that changes (and, after a
 * pause that grows, when it ends or breaks while still wanted); its notifications reach the
 * client without the stream's subscriptionId. What changes while the stream opens again is not heard.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import { isObject, type JsonRpcNotification } from '../jsonrpc/message.js';
import { META } from '../mcp/eras.js';
import { NO_TIMEOUT_MS, type ModernUpstream } from './modern-http.js';

const RETRY_MS = 1_000;
const MAX_RETRY_MS = 30_000;

export class UpstreamListen {
  private readonly uris = new Set<string>();
  private lists = false;
  private stream: AbortController | undefined;
  private retryMs = RETRY_MS;
  private retry: NodeJS.Timeout | undefined;
  private opened = 0;
  private openedAt = 0;
  /** An opening is due (changes made together open the stream once). */
  private due = false;
  private closed = false;

  /** `envelope`: the `_meta` of the session's requests, as it is now. */
  constructor(
    private readonly upstream: ModernUpstream,
    private readonly envelope: () => Record<string, unknown>,
    private readonly deliver: (n: JsonRpcNotification) => void,
    private readonly log: Logger,
  ) {}

  /** Listen for list changes (true) or not. */
  listChanges(on: boolean): void {
    if (this.lists === on) return;
    this.lists = on;
    this.reopen();
  }

  /** Subscribe to `uri` (true) or unsubscribe (the session has kept to its limit, MAX_SUBSCRIPTIONS in emulated-session.ts). */
  resource(uri: string, on: boolean): void {
    if (on === this.uris.has(uri)) return;
    if (on) this.uris.add(uri);
    else this.uris.delete(uri);
    this.reopen();
  }

  /** Opens the stream again once the changes made in this turn are all in. */
  private reopen(): void {
    if (this.due) return;
    this.due = true;
    queueMicrotask(() => {
      this.due = false;
      this.open();
    });
  }

  close(): void {
    this.closed = true;
    this.stop();
  }

  private stop(): void {
    clearTimeout(this.retry);
    this.stream?.abort(new ProxyError('CLIENT_GONE', 'The listen stream is no longer wanted'));
    this.stream = undefined;
  }

  /** (Re)opens the stream for what is wanted now; none when nothing is. */
  private open(): void {
    this.stop();
    if (this.closed || (!this.lists && this.uris.size === 0)) return;
    const stream = (this.stream = new AbortController());
    const notifications = {
      ...(this.lists ? { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: true } : {}),
      ...(this.uris.size ? { resourceSubscriptions: [...this.uris] } : {}),
    };
    const id = `mcp-negotiate-proxy-listen-${++this.opened}`;
    this.openedAt = Date.now();
    this.upstream
      .call(
        { jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications, _meta: this.envelope() } },
        { signal: stream.signal, timeoutMs: NO_TIMEOUT_MS, onNotification: (frame) => this.heard(frame.msg as JsonRpcNotification) },
      )
      .then(
        () => this.ended(stream, 'the upstream ended it'),
        (err: Error) => this.ended(stream, err.message),
      );
  }

  private heard(n: JsonRpcNotification): void {
    if (n.method === 'notifications/subscriptions/acknowledged') return;
    const meta = n.params?._meta;
    if (!isObject(meta) || !(META.subscriptionId in meta)) return this.deliver(n);
    const { [META.subscriptionId]: _id, ...rest } = meta;
    const { _meta: _m, ...params } = n.params!;
    this.deliver({ ...n, params: Object.keys(rest).length ? { ...params, _meta: rest } : params });
  }

  /**
   * A stream that ended while still wanted is opened again after a pause (1 s, doubling up to 30 s; back to 1 s
   * after a stream that lasted).
   */
  private ended(stream: AbortController, why: string): void {
    if (this.stream !== stream || stream.signal.aborted) return;
    this.stream = undefined;
    if (Date.now() - this.openedAt > MAX_RETRY_MS) this.retryMs = RETRY_MS;
    this.log.debug({ why, retryMs: this.retryMs }, 'upstream listen stream ended; opening it again');
    this.retry = setTimeout(() => this.open(), this.retryMs);
    this.retryMs = Math.min(this.retryMs * 2, MAX_RETRY_MS);
  }
}
