/**
 * A session the proxy holds for a legacy client in front of an upstream that holds none for it
 * (pooled upstream sessions, a 2026-07-28 server). To the relay it is an ordinary upstream
 * connection. It answers `ping` and `logging/setLevel` itself, filters log messages by the level
 * the client set, keeps the client's subscriptions (within a limit), routes the client's answers
 * to the server's requests and its cancellations to the calls they name, and answers every
 * request once, the same whatever the upstream. How `initialize` is answered, where
 * subscriptions go and how one call travels are the upstream kind's: a SessionBackend.
 */
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import {
  INVALID_PARAMS,
  isNotification,
  isObject,
  isResponse,
  type Frame,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcNotification,
  type JsonRpcRequest,
} from '../jsonrpc/message.js';
import { cancelledOf } from '../mcp/cancel-progress.js';
import { LOG_LEVELS, passesLogLevel } from '../mcp/eras.js';
import type { InputResponses } from '../mcp/input-round.js';
import type { McpResult } from '../transformers/contract.js';
import { CallAbort, type CallSignal } from './call-abort.js';
import { ClientRounds, ClientRefused } from './client-rounds.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

/** Resources one session may subscribe to (a bridged session opens its listen stream again with the whole list on each change). */
export const MAX_SUBSCRIPTIONS = 100;
const CALL_OVER = new ProxyError('CLIENT_GONE', 'The call this input request belonged to is over');

/** What the session knows of its client: what its initialize declared, and the log level it set. */
export interface SessionClient {
  capabilities: Record<string, unknown>;
  info?: unknown;
  /** One of LOG_LEVELS; none until the client sets one. */
  logLevel?: string;
}

/** What one call may do while it runs. */
export interface CallHooks {
  /** Aborted when the client cancels the call or the session ends: nothing waits for its answer any more. */
  signal: CallSignal;
  /** Runs `fn` when the signal aborts (cheaper than a listener on the signal, which costs tens of µs in Node 20). */
  onCancel(fn: (reason: ProxyError) => void): void;
  /** A notification about the call (progress, a log message), for the client. */
  notify(n: JsonRpcNotification): void;
  /** Relays a server→client request made during the call; resolves with the client's answer. */
  ask(req: JsonRpcRequest): Promise<{ result: McpResult } | { error: JsonRpcErrorObject }>;
  /** Puts a 2026-07-28 input round to the client; resolves with its answers by key (see ClientRounds). */
  round(requests: Record<string, unknown>): Promise<InputResponses>;
}

/** The upstream side of an emulated session. */
export interface SessionBackend {
  /** The initialize result for the client (`params`: its initialize request's; what it declared is `client` from now on). */
  initialize(client: SessionClient, params: Record<string, unknown>): Promise<McpResult>;
  /** The client said `notifications/initialized`. */
  initialized?(): void;
  /** Tells the upstream of a subscription change; its refusal, relayed as is (the session then forgets the change). */
  subscription(uri: string, on: boolean): Promise<JsonRpcErrorObject | undefined>;
  /** One client request; rejects with a ProxyError (or the client's refusal of an input request) when no answer came. */
  call(req: JsonRpcRequest, hooks: CallHooks): Promise<{ result: McpResult } | { error: JsonRpcErrorObject }>;
  /** The session ended (its calls are aborted already). */
  close(): void;
}

export class EmulatedSession implements UpstreamConnection {
  readonly client: SessionClient = { capabilities: {} };
  private readonly subscribed = new Set<string>();
  /** The client's requests under way, by its ids: how each is cancelled. */
  private readonly calls = new Map<JsonRpcId, Call>();
  private readonly rounds: ClientRounds;
  private ended = false;

  constructor(
    private readonly events: UpstreamEvents,
    private readonly backend: SessionBackend,
    private readonly log: Logger,
    /** How long the client gets to answer one input request of a round. */
    inputTimeoutMs: number,
  ) {
    this.rounds = new ClientRounds((frame, relatedId) => events.onMessage(frame, relatedId), inputTimeoutMs);
  }

