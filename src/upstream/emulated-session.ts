/**
 * A session the proxy holds for a legacy client in front of an upstream that holds none for it
 * (pooled upstream sessions, a 2026-07-28 server): what it answers itself, the level the client
 * set, and how its local replies and its end reach the client, the same whatever the upstream.
 * How `initialize` is answered, where subscriptions go and how calls travel stay with each upstream kind.
 */
import type { ProxyError } from '../jsonrpc/errors.js';
import type { JsonRpcErrorObject, JsonRpcId, JsonRpcRequest } from '../jsonrpc/message.js';
import type { McpResult } from '../transformers/contract.js';
import type { UpstreamEvents } from './types.js';

export class EmulatedSession {
  /** The level the client set with logging/setLevel, as it sent it; none until it sets one. */
  logLevel: string | undefined;
  private ended = false;

  constructor(private readonly events: UpstreamEvents) {}

  get closed(): boolean {
    return this.ended;
  }

  /** Answers ping and logging/setLevel; false for any other request, which is the caller's to serve. */
  answer(req: JsonRpcRequest): boolean {
    if (req.method === 'logging/setLevel') this.logLevel = typeof req.params?.level === 'string' ? req.params.level : undefined;
    else if (req.method !== 'ping') return false;
    this.reply(req.id, {});
    return true;
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
