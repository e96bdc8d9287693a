/**
 * `subscriptions/listen` for modern clients: the acknowledgement first (the subset of the
 * requested notifications the upstream can produce), then every opted-in list_changed and
 * resources/updated, each through the filter chain bound to the listen request (a client in
 * server variants hears a list change once per offered variant) and tagged with the listen
 * request's id as `subscriptionId`. One pooled upstream session per principal is held while it
 * listens; the upstream sees one `resources/subscribe` per URI however many clients listen to it.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../../jsonrpc/errors.js';
import { isObject, type JsonRpcId, type JsonRpcNotification, type JsonRpcRequest } from '../../jsonrpc/message.js';
import { META, type ModernContext } from '../../mcp/eras.js';
import type { BoundFilters, FilterChain } from '../../core/filters.js';
import type { UpstreamLease, UpstreamPool } from '../../upstream/pool.js';
import { Subscriptions } from '../../upstream/subscriptions.js';
import type { ModernReply } from './reply.js';

const KINDS = {
  toolsListChanged: { method: 'notifications/tools/list_changed', capability: 'tools' },
  promptsListChanged: { method: 'notifications/prompts/list_changed', capability: 'prompts' },
  resourcesListChanged: { method: 'notifications/resources/list_changed', capability: 'resources' },
} as const;
type Kind = keyof typeof KINDS;
const MAX_URIS = 100;

interface Listener {
  id: JsonRpcId;
  /** The filter chain bound to the listen request's capabilities. */
  filters: BoundFilters;
  /** Whose upstream session it listens to: it hears nothing of another principal's. */
  principal: string;
  kinds: Set<string>;
  uris: Set<string>;
  reply: ModernReply;
}

export class ListenHub {
  private readonly listeners = new Set<Listener>();
  /** Listeners per URI on each upstream session: the session is subscribed while any listens. */
  private readonly subscriptions = new WeakMap<object, Subscriptions<Listener>>();

  constructor(
    private readonly pool: UpstreamPool,
    private readonly filters: () => FilterChain,
    private readonly log: Logger,
    private readonly requestTimeoutMs: number,
  ) {}

  get size(): number {
    return this.listeners.size;
  }

  /** Serves one listen request until the client closes its stream (or the proxy shuts down). */
  async listen(req: JsonRpcRequest, ctx: ModernContext, reply: ModernReply): Promise<void> {
    const wanted = req.params?.notifications;
    if (!isObject(wanted)) {
      throw new ProxyError('INVALID_META', 'Invalid params: subscriptions/listen needs params.notifications (toolsListChanged, promptsListChanged, resourcesListChanged, resourceSubscriptions)');
    }
    const w = wanted as Record<string, unknown>;
    // A principal's listeners lease the same shared session (same key, not exclusive): it stays open while any of them listens.
    const principal = ctx.principal ?? '';
    const lease = await this.pool.acquire({ principal, client: ctx.client ?? principal, capabilities: {} });
    const caps = (lease.client.server?.capabilities ?? {}) as Record<string, { listChanged?: boolean; subscribe?: boolean } | undefined>;
    const honoured: Record<string, unknown> = {};
    const filters = this.filters().forRequest(ctx.clientCapabilities, lease.client.server ?? {}, this.log);
    const listener: Listener = { id: req.id, filters, principal, kinds: new Set(), uris: new Set(), reply };
    for (const kind of Object.keys(KINDS) as Kind[]) {
      if (w[kind] === true && caps[KINDS[kind].capability]?.listChanged) {
        honoured[kind] = true;
        listener.kinds.add(KINDS[kind].method);
      }
    }
    if (Array.isArray(w.resourceSubscriptions) && caps.resources?.subscribe) {
      const uris = w.resourceSubscriptions.filter((u): u is string => typeof u === 'string').slice(0, MAX_URIS);
      for (const uri of uris) listener.uris.add(uri);
      honoured.resourceSubscriptions = [...listener.uris];
    }
    const subscriptionId = { [META.subscriptionId]: req.id };
    reply.notify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: honoured, _meta: subscriptionId } });
    this.listeners.add(listener);
    const subscriptions = this.subscriptionsOf(lease);
    for (const uri of listener.uris) if (subscriptions.add(listener, uri)) this.tellUpstream(lease, 'resources/subscribe', uri);
    this.log.debug({ listeners: this.listeners.size, notifications: honoured }, 'listen stream opened');
    await new Promise<void>((resolve) => reply.cancellation.onCancel(resolve));
    this.listeners.delete(listener);
    for (const uri of subscriptions.removeAll(listener)) this.tellUpstream(lease, 'resources/unsubscribe', uri);
    lease.release();
    reply.answer({ msg: { jsonrpc: '2.0', id: req.id, result: { resultType: 'complete', _meta: subscriptionId } } });
  }

  /**
   * An upstream notification that belongs to no call, from a session of `principal` ('' for one
   * every principal shares): fanned out to that principal's listeners that asked for it.
   */
  publish(n: JsonRpcNotification, principal: string): void {
    if (this.listeners.size === 0) return;
    const uri = n.method === 'notifications/resources/updated' ? String(n.params?.uri ?? '') : undefined;
    for (const l of this.listeners) {
      if (principal !== '' && l.principal !== principal) continue;
      if (uri !== undefined ? !l.uris.has(uri) : !l.kinds.has(n.method)) continue;
      for (const m of l.filters.onNotification(n) ?? [n]) {
        l.reply.notify({ jsonrpc: '2.0', method: m.method, params: { ...m.params, _meta: { ...(m.params?._meta as object), [META.subscriptionId]: l.id } } });
      }
    }
  }

  private subscriptionsOf(lease: UpstreamLease): Subscriptions<Listener> {
    let subscriptions = this.subscriptions.get(lease.client);
    if (!subscriptions) this.subscriptions.set(lease.client, (subscriptions = new Subscriptions()));
    return subscriptions;
  }

  private tellUpstream(lease: UpstreamLease, method: 'resources/subscribe' | 'resources/unsubscribe', uri: string): void {
    const { outcome } = lease.client.request(method, { uri }, {}, this.requestTimeoutMs);
    void outcome.then((o) => {
      const failed = 'failure' in o ? o.failure.message : o.response.error?.message;
      if (failed) this.log.warn({ uri, method, err: failed }, 'upstream refused a resource subscription change');
    });
  }
}
