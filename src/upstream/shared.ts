/**
 * `upstream.sessions: shared`: legacy client sessions served by the pool of upstream sessions
 * (src/upstream/pool.ts) instead of one upstream process each. To the relay this is an
 * ordinary upstream connection; underneath, each request borrows a pooled session keyed by the
 * principal and the client's capabilities (alone, when it may ask the client for input), under an id of the
 * pool's own. What the server holds per session is therefore shared: the proxy answers
 * `initialize` from a pooled session, keeps `logging/setLevel` per client session, and
 * reference-counts resource subscriptions across the sessions that share the upstream.
 */
import type { Logger } from 'pino';
import { ProxyError, toJsonRpcError } from '../jsonrpc/errors.js';
import type { McpResult } from '../transformers/contract.js';
import {
  isRequest,
  isResponse,
  type Frame,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from '../jsonrpc/message.js';
import { cancelledOf } from '../mcp/cancel-progress.js';
import { INPUT_METHODS } from '../mcp/eras.js';
import { EmulatedSession } from './emulated-session.js';
import { upstreamCapabilities, type UpstreamLease, type UpstreamPool } from './pool.js';
import { Subscriptions } from './subscriptions.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

/**
 * The sessions sharing one pool: where notifications that belong to no call go, and who
 * subscribed to what. Each principal's sessions borrow pooled sessions of that principal only
 * (see UpstreamPool), and hear only what those sessions say.
 */
export class SharedUpstreamSessions {
  private readonly members = new Set<SharedConnection>();
  /**
   * Per principal: who subscribed to what, and the pooled session those subscriptions live on (held while any
   * exists: an idle one would be reaped).
   */
  private readonly principals = new Map<string, { subscribers: Subscriptions<SharedConnection>; lease?: Promise<UpstreamLease> }>();

  constructor(
    readonly pool: UpstreamPool,
    private readonly requestTimeoutMs: number,
  ) {}

  /** Subscribes or unsubscribes the upstream for `uri`; the upstream's refusal, if any (its error, relayed as is). */
  async tellUpstream(
    member: SharedConnection,
    method: 'resources/subscribe' | 'resources/unsubscribe',
    uri: string,
  ): Promise<JsonRpcErrorObject | undefined> {
    const own = this.principalOf(member);
    const pending = (own.lease ??= this.pool.acquire({ principal: member.principal, clientKey: member.client, capabilities: {} }));
    const lease = await pending.catch((err: Error) => {
      if (own.lease === pending) own.lease = undefined;
      throw err;
    });
    if (lease.client.closed) {
      // The session that held the subscriptions is gone (and them with it): start again on a new one.
      lease.release();
      if (own.lease === pending) own.lease = undefined;
      return this.tellUpstream(member, method, uri);
    }
    const outcome = await lease.client.request(method, { uri }, {}, this.requestTimeoutMs).outcome;
    if (own.subscribers.size === 0 && own.lease === pending) {
      own.lease = undefined;
      lease.release();
      if (this.principals.get(member.principal) === own) this.principals.delete(member.principal);
    }
    if ('failure' in outcome) throw outcome.failure;
    return outcome.response.error;
  }

  connect(events: UpstreamEvents, log: Logger, who: { principal: string; client: string }): UpstreamConnection {
    const member = new SharedConnection(this, events, log, this.requestTimeoutMs, who.principal, who.client);
    this.members.add(member);
    return member;
  }

  /**
   * A notification of a pooled session of `principal` ('' for a session every principal shares)
   * that belongs to no call: list changes to its members, resource updates to its subscribers.
   */
  publish(n: JsonRpcNotification, principal: string): void {
    const heard = (m: SharedConnection) => principal === '' || m.principal === principal;
    if (n.method !== 'notifications/resources/updated') {
      for (const m of this.members) if (heard(m)) m.deliver(n);
      return;
    }
    const uri = String(n.params?.uri);
    const groups = principal === '' ? [...this.principals.values()] : [this.principals.get(principal)];
    for (const group of groups) for (const m of group?.subscribers.subscribers(uri) ?? []) m.deliver(n);
  }

  /** Adds or removes a subscriber; true when the upstream must be told (first in, last out, per principal). */
  subscription(member: SharedConnection, uri: string, on: boolean): boolean {
    const { subscribers } = this.principalOf(member);
    return on ? subscribers.add(member, uri) : subscribers.remove(member, uri);
  }

  leave(member: SharedConnection): void {
    this.members.delete(member);
    const own = this.principals.get(member.principal);
    for (const uri of own?.subscribers.removeAll(member) ?? [])
      void this.tellUpstream(member, 'resources/unsubscribe', uri).catch(() => undefined);
  }

  private principalOf(member: SharedConnection) {
    let own = this.principals.get(member.principal);
    if (!own) this.principals.set(member.principal, (own = { subscribers: new Subscriptions() }));
    return own;
  }
}

class SharedConnection implements UpstreamConnection {
  private capabilities: Record<string, unknown> = {};
  private readonly emulated: EmulatedSession;
  private readonly calls = new Map<JsonRpcId, { lease: UpstreamLease; id: JsonRpcId }>();
  /** Server→client requests waiting for this client's answer: the proxy's id → where the answer goes. */
  private readonly asked = new Map<string, { lease: UpstreamLease; id: JsonRpcId; call: JsonRpcId }>();
  /** Requests waiting for a pooled session, and those of them the client cancelled meanwhile. */
  private readonly acquiring = new Set<JsonRpcId>();
  private readonly cancelled = new Set<JsonRpcId>();
  private nextAsk = 1;

  constructor(
    private readonly shared: SharedUpstreamSessions,
    private readonly events: UpstreamEvents,
    private readonly log: Logger,
    private readonly timeoutMs: number,
    readonly principal: string,
    readonly client: string,
  ) {
    this.emulated = new EmulatedSession(events);
  }

  send(frame: Frame): void {
    if (this.emulated.closed) return;
    const msg = frame.msg;
    if (isRequest(msg)) void this.request(msg);
    else if (isResponse(msg) && msg.id !== null) this.answerAsked(msg.id, msg.error ? { error: msg.error } : { result: msg.result ?? {} });
    else {
      const { requestId, reason } = cancelledOf(msg) ?? {};
      if (requestId === undefined) return;
      const call = this.calls.get(requestId);
      if (call)
        call.lease.client.cancel(
          call.id,
          reason ?? 'cancelled by the client',
          new ProxyError('CLIENT_GONE', 'The client cancelled the request'),
        );
      else if (this.acquiring.has(requestId)) this.cancelled.add(requestId);
    }
    // notifications/initialized and roots/list_changed concern the client's own session: nothing upstream to tell.
  }

  async close(): Promise<void> {
    if (!this.emulated.end()) return;
    for (const { lease, id } of this.calls.values())
      lease.client.cancel(id, 'The client session ended', new ProxyError('CLIENT_GONE', 'The client session ended'));
    this.asked.clear();
    this.shared.leave(this);
  }

  /** A notification that belongs to no call (see SharedUpstreamSessions.publish). */
  deliver(n: JsonRpcNotification): void {
    if (!this.emulated.closed && this.emulated.hears(n)) this.events.onMessage({ msg: n });
  }

  private async request(req: JsonRpcRequest): Promise<void> {
    try {
      if (this.emulated.answer(req)) return;
      const subscribing = req.method === 'resources/subscribe' || req.method === 'resources/unsubscribe';
      const answer = subscribing ? await this.subscription(req) : await this.serve(req);
      if (!answer) return; // refused by the session, which answered
      if ('error' in answer) this.emulated.error(req.id, answer.error);
      else this.emulated.reply(req.id, answer.result);
    } catch (err) {
      if (err instanceof ProxyError) this.emulated.fail(req.id, err);
      else this.emulated.error(req.id, toJsonRpcError(err));
    }
  }

  /** `initialize`, answered from a pooled session, and the rest through one. */
  private async serve(req: JsonRpcRequest): Promise<{ result: McpResult } | { error: JsonRpcErrorObject }> {
    const params = req.params ?? {};
    if (req.method === 'initialize') {
      this.capabilities = upstreamCapabilities((params.capabilities ?? {}) as Record<string, unknown>);
      return { result: { ...(await this.shared.pool.server()) } };
    }
    const exclusive = INPUT_METHODS.has(req.method) && Object.keys(this.capabilities).length > 0;
    this.acquiring.add(req.id);
    const lease = await this.shared.pool
      .acquire({ principal: this.principal, clientKey: this.client, capabilities: this.capabilities }, exclusive)
      .finally(() => this.acquiring.delete(req.id));
    if (this.emulated.closed || this.cancelled.delete(req.id)) {
      lease.release();
      throw new ProxyError('CLIENT_GONE', 'The client cancelled the request before it reached the upstream');
    }
    try {
      const call = lease.client.request(
        req.method,
        params,
        {
          onNotification: (n) => this.emulated.hears(n) && this.events.onMessage({ msg: n }, req.id),
          onServerRequest: (r) => this.ask(lease, r, req.id),
        },
        this.timeoutMs,
      );
      this.calls.set(req.id, { lease, id: call.id });
      const outcome = await call.outcome;
      if ('failure' in outcome) throw outcome.failure;
      const { error, result } = outcome.response;
      return error ? { error } : { result: result ?? {} };
    } finally {
      this.calls.delete(req.id);
      for (const [id, asked] of this.asked) if (asked.call === req.id) this.asked.delete(id);
      lease.release();
    }
  }

  /**
   * Counts the change in the session, and tells the upstream when the session is its first subscriber or its last;
   * undefined when the session refused it (and answered).
   */
  private async subscription(req: JsonRpcRequest): Promise<{ result: McpResult } | { error: JsonRpcErrorObject } | undefined> {
    const change = this.emulated.subscription(req);
    if (!change) return undefined;
    const { uri, on } = change;
    const undo = () => {
      this.shared.subscription(this, uri, !on); // as it was: the upstream did not change
      this.emulated.undoSubscription(uri, on);
    };
    if (this.shared.subscription(this, uri, on)) {
      const refused = await this.shared
        .tellUpstream(this, req.method as 'resources/subscribe' | 'resources/unsubscribe', uri)
        .catch((err: unknown) => {
          undo();
          throw err;
        });
      if (refused) {
        undo();
        return { error: refused };
      }
    }
    return { result: {} };
  }

  /** Relays a server→client request made during one of this client's calls, under an id of this session's own. */
  private ask(lease: UpstreamLease, r: JsonRpcRequest, relatedId: JsonRpcId): void {
    const id = `shared-${this.nextAsk++}`;
    this.asked.set(id, { lease, id: r.id, call: relatedId });
    this.events.onMessage({ msg: { ...r, id } }, relatedId);
  }

  private answerAsked(id: JsonRpcId, outcome: Parameters<UpstreamLease['client']['respond']>[1]): void {
    const asked = this.asked.get(String(id));
    if (!asked) return this.log.debug({ id }, 'dropped a client response nobody asked for');
    this.asked.delete(String(id));
    asked.lease.client.respond(asked.id, outcome);
  }
}