  get closed(): boolean {
    return this.ended;
  }

  send(frame: Frame): void {
    if (this.ended) return;
    const msg = frame.msg;
    if (isResponse(msg)) {
      if (!this.rounds.answered(msg)) this.log.debug({ id: msg.id }, 'dropped a client response nobody waits for');
      return;
    }
    if (isNotification(msg)) {
      const cancelled = cancelledOf(msg);
      if (cancelled?.requestId !== undefined)
        this.calls.get(cancelled.requestId)?.cancel(new ProxyError('CLIENT_GONE', cancelled.reason ?? 'The client cancelled the request'));
      else if (cancelled) this.log.debug({ reason: cancelled.reason }, 'ignored a cancellation that names no request');
      else if (msg.method === 'notifications/initialized') this.backend.initialized?.();
      return; // roots/list_changed concerns the client's own session: there is none upstream to tell
    }
    const req = msg as JsonRpcRequest;
    if (this.answer(req)) return;
    if (req.method === 'initialize') return void this.initialize(req);
    if (req.method === 'resources/subscribe' || req.method === 'resources/unsubscribe') return void this.subscription(req);
    void this.call(req);
  }

  close(): Promise<void> {
    if (this.ended) return Promise.resolve();
    this.ended = true;
    const gone = new ProxyError('CLIENT_GONE', 'The client session ended');
    for (const call of this.calls.values()) call.cancel(gone);
    this.calls.clear();
    this.rounds.close(gone);
    this.backend.close();
    return Promise.resolve();
  }

  session(): { id?: string; protocolVersion?: string } {
    return {};
  }

  /** A notification that belongs to no call (a list change, a resource update), when the client hears it. */
  deliver(n: JsonRpcNotification): void {
    if (!this.ended && this.hears(n)) this.events.onMessage({ msg: n });
  }

  /**
   * Whether a notification reaches the client: log messages from the level it set on, and all of them until it
   * sets one (the server decides, as with a session of its own).
   */
  private hears(n: JsonRpcNotification): boolean {
    const level = this.client.logLevel;
    return level === undefined || passesLogLevel(n, LOG_LEVELS.indexOf(level));
  }

  /** Answers ping and logging/setLevel; false for any other request. */
  private answer(req: JsonRpcRequest): boolean {
    if (req.method === 'logging/setLevel') {
      const level = req.params?.level;
      // Filtered here or sent upstream in `_meta`, the level must be one the proxy knows; a refused one leaves the set one.
      if (typeof level !== 'string' || !LOG_LEVELS.includes(level)) {
        const message = `Invalid params: unknown log level ${JSON.stringify(level)}; use one of ${LOG_LEVELS.join(', ')}`;
        this.error(req.id, { code: INVALID_PARAMS, message });
        return true;
      }
      this.client.logLevel = level;
    } else if (req.method !== 'ping') return false;
    this.reply(req.id, {});
    return true;
  }

  private async initialize(req: JsonRpcRequest): Promise<void> {
    const params = req.params ?? {};
    this.client.capabilities = isObject(params.capabilities) ? params.capabilities : {};
    this.client.info = params.clientInfo;
    await this.settle(req.id, async () => ({ result: await this.backend.initialize(this.client, params) }));
  }

