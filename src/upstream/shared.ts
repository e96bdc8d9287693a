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
import { ProxyError } from '../jsonrpc/errors.js';
import type { JsonRpcErrorObject, JsonRpcNotification, JsonRpcRequest, JsonRpcResponse } from '../jsonrpc/message.js';
import { INPUT_METHODS } from '../mcp/eras.js';
import type { UpstreamCall } from './call.js';
import { LIST_METHODS } from './list-cache.js';
import type { McpResult } from '../transformers/contract.js';
import { EmulatedSession, type CallHooks, type SessionBackend, type SessionClient } from './emulated-session.js';
import { upstreamCapabilities, type UpstreamLease, type UpstreamPool } from './pool.js';
import { Subscriptions } from './subscriptions.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

/**
 * The sessions sharing one pool: where notifications that belong to no call go, and who
 * subscribed to what. Each principal's sessions borrow pooled sessions of that principal only
 * (see UpstreamPool), and hear only what those sessions say.
 */
export class SharedUpstreamSessions {
  private readonly members = new Set<PooledSession>();
  /**
   * Per principal: who subscribed to what, and the pooled session those subscriptions live on (held while any
   * exists: an idle one would be reaped).
   */
  private readonly principals = new Map<string, { subscribers: Subscriptions<PooledSession>; lease?: Promise<UpstreamLease> }>();

  constructor(
    readonly pool: UpstreamPool,
    /** List requests through the pool, answered from the list cache. */
    readonly lists: UpstreamCall,
    private readonly requestTimeoutMs: number,
  ) {}

  /** Subscribes or unsubscribes the upstream for `uri`; the upstream's refusal, if any (its error, relayed as is). */
  async tellUpstream(
    member: PooledSession,
    method: 'resources/subscribe' | 'resources/unsubscribe',
    uri: string,
    undo?: () => void,
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
      return this.tellUpstream(member, method, uri, undo);
    }
    const outcome = await lease.client.request(method, { uri }, {}, this.requestTimeoutMs).outcome;
    // A change the upstream did not make is undone before the count decides whether the session is still needed.
    if ('failure' in outcome || outcome.response.error) undo?.();
    if (own.subscribers.size === 0 && own.lease === pending) {
      own.lease = undefined;
      lease.release();
      if (this.principals.get(member.principal) === own) this.principals.delete(member.principal);
    }
    if ('failure' in outcome) throw outcome.failure;
    return outcome.response.error;
  }

  connect(events: UpstreamEvents, log: Logger, who: { principal: string; client: string }): UpstreamConnection {
    let session: EmulatedSession | undefined;
    const member = new PooledSession(this, this.requestTimeoutMs, who.principal, who.client, (n) => session?.deliver(n));
    // A legacy server's requests to the client are relayed as they are, under the call's time limit: no input round of its own.
    session = new EmulatedSession(events, member, log, this.requestTimeoutMs);
    this.members.add(member);
    return session;
  }

  /**
   * A notification of a pooled session of `principal` ('' for a session every principal shares)
   * that belongs to no call: list changes to its members, resource updates to its subscribers.
   */
  publish(n: JsonRpcNotification, principal: string): void {
    const heard = (m: PooledSession) => principal === '' || m.principal === principal;
    if (n.method !== 'notifications/resources/updated') {
      for (const m of this.members) if (heard(m)) m.deliver(n);
      return;
    }
    const uri = String(n.params?.uri);
    const groups = principal === '' ? [...this.principals.values()] : [this.principals.get(principal)];
    for (const group of groups) for (const m of group?.subscribers.subscribers(uri) ?? []) m.deliver(n);
  }

  /** Adds or removes a subscriber; true when the upstream must be told (first in, last out, per principal). */
  subscription(member: PooledSession, uri: string, on: boolean): boolean {
    const { subscribers } = this.principalOf(member);
    return on ? subscribers.add(member, uri) : subscribers.remove(member, uri);
  }

  /** Puts back a change the upstream did not make, unless the session has left meanwhile (it has no subscriptions then). */
  undo(member: PooledSession, uri: string, on: boolean): void {
    if (this.members.has(member)) this.subscription(member, uri, !on);
  }

  leave(member: PooledSession): void {
    this.members.delete(member);
    const own = this.principals.get(member.principal);
    for (const uri of own?.subscribers.removeAll(member) ?? [])
      void this.tellUpstream(member, 'resources/unsubscribe', uri).catch(() => undefined);
  }

  private principalOf(member: PooledSession) {
    let own = this.principals.get(member.principal);
    if (!own) this.principals.set(member.principal, (own = { subscribers: new Subscriptions() }));
    return own;
  }
}

