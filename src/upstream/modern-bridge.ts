/**
 * A legacy client session served by a modern (2026-07-28) upstream. To the relay this is an
 * ordinary upstream connection; underneath, nothing is held upstream: `initialize` is answered
 * from the upstream's discover result, and every other request goes as one modern request that
 * carries the session's client capabilities and info (and log level) in its `_meta`, so the
 * negotiated features ride along. An `input_required` answer becomes the legacy server→client
 * requests it asks for (elicitation, sampling, roots) on the same session; their answers go
 * upstream again with the server's `requestState`, untouched. Resource subscriptions and list
 * changes come through one `subscriptions/listen` stream (modern-listen.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import { isNotification, isObject, isResponse, type Frame, type JsonRpcErrorObject, type JsonRpcId, type JsonRpcRequest, type JsonRpcResponse } from '../jsonrpc/message.js';
import { LEGACY_VERSIONS, META, MODERN_VERSIONS } from '../mcp/eras.js';
import type { McpResult } from '../transformers/contract.js';
import type { UpstreamServer } from './era.js';
import type { ModernHttpUpstream } from './modern-http.js';
import { UpstreamListen } from './modern-listen.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

export interface ModernBridgeOptions {
  upstream: ModernHttpUpstream;
  /** The upstream's discover result. */
  server(): Promise<UpstreamServer>;
  requestTimeoutMs: number;
  /** How long the client gets to answer one of the server's input requests. */
  inputTimeoutMs: number;
  /** Listen for list changes only while the client's GET stream is open (replicas take turns); otherwise from `notifications/initialized` on. */
  followClient: boolean;
  log: Logger;
}

/** Input rounds one request may take (a server that keeps asking is cut off). */
export const MAX_INPUT_ROUNDS = 8;
/** Input requests one round may put to the client at once. */
export const MAX_INPUT_REQUESTS = 16;
/** The pause before a round that asks nothing of the client and only hands back the server's state. */
const STATE_ONLY_PAUSE_MS = 50;
const INPUT_REQUESTS = new Set(['elicitation/create', 'sampling/createMessage', 'roots/list']);
/** What a modern result carries that a legacy client has no use for. */
const MODERN_ONLY = ['resultType', 'ttlMs', 'cacheScope'];

interface Asked {
  resolve(result: Record<string, unknown>): void;
  reject(err: unknown): void;
}

export class ModernBridge implements UpstreamConnection {
  /** The client's capabilities, info and log level from its initialize: the `_meta` of every upstream request. */
  private client: { capabilities: Record<string, unknown>; info?: unknown; logLevel?: string } = { capabilities: {} };
  /** The client's requests under way upstream, by its ids. */
  private readonly calls = new Map<JsonRpcId, AbortController>();
  /** The server's input requests put to the client, by the ids the proxy gave them. */
  private readonly asked = new Map<string, Asked>();
  private closed = false;
  private readonly listening: UpstreamListen;

  constructor(
    private readonly events: UpstreamEvents,
    private readonly o: ModernBridgeOptions,
  ) {
    this.listening = new UpstreamListen(o.upstream, () => this.envelope({}), (msg) => events.onMessage({ msg }), o.log);
  }

  send(frame: Frame): void {
    if (this.closed) return;
    const msg = frame.msg;
    if (isResponse(msg)) return this.answered(msg);
    if (isNotification(msg)) {
      if (msg.method === 'notifications/cancelled') this.calls.get((msg.params as { requestId?: JsonRpcId } | undefined)?.requestId ?? '')?.abort(new ProxyError('CLIENT_GONE', 'The client cancelled the request'));
      if (msg.method === 'notifications/initialized' && !this.o.followClient) this.listening.listChanges(true);
      return; // roots/list_changed: a stateless server has no session to tell
    }
    const req = msg as JsonRpcRequest;
    if (req.method === 'initialize') return void this.initialize(req);
    if (req.method === 'ping') return this.reply(req.id, {});
    if (req.method === 'logging/setLevel') {
      this.client.logLevel = typeof req.params?.level === 'string' ? req.params.level : undefined;
      return this.reply(req.id, {});
    }
    if (req.method === 'resources/subscribe' || req.method === 'resources/unsubscribe') {
      if (typeof req.params?.uri !== 'string') return this.error(req.id, { code: -32602, message: `Invalid params: ${req.method} needs params.uri` });
      this.listening.resource(req.params.uri, req.method === 'resources/subscribe');
      return this.reply(req.id, {});
    }
    void this.call(req);
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listening.close();
    const gone = new ProxyError('UPSTREAM_CLOSED', 'The session has ended');
    for (const call of this.calls.values()) call.abort(gone);
    for (const ask of this.asked.values()) ask.reject(gone);
    this.calls.clear();
    this.asked.clear();
  }