  /**
   * Takes a resources/subscribe or unsubscribe into the session's subscriptions before the upstream hears of it
   * (so those under way count against the limit); a change the upstream refuses is put back.
   */
  private async subscription(req: JsonRpcRequest): Promise<void> {
    const uri = req.params?.uri;
    if (typeof uri !== 'string')
      return this.error(req.id, { code: INVALID_PARAMS, message: `Invalid params: ${req.method} needs params.uri, a string` });
    const on = req.method === 'resources/subscribe';
    if (on && !this.subscribed.has(uri) && this.subscribed.size >= MAX_SUBSCRIPTIONS) {
      const message = `Invalid params: a session may subscribe to at most ${MAX_SUBSCRIPTIONS} resources; unsubscribe from some first`;
      return this.error(req.id, { code: INVALID_PARAMS, message });
    }
    const had = this.subscribed.has(uri);
    if (on) this.subscribed.add(uri);
    else this.subscribed.delete(uri);
    const undo = () => (had ? this.subscribed.add(uri) : this.subscribed.delete(uri));
    await this.settle(req.id, async () => {
      const refused = await this.backend.subscription(uri, on).catch((err: unknown) => {
        undo();
        throw err;
      });
      if (refused) undo();
      return refused ? { error: refused } : { result: {} };
    });
  }

  /** One client request through the backend, cancellable by the client until it is answered. */
  private async call(req: JsonRpcRequest): Promise<void> {
    const call = new Call();
    this.calls.set(req.id, call);
    const signal = call.signal;
    try {
      await this.settle(
        req.id,
        () =>
          this.backend.call(req, {
            signal,
            onCancel: (fn) => (call.onCancel = fn),
            notify: (n) => !this.ended && this.hears(n) && this.events.onMessage({ msg: n }, req.id),
            ask: (r) => this.rounds.relay(r, req.id, signal),
            round: (requests) => this.round(requests, req.id, signal),
          }),
        signal,
      );
    } finally {
      if (this.calls.get(req.id) === call) {
        this.calls.delete(req.id); // a new request may reuse a cancelled one's id
        this.rounds.forget(req.id, CALL_OVER);
      }
    }
  }

  /** A round's answers; the call's time limit stops while the client answers. */
  private async round(requests: Record<string, unknown>, relatedId: JsonRpcId, signal: CallSignal): Promise<InputResponses> {
    this.events.onWaiting?.(relatedId, true);
    try {
      return await this.rounds.round(requests, this.client.capabilities, relatedId, signal);
    } finally {
      this.events.onWaiting?.(relatedId, false);
    }
  }

  /** Answers request `id` with what `serve` gives, or with its failure; nothing once the call was cancelled or the session ended. */
  private async settle(
    id: JsonRpcId,
    serve: () => Promise<{ result: McpResult } | { error: JsonRpcErrorObject }>,
    signal?: CallSignal,
  ): Promise<void> {
    try {
      const answer = await serve();
      if (signal?.aborted) return;
      if ('error' in answer) this.error(id, answer.error);
      else this.reply(id, answer.result);
    } catch (err) {
      if (signal?.aborted) return; // cancelled by the client, or the session ended: nothing waits for an answer
      if (err instanceof ClientRefused) return this.error(id, err.error);
      const failure = err instanceof ProxyError ? err : new ProxyError('UPSTREAM_PROTOCOL', (err as Error)?.message ?? String(err));
      // An answer no client may be given (a round too many, a URL that is no web URL): the operator hears of it.
      if (failure.code === 'UPSTREAM_PROTOCOL')
        this.log.warn({ id, err: failure.message }, "the upstream's answer could not be relayed to the client");
      if (!this.ended) this.events.onFailure(id, failure);
    }
  }

  private reply(id: JsonRpcId, result: McpResult): void {
    if (!this.ended) this.events.onMessage({ msg: { jsonrpc: '2.0', id, result } }, id);
  }

  private error(id: JsonRpcId, error: JsonRpcErrorObject): void {
    if (!this.ended) this.events.onMessage({ msg: { jsonrpc: '2.0', id, error } }, id);
  }
}

/** One call's cancellation: the signal, then the backend's own step (telling the upstream). */
class Call {
  private readonly abort = new CallAbort();
  onCancel?: (reason: ProxyError) => void;

  get signal(): CallSignal {
    return this.abort;
  }

  cancel(reason: ProxyError): void {
    if (this.abort.aborted) return;
    this.abort.abort(reason);
    this.onCancel?.(reason);
  }
}
