/**
 * A modern upstream's `input_required` round as a legacy client is asked it: each input request
 * becomes a server→client request on the stream of the call it belongs to, all at once, under
 * ids the proxy picks. The round ends with every answer, or with the first failure (a refusal, a
 * timeout, a capability the client did not declare), and then the requests still open are
 * withdrawn with `notifications/cancelled`, as they are when the call itself ends.
 */
import { randomUUID } from 'node:crypto';
import { ProxyError } from '../jsonrpc/errors.js';
import { CallAbort, type CallSignal } from './call-abort.js';
import {
  INTERNAL_ERROR,
  isObject,
  type Frame,
  type JsonRpcErrorObject,
  type JsonRpcId,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../jsonrpc/message.js';
import { cancelledNotification } from '../mcp/cancel-progress.js';
import { capabilityFor, declares } from '../mcp/eras.js';
import { INPUT_REQUEST_METHODS, type InputResponses } from '../mcp/input-round.js';
import { refusedElicitation, refusedUrlError } from '../mcp/url-elicitation.js';
import type { McpResult } from '../transformers/contract.js';

/** Input requests one round may put to the client at once. */
export const MAX_INPUT_REQUESTS = 16;

interface Asked {
  method: string;
  /** The client request the input request was asked during. */
  relatedId: JsonRpcId;
  answer(msg: JsonRpcResponse): void;
  reject(err: unknown): void;
}

/**
 * The client answered an input request with an error: the call it belongs to fails with it (as an internal error: the
 * client's code means nothing for the call).
 */
export class ClientRefused extends Error {
  readonly error: JsonRpcErrorObject;
  constructor(method: string, refusal: JsonRpcErrorObject) {
    super(refusal.message);
    this.error = {
      code: INTERNAL_ERROR,
      message: `The client refused the server's ${method}: ${refusal.message}`,
      data: { clientCode: refusal.code },
    };
  }
}

export class ClientRounds {
  /** Input requests put to the client and not yet answered, by the ids the proxy gave them. */
  private readonly asked = new Map<string, Asked>();

  /** `deliver`: a message to the client, on the stream of request `relatedId`. */
  constructor(
    private readonly deliver: (frame: Frame, relatedId: JsonRpcId) => void,
    private readonly timeoutMs: number,
  ) {}

  /** Puts a round's input requests to a client with `capabilities`; resolves with the answers by key. */
  async round(
    requests: Record<string, unknown>,
    capabilities: Record<string, unknown>,
    relatedId: JsonRpcId,
    signal: CallSignal,
  ): Promise<InputResponses> {
    const keys = Object.keys(requests);
    if (keys.length > MAX_INPUT_REQUESTS)
      throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream asked for more than ${MAX_INPUT_REQUESTS} inputs in one round`);
    const asked = keys.map((key) => {
      const entry = requests[key];
      if (!isObject(entry) || typeof entry.method !== 'string' || !INPUT_REQUEST_METHODS.has(entry.method))
        throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream asked for input "${key}" with a request a client cannot be asked`);
      const params = isObject(entry.params) ? entry.params : {};
      const refused = refusedElicitation(entry.method, params);
      if (refused) throw refusedUrlError(refused);
      const needed = capabilityFor(entry.method, params)!;
      if (!declares(capabilities, needed))
        throw new ProxyError(
          'MISSING_CLIENT_CAPABILITY',
          `The server needs ${entry.method} (${JSON.stringify(needed)}), which this client did not declare at initialize`,
          { requiredCapabilities: needed },
        );
      return { key, method: entry.method, params: withElicitationId(entry.method, params) };
    });
    // Aborted with the call, or by the round's first failure (its other input requests are no longer needed).
    const round = new CallAbort();
    const callOver = () => round.abort(signal.reason);
    if (signal.aborted) callOver();
    else signal.addEventListener('abort', callOver, { once: true });
    try {
      const answers = await Promise.all(asked.map(async (q) => [q.key, await this.ask(q.method, q.params, relatedId, round)] as const));
      return Object.fromEntries(answers);
    } catch (err) {
      round.abort(err);
      throw err;
    } finally {
      signal.removeEventListener('abort', callOver);
    }
  }

  /**
   * Relays a legacy server's own request to the client, as it is but for its id (no time limit of its own: the
   * call's holds); resolves with the client's answer, whatever it is. `signal` withdraws it.
   */
  relay(req: JsonRpcRequest, relatedId: JsonRpcId, signal: CallSignal): Promise<{ result: McpResult } | { error: JsonRpcErrorObject }> {
    const id = `mcp-negotiate-proxy-relayed-${randomUUID()}`;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const onAbort = () => fail(signal.reason);
      const fail = (err: unknown) => {
        this.asked.delete(id);
        signal.removeEventListener('abort', onAbort);
        reject(err);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.asked.set(id, {
        method: req.method,
        relatedId,
        answer: (msg) => {
          this.asked.delete(id);
          signal.removeEventListener('abort', onAbort);
          resolve(msg.error ? { error: msg.error } : { result: msg.result ?? {} });
        },
        reject: fail,
      });
      this.deliver({ msg: { ...req, id } }, relatedId);
    });
  }

  /** The client's answer to one of the input requests. */
  answered(msg: JsonRpcResponse): boolean {
    const asked = typeof msg.id === 'string' ? this.asked.get(msg.id) : undefined;
    if (!asked) return false;
    asked.answer(msg);
    return true;
  }

  /** The call `relatedId` is over: its input requests still open are dropped (an answer to one is then ignored). */
  forget(relatedId: JsonRpcId, err: ProxyError): void {
    for (const asked of [...this.asked.values()]) if (asked.relatedId === relatedId) asked.reject(err);
  }

  /** The session ended: every input request fails with `err` (its call is gone too). */
  close(err: ProxyError): void {
    for (const asked of [...this.asked.values()]) asked.reject(err);
  }

  private ask(method: string, params: Record<string, unknown>, relatedId: JsonRpcId, signal: CallSignal): Promise<Record<string, unknown>> {
    const id = `mcp-negotiate-proxy-input-${randomUUID()}`;
    return new Promise((resolve, reject) => {
      if (signal.aborted) return reject(signal.reason);
      const timer = setTimeout(
        () =>
          fail(
            new ProxyError('INPUT_TIMEOUT', `The client did not answer ${method} within ${this.timeoutMs} ms (modern.inputTimeoutMs)`),
            true,
          ),
        this.timeoutMs,
      );
      const onAbort = () => fail(signal.reason, true);
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.asked.delete(id);
      };
      const fail = (err: unknown, withdraw = false) => {
        done();
        if (withdraw) this.deliver({ msg: cancelledNotification(id, 'The server no longer needs the answer') }, relatedId);
        reject(err);
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.asked.set(id, {
        method,
        relatedId,
        answer: (msg) => {
          done();
          if (msg.error) reject(new ClientRefused(method, msg.error));
          else resolve(msg.result ?? {});
        },
        reject: (err) => fail(err),
      });
      this.deliver({ msg: { jsonrpc: '2.0', id, method, params } }, relatedId);
    });
  }
}

/** A legacy URL-mode elicitation needs an id of its own; the modern one has none. */
function withElicitationId(method: string, params: Record<string, unknown>): Record<string, unknown> {
  return method === 'elicitation/create' && params.mode === 'url' && params.elicitationId === undefined
    ? { ...params, elicitationId: randomUUID() }
    : params;
}