  session(): { id?: string; protocolVersion?: string } {
    return {};
  }

  listen(on: boolean): void {
    if (this.o.followClient) this.listening.listChanges(on);
  }

  /** The `_meta` of an upstream request: the request's own, then the session's protocol keys. */
  private envelope(meta: unknown): Record<string, unknown> {
    const { capabilities, info, logLevel } = this.client;
    return { ...(isObject(meta) ? meta : {}), [META.protocolVersion]: MODERN_VERSIONS[0], [META.clientCapabilities]: capabilities, ...(info !== undefined ? { [META.clientInfo]: info } : {}), ...(logLevel ? { [META.logLevel]: logLevel } : {}) };
  }

  /** Answers initialize from the upstream's discover result, in the client's version when it is a legacy one the proxy knows. */
  private async initialize(req: JsonRpcRequest): Promise<void> {
    const params = req.params ?? {};
    this.client = { capabilities: isObject(params.capabilities) ? params.capabilities : {}, info: params.clientInfo };
    try {
      const server = await this.o.server();
      const requested = params.protocolVersion;
      const protocolVersion = typeof requested === 'string' && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[LEGACY_VERSIONS.length - 1];
      this.reply(req.id, { ...server, protocolVersion });
    } catch (err) {
      this.events.onFailure(req.id, asProxyError(err));
    }
  }

