/**
 * `subscriptions/listen` for modern clients: the acknowledgement first (the subset of the
 * requested notifications the upstream can produce, and the tasks the proxy will report on), then
 * every opted-in list_changed and resources/updated, each through the filter chain bound to the
 * listen request (a client in server variants hears a list change once per offered variant), and
 * `notifications/tasks` for each named task of the listener's own, its state now and on each
 * status change; all tagged with the listen request's id as `subscriptionId`. One pooled upstream
 * session per principal is held while it listens for the upstream's notifications; the upstream
 * sees one `resources/subscribe` per URI however many clients listen to it.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../../jsonrpc/errors.js';
import { isObject, type JsonRpcId, type JsonRpcNotification, type JsonRpcRequest } from '../../jsonrpc/message.js';
import { META } from '../../mcp/eras.js';
import type { RequestContext } from '../../mcp/request-context.js';
import type { BoundFilters, FilterChain } from '../../core/filters.js';
import type { UpstreamLease, UpstreamPool } from '../../upstream/pool.js';
import { Subscriptions } from '../../upstream/subscriptions.js';
import type { ModernReply } from './reply.js';
import { onAbort } from '../../upstream/call-abort.js';
import { Tasks, TASKS_EXTENSION } from './tasks.js';
import type { McpResult } from '../../transformers/contract.js';

const KINDS = {
  toolsListChanged: { method: 'notifications/tools/list_changed', capability: 'tools' },
  promptsListChanged: { method: 'notifications/prompts/list_changed', capability: 'prompts' },
  resourcesListChanged: { method: 'notifications/resources/list_changed', capability: 'resources' },
} as const;
type Kind = keyof typeof KINDS;
const MAX_URIS = 100;
/** Tasks one listen request may follow (more than a client may keep: see modern.tasks.perClient). */
const MAX_TASK_IDS = 100;

/** Where listeners follow the status of tasks (the tasks extension, when the proxy offers it). */
export interface TaskWatch {
  /** Follows the task `taskId` names when it is the requester's and held here; undefined otherwise. */
  watch(taskId: string, ctx: RequestContext, hear: (task: McpResult) => void): { now: McpResult; stop(): void } | undefined;
}

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

  /** Serves one listen request until the client closes its stream (or the proxy shuts down); `tasks`: where task status is followed. */
  async listen(req: JsonRpcRequest, ctx: RequestContext, reply: ModernReply, tasks?: TaskWatch): Promise<void> {
    const wanted = req.params?.notifications;
    if (!isObject(wanted)) {
      throw new ProxyError(
        'INVALID_META',
        'Invalid params: subscriptions/listen needs params.notifications (toolsListChanged, ' +
          'promptsListChanged, resourcesListChanged, resourceSubscriptions, taskIds)',
      );
    }
    const w = wanted;
    const taskIds =
      tasks && Array.isArray(w.taskIds)
        ? [...new Set(w.taskIds.filter((id): id is string => typeof id === 'string'))].slice(0, MAX_TASK_IDS)
        : undefined;
    if (taskIds && !Tasks.declared(ctx)) {
      throw new ProxyError(
        'MISSING_CLIENT_CAPABILITY',
        'Task status notifications (notifications.taskIds) are part of the ' +
          `${TASKS_EXTENSION} extension, which this request does not declare`,
        { requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } } },
      );
    }
    const principal = ctx.principal ?? '';
    // A principal's listeners lease the same shared session (same key, not exclusive): it stays open while any of them listens.
    // A listener of task status alone needs none.
    const fromUpstream = (Object.keys(KINDS) as Kind[]).some((kind) => w[kind] === true) || Array.isArray(w.resourceSubscriptions);
    const lease = fromUpstream
      ? await this.pool.acquire({ principal, clientKey: ctx.clientKey ?? principal, capabilities: {} })
      : undefined;
    const caps = (lease?.client.server?.capabilities ?? {}) as Record<string, { listChanged?: boolean; subscribe?: boolean } | undefined>;
    const honoured: Record<string, unknown> = {};
    const filters = this.filters().forRequest(ctx, lease?.client.server ?? {});
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
    // Tasks of another principal, unknown, expired or held by another replica are not followed (the client polls).
    const tellTask = (task: McpResult) =>
      reply.notify({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...task, _meta: subscriptionId } });
    const followed: Array<{ now: McpResult; stop(): void }> = [];
    if (taskIds) {
      const agreed: string[] = [];
      for (const id of taskIds) {
        const follow = tasks!.watch(id, ctx, tellTask);
        if (!follow) continue;
        followed.push(follow);
        agreed.push(id);
      }
      honoured.taskIds = agreed;
    }
    reply.notify({
      jsonrpc: '2.0',
      method: 'notifications/subscriptions/acknowledged',
      params: { notifications: honoured, _meta: subscriptionId },
    });
    // Each followed task's state now: a change between its creation and this request is not missed.
    for (const follow of followed) tellTask(follow.now);
    this.listeners.add(listener);
    const subscriptions = lease && this.subscriptionsOf(lease);
    for (const uri of listener.uris) if (subscriptions!.add(listener, uri)) this.tellUpstream(lease!, 'resources/subscribe', uri);
    this.log.debug({ listeners: this.listeners.size, notifications: honoured }, 'listen stream opened');
    await new Promise<void>((resolve) => onAbort(reply.cancellation, resolve));
    this.listeners.delete(listener);
    for (const follow of followed) follow.stop();
    if (lease) {
      for (const uri of subscriptions!.removeAll(listener)) this.tellUpstream(lease, 'resources/unsubscribe', uri);
      lease.release();
    }
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
        l.reply.notify({
          jsonrpc: '2.0',
          method: m.method,
          params: { ...m.params, _meta: { ...(m.params?._meta as object), [META.subscriptionId]: l.id } },
        });
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
