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
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import {
  isNotification,
  isObject,
  isResponse,
  type Frame,
  type JsonRpcId,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../jsonrpc/message.js';
import { cancelledOf } from '../mcp/cancel-progress.js';
import { INPUT_METHODS, LEGACY_VERSIONS, META, modernEnvelope } from '../mcp/eras.js';
import { ClientQuestions, ClientRefused } from './client-questions.js';
import { EmulatedSession } from './emulated-session.js';
import type { ParamHeaders } from '../mcp/http-headers.js';
import type { McpResult } from '../transformers/contract.js';
import type { UpstreamServer } from './era.js';
import type { ModernUpstream } from './modern-http.js';
import { sleep } from './http-streams.js';
import { UpstreamListen } from './modern-listen.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

export interface ModernBridgeOptions {
  upstream: ModernUpstream;
  /** The upstream's discover result. */
  server(): Promise<UpstreamServer>;
  /** The Mcp-Param-* headers of a tools/call (header, lower case → argument). */
  paramHeaders(req: JsonRpcRequest): Promise<ParamHeaders | undefined>;
  /** A tools/list result passed through, or a tool list change heard: what the tool headers learn. */
  toolsSeen(result?: McpResult): void;
  requestTimeoutMs: number;
  /** How long the client gets to answer one of the server's input requests. */
  inputTimeoutMs: number;
  log: Logger;
}

/** Input rounds one request may take (a server that keeps asking is cut off). */
export const MAX_INPUT_ROUNDS = 8;
/** The pause before a round that asks nothing of the client and only hands back the server's state. */
const STATE_ONLY_PAUSE_MS = 50;
/** What a modern result carries that a legacy client has no use for. */
const MODERN_ONLY = ['resultType', 'ttlMs', 'cacheScope'];

export class ModernBridge implements UpstreamConnection {
  /** The client's capabilities and info from its initialize: with the level it set, the `_meta` of every upstream request. */
  private client: { capabilities: Record<string, unknown>; info?: unknown } = { capabilities: {} };
  private readonly emulated: EmulatedSession;
  /** The client's requests under way upstream, by its ids. */
  private readonly calls = new Map<JsonRpcId, AbortController>();
  private readonly questions: ClientQuestions;
  private readonly listening: UpstreamListen;

  constructor(
    private readonly events: UpstreamEvents,
    private readonly o: ModernBridgeOptions,
  ) {
    this.emulated = new EmulatedSession(events);
    this.questions = new ClientQuestions((frame, relatedId) => events.onMessage(frame, relatedId), o.inputTimeoutMs);
    this.listening = new UpstreamListen(
      o.upstream,
      () => this.envelope({}),
      (msg) => {
        if (msg.method === 'notifications/tools/list_changed') o.toolsSeen();
        events.onMessage({ msg });
      },
      o.log,
    );
  }

  send(frame: Frame): void {
    if (this.emulated.closed) return;
    const msg = frame.msg;
    if (isResponse(msg)) {
      if (!this.questions.answered(msg)) this.o.log.debug({ id: msg.id }, 'dropped a client response nobody waits for');
      return;
    }
    if (isNotification(msg)) {
      const cancelled = cancelledOf(msg);
      if (cancelled?.requestId !== undefined)
        this.calls.get(cancelled.requestId)?.abort(new ProxyError('CLIENT_GONE', 'The client cancelled the request'));
      else if (cancelled) this.o.log.debug({ reason: cancelled.reason }, 'ignored a cancellation that names no request');
      // A bridged session never moves to another replica: it listens from its start, as a session that stays does.
      if (msg.method === 'notifications/initialized') this.listening.listChanges(true);
      return; // roots/list_changed: a stateless server has no session to tell
    }
    const req = msg as JsonRpcRequest;
    if (req.method === 'initialize') return void this.initialize(req);
    if (this.emulated.answer(req)) return; // the level goes upstream in every request's `_meta`: the server filters
    if (req.method === 'resources/subscribe' || req.method === 'resources/unsubscribe') return this.subscription(req);
    void this.call(req);
  }

  async close(): Promise<void> {
    this.emulated.end();
    this.listening.close();
    const gone = new ProxyError('UPSTREAM_CLOSED', 'The session has ended');
    for (const call of this.calls.values()) call.abort(gone);
    this.questions.close(gone);
    this.calls.clear();
  }

  session(): { id?: string; protocolVersion?: string } {
    return {};
  }

  /**
   * The `_meta` of an upstream request: the request's own, then the session's protocol keys. A
   * legacy server sends log messages until the client sets a level, so a modern one is asked for all of them until then.
   */
  private envelope(meta: unknown): Record<string, unknown> {
    const { capabilities, info } = this.client;
    return { ...(isObject(meta) ? meta : {}), ...modernEnvelope(capabilities, info, this.emulated.logLevel ?? 'debug') };
  }

  /** Answers initialize from the upstream's discover result, in the client's version when it is a legacy one the proxy knows. */
  private async initialize(req: JsonRpcRequest): Promise<void> {
    const params = req.params ?? {};
    this.client = { capabilities: isObject(params.capabilities) ? params.capabilities : {}, info: params.clientInfo };
    try {
      const server = await this.o.server();
      const requested = params.protocolVersion;
      const protocolVersion =
        typeof requested === 'string' && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[LEGACY_VERSIONS.length - 1];
      this.emulated.reply(req.id, { ...server, protocolVersion });
    } catch (err) {
      this.emulated.fail(req.id, asProxyError(err));
    }
  }

  private subscription(req: JsonRpcRequest): void {
    const change = this.emulated.subscription(req);
    if (!change) return;
    this.listening.resource(change.uri, change.on);
    this.emulated.reply(req.id, {});
  }

  /** One client request: sent upstream, its input rounds put to the client, its answer relayed. */
  private async call(req: JsonRpcRequest): Promise<void> {
    const abort = new AbortController();
    this.calls.set(req.id, abort);
    const { _meta: meta, ...rest } = req.params ?? {};
    const envelope = this.envelope(meta);
    let params: Record<string, unknown> = { ...rest, _meta: envelope };
    try {
      const paramHeaders = this.o.upstream.mirrorsHeaders ? await this.o.paramHeaders(req) : undefined;
      for (let round = 0; ; round++) {
        const id = round === 0 ? req.id : `${String(req.id)}#${round}`;
        const sent = { jsonrpc: '2.0' as const, id, method: req.method, params };
        const { frame } = await this.o.upstream.send(sent, {
          signal: abort.signal,
          timeoutMs: this.o.requestTimeoutMs,
          paramHeaders,
          onNotification: (n) => this.events.onMessage(n, req.id),
        });
        const msg = frame.msg as JsonRpcResponse;
        if (msg.error) return this.emulated.error(req.id, msg.error);
        const result = msg.result ?? {};
        if (result.resultType === undefined || result.resultType === 'complete') {
          if (req.method === 'tools/list') this.o.toolsSeen(result);
          return this.emulated.reply(req.id, legacyResult(result));
        }
        if (result.resultType !== 'input_required' || !INPUT_METHODS.has(req.method))
          throw new ProxyError(
            'UPSTREAM_PROTOCOL',
            `The upstream answered ${req.method} with resultType "${String(result.resultType)}", which a legacy client cannot take`,
          );
        if (round + 1 >= MAX_INPUT_ROUNDS)
          throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream asked for input more than ${MAX_INPUT_ROUNDS} times for one request`);
        const inputResponses = await this.inputFor(result.inputRequests, req.id, abort.signal);
        params = {
          ...rest,
          _meta: envelope,
          ...(inputResponses ? { inputResponses } : {}),
          ...(result.requestState !== undefined ? { requestState: result.requestState } : {}),
        };
      }
    } catch (err) {
      if (abort.signal.aborted) return; // cancelled by the client, or the session ended: nothing waits for an answer
      if (err instanceof ClientRefused) return this.emulated.error(req.id, err.error);
      const failure = asProxyError(err);
      // An answer no client may be given (a round too many, a URL that is no web URL): the operator hears of it.
      if (failure.code === 'UPSTREAM_PROTOCOL')
        this.o.log.warn(
          { method: req.method, err: failure.message },
          "the upstream's answer could not be relayed to the client; the call failed",
        );
      this.emulated.fail(req.id, failure);
    } finally {
      if (this.calls.get(req.id) === abort) this.calls.delete(req.id); // a new request may reuse a cancelled one's id
    }
  }

  /** A round's answers (undefined when it asks nothing, after a short pause); the call's time limit stops meanwhile. */
  private async inputFor(requests: unknown, relatedId: JsonRpcId, signal: AbortSignal): Promise<Record<string, unknown> | undefined> {
    if (!isObject(requests) || Object.keys(requests).length === 0) {
      await sleep(STATE_ONLY_PAUSE_MS, signal);
      if (signal.aborted) throw signal.reason;
      return undefined;
    }
    this.events.onWaiting?.(relatedId, true);
    try {
      return await this.questions.round(requests, this.client.capabilities, relatedId, signal);
    } finally {
      this.events.onWaiting?.(relatedId, false);
    }
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