  /** One client request: sent upstream, its input rounds put to the client, its answer relayed. */
  private async call(req: JsonRpcRequest): Promise<void> {
    const abort = new AbortController();
    this.calls.set(req.id, abort);
    const { _meta: meta, ...rest } = req.params ?? {};
    const envelope = this.envelope(meta);
    let params: Record<string, unknown> = { ...rest, _meta: envelope };
    try {
      for (let round = 0; ; round++) {
        const id = round === 0 ? req.id : `${String(req.id)}#${round}`;
        const { frame } = await this.o.upstream.send({ jsonrpc: '2.0', id, method: req.method, params }, { signal: abort.signal, timeoutMs: this.o.requestTimeoutMs, onNotification: (n) => this.events.onMessage(n, req.id) });
        const msg = frame.msg as JsonRpcResponse;
        if (msg.error) return this.error(req.id, msg.error);
        const result = msg.result ?? {};
        if (result.resultType !== 'input_required') return this.reply(req.id, legacyResult(result));
        if (round + 1 >= MAX_INPUT_ROUNDS) throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream asked for input more than ${MAX_INPUT_ROUNDS} times for one request`);
        const inputResponses = await this.inputFor(result.inputRequests, req.id, abort.signal);
        if (!inputResponses) await pause(STATE_ONLY_PAUSE_MS, abort.signal);
        params = { ...rest, _meta: envelope, ...(inputResponses ? { inputResponses } : {}), ...(result.requestState !== undefined ? { requestState: result.requestState } : {}) };
      }
    } catch (err) {
      if (abort.signal.aborted) return; // cancelled by the client, or the session ended: nothing waits for an answer
      if (err instanceof ClientRefused) return this.error(req.id, err.error);
      this.events.onFailure(req.id, asProxyError(err));
    } finally {
      this.calls.delete(req.id);
    }
  }

  /** Puts every input request of a round to the client at once; their answers by key (undefined when the round asks nothing). */
  private async inputFor(requests: unknown, relatedId: JsonRpcId, signal: AbortSignal): Promise<Record<string, unknown> | undefined> {
    if (!isObject(requests) || Object.keys(requests).length === 0) return undefined;
    if (Object.keys(requests).length > MAX_INPUT_REQUESTS) throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream asked for more than ${MAX_INPUT_REQUESTS} inputs in one round`);
    const entries = Object.entries(requests).map(([key, entry]) => {
      if (!isObject(entry) || typeof entry.method !== 'string' || !INPUT_REQUESTS.has(entry.method)) throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream asked for input "${key}" with a request a client cannot be asked`);
      return [key, entry.method, isObject(entry.params) ? entry.params : {}] as const;
    });
    const answers = await Promise.all(entries.map(([key, method, params]) => this.ask(method, withElicitationId(method, params), relatedId, signal).then((result) => [key, result] as const)));
    return Object.fromEntries(answers);
  }

  /** One server→client request on the session, on the stream of the request it belongs to. */
  private ask(method: string, params: Record<string, unknown>, relatedId: JsonRpcId, signal: AbortSignal): Promise<Record<string, unknown>> {
    const id = `mcp-negotiate-proxy-input-${randomUUID()}`;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new ProxyError('INPUT_TIMEOUT', `The client did not answer ${method} within ${this.o.inputTimeoutMs} ms`)), this.o.inputTimeoutMs);
      const onAbort = () => done(signal.reason);
      const done = (err?: unknown, result?: Record<string, unknown>) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        this.asked.delete(id);
        if (err !== undefined) reject(err);
        else resolve(result ?? {});
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.asked.set(id, { resolve: (result) => done(undefined, result), reject: done });
      this.events.onMessage({ msg: { jsonrpc: '2.0', id, method, params } }, relatedId);
    });
  }

  /** The client's answer to one of the server's input requests. */
  private answered(msg: JsonRpcResponse): void {
    const ask = typeof msg.id === 'string' ? this.asked.get(msg.id) : undefined;
    if (!ask) return this.o.log.debug({ id: msg.id }, 'dropped a client response nobody waits for');
    if (msg.error) ask.reject(new ClientRefused({ code: msg.error.code, message: `The client refused the server's input request: ${msg.error.message}` }));
    else ask.resolve(msg.result ?? {});
  }

  private reply(id: JsonRpcId, result: McpResult): void {
    this.events.onMessage({ msg: { jsonrpc: '2.0', id, result } }, id);
  }

  private error(id: JsonRpcId, error: JsonRpcErrorObject): void {
    this.events.onMessage({ msg: { jsonrpc: '2.0', id, error } }, id);
  }
}

/** The client answered an input request with an error: the request it belongs to gets that error. */
class ClientRefused extends Error {
  constructor(readonly error: JsonRpcErrorObject) {
    super(error.message);
  }
}

function asProxyError(err: unknown): ProxyError {
  return err instanceof ProxyError ? err : new ProxyError('UPSTREAM_PROTOCOL', (err as Error)?.message ?? String(err));
}

/** A modern result as a legacy client reads it: without resultType, cache hints and the serverInfo in `_meta`. */
function legacyResult(result: McpResult): McpResult {
  const out: McpResult = { ...result };
  for (const key of MODERN_ONLY) delete out[key];
  if (isObject(out._meta) && META.serverInfo in out._meta) {
    const { [META.serverInfo]: _info, ...meta } = out._meta;
    if (Object.keys(meta).length) out._meta = meta;
    else delete out._meta;
  }
  return out;
}

/** A legacy URL-mode elicitation needs an id of its own; the modern one has none. */
function withElicitationId(method: string, params: Record<string, unknown>): Record<string, unknown> {
  return method === 'elicitation/create' && params.mode === 'url' && params.elicitationId === undefined ? { ...params, elicitationId: randomUUID() } : params;
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });
}
