/**
 * A session the proxy holds for a legacy client in front of an upstream that holds none for it
 * (pooled upstream sessions, a 2026-07-28 server): what it answers itself, the level the client
 * set, the resources it subscribed to, and how its local replies and its end reach the client,
 * the same whatever the upstream. How `initialize` is answered, where subscriptions go and how
 * calls travel stay with each upstream kind.
 */
import type { ProxyError } from '../jsonrpc/errors.js';
import { INVALID_PARAMS, type JsonRpcErrorObject, type JsonRpcId, type JsonRpcRequest } from '../jsonrpc/message.js';
import { LOG_LEVELS, passesLogLevel } from '../mcp/eras.js';
import type { McpResult } from '../transformers/contract.js';
import type { UpstreamEvents } from './types.js';

/** Resources one session may subscribe to (a bridged session opens its listen stream again with the whole list on each change). */
export const MAX_SUBSCRIPTIONS = 100;

export class EmulatedSession {
  /** The level the client set with logging/setLevel (one of LOG_LEVELS); none until it sets one. */
  logLevel: string | undefined;
  private readonly subscribed = new Set<string>();
  private ended = false;

  constructor(private readonly events: UpstreamEvents) {}

  get closed(): boolean {
    return this.ended;
  }

  /** Answers ping and logging/setLevel; false for any other request, which is the caller's to serve. */
  answer(req: JsonRpcRequest): boolean {
    if (req.method === 'logging/setLevel') {
      const level = req.params?.level;
      // Filtered here or sent upstream in `_meta`, the level must be one the proxy knows; a refused one leaves the set one.
      if (typeof level !== 'string' || !LOG_LEVELS.includes(level)) {
        const message = `Invalid params: unknown log level ${JSON.stringify(level)}; use one of ${LOG_LEVELS.join(', ')}`;
        this.error(req.id, { code: INVALID_PARAMS, message });
        return true;
      }
      this.logLevel = level;
    } else if (req.method !== 'ping') return false;
    this.reply(req.id, {});
    return true;
  }

  /**
   * Whether a notification reaches the client: log messages from the level it set on, and all of them until it
   * sets one (the server decides, as with a session of its own).
   */
  hears(n: { method: string; params?: Record<string, unknown> }): boolean {
    return this.logLevel === undefined || passesLogLevel(n, LOG_LEVELS.indexOf(this.logLevel));
  }

  /**
   * Takes a resources/subscribe or unsubscribe into the session's subscriptions before the upstream hears of it
   * (so those under way count against the limit): its URI and direction, or undefined when refused, answered here.
   * A change the upstream then refuses is put back with `undoSubscription`.
   */
  subscription(req: JsonRpcRequest): { uri: string; on: boolean } | undefined {
    const uri = req.params?.uri;
    if (typeof uri !== 'string') {
      this.error(req.id, { code: INVALID_PARAMS, message: `Invalid params: ${req.method} needs params.uri, a string` });
      return undefined;
    }
    const on = req.method === 'resources/subscribe';
    if (on && !this.subscribed.has(uri) && this.subscribed.size >= MAX_SUBSCRIPTIONS) {
      const message = `Invalid params: a session may subscribe to at most ${MAX_SUBSCRIPTIONS} resources; unsubscribe from some first`;
      this.error(req.id, { code: INVALID_PARAMS, message });
      return undefined;
    }
    if (on) this.subscribed.add(uri);
    else this.subscribed.delete(uri);
    return { uri, on };
  }

  undoSubscription(uri: string, on: boolean): void {
    if (on) this.subscribed.delete(uri);
    else this.subscribed.add(uri);
  }

  reply(id: JsonRpcId, result: McpResult): void {
    if (!this.ended) this.events.onMessage({ msg: { jsonrpc: '2.0', id, result } }, id);
  }

  error(id: JsonRpcId, error: JsonRpcErrorObject): void {
    if (!this.ended) this.events.onMessage({ msg: { jsonrpc: '2.0', id, error } }, id);
  }

  /** The proxy could not answer request `id` (whoever waits turns the failure into its era's error). */
  fail(id: JsonRpcId, err: ProxyError): void {
    if (!this.ended) this.events.onFailure(id, err);
  }

  /** Ends the session: nothing more reaches the client. False when it had ended already. */
  end(): boolean {
    if (this.ended) return false;
    this.ended = true;
    return true;
  }
}