/** One legacy client session's side of the pool: its calls borrow pooled sessions of its principal. */
class PooledSession implements SessionBackend {
  /** The client's capabilities as the pool keys sessions by them (see upstreamCapabilities). */
  private capabilities: Record<string, unknown> = {};

  constructor(
    private readonly shared: SharedUpstreamSessions,
    private readonly timeoutMs: number,
    readonly principal: string,
    readonly client: string,
    /** A notification that belongs to no call, for the client session (see SharedUpstreamSessions.publish). */
    readonly deliver: (n: JsonRpcNotification) => void,
  ) {}

  /** Answered from a pooled session. */
  async initialize(client: SessionClient): Promise<McpResult> {
    this.capabilities = upstreamCapabilities(client.capabilities);
    return { ...(await this.shared.pool.server()) };
  }

  /** Counted across the sessions of the principal; the upstream is told when this one is the first subscriber or the last. */
  async subscription(uri: string, on: boolean): Promise<JsonRpcErrorObject | undefined> {
    if (!this.shared.subscription(this, uri, on)) return undefined;
    let undone = false;
    const undo = () => {
      if (!undone) this.shared.undo(this, uri, on);
      undone = true;
    };
    const method = on ? 'resources/subscribe' : 'resources/unsubscribe';
    return this.shared.tellUpstream(this, method, uri, undo).catch((err: unknown) => {
      undo();
      throw err;
    });
  }

  /** Through a pooled session, alone when it may ask the client for input; the server's requests to the client go to it as they are. */
  async call(req: JsonRpcRequest, hooks: CallHooks): Promise<{ result: McpResult } | { error: JsonRpcErrorObject }> {
    if (LISTS.has(req.method)) return this.list(req, hooks);
    const exclusive = INPUT_METHODS.has(req.method) && Object.keys(this.capabilities).length > 0;
    const lease = await this.shared.pool.acquire(
      { principal: this.principal, clientKey: this.client, capabilities: this.capabilities },
      exclusive,
    );
    if (hooks.signal.aborted) {
      lease.release();
      throw new ProxyError('CLIENT_GONE', 'The client cancelled the request before it reached the upstream');
    }
    try {
      const call = lease.client.request(
        req.method,
        req.params ?? {},
        {
          onNotification: (n) => hooks.notify(n),
          onServerRequest: (r) =>
            void hooks.ask(r).then(
              (answer) => lease.client.respond(r.id, answer),
              () => undefined, // the call is over: nobody upstream waits for the answer
            ),
        },
        this.timeoutMs,
      );
      hooks.onCancel((reason) => lease.client.cancel(call.id, reason.message, reason));
      const outcome = await call.outcome;
      if ('failure' in outcome) throw outcome.failure;
      const { error, result } = outcome.response;
      return error ? { error } : { result: result ?? {} };
    } finally {
      lease.release();
    }
  }

  /** A list request, from the list cache or through a pooled session it borrows for the call. */
  private async list(req: JsonRpcRequest, hooks: CallHooks): Promise<{ result: McpResult } | { error: JsonRpcErrorObject }> {
    const { frame } = await this.shared.lists.call(req, {
      caller: { principal: this.principal, clientKey: this.client, capabilities: this.capabilities },
      signal: hooks.signal,
      timeoutMs: this.timeoutMs,
      onNotification: (n) => hooks.notify(n.msg as JsonRpcNotification),
    });
    const { error, result } = frame.msg as JsonRpcResponse;
    return error ? { error } : { result: result ?? {} };
  }

  close(): void {
    this.shared.leave(this);
  }
}

const LISTS = new Set<string>(LIST_METHODS);
