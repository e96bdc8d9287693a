/**
 * A legacy client session served by a modern (2026-07-28) upstream: an emulated session
 * (emulated-session.ts) whose backend holds nothing upstream: `initialize` is answered
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
  isObject,
  type JsonRpcErrorObject,
  type JsonRpcNotification,
  type JsonRpcRequest,
  type JsonRpcResponse,
} from '../jsonrpc/message.js';
import { INPUT_METHODS, LEGACY_VERSIONS, META, modernEnvelope } from '../mcp/eras.js';
import type { ParamHeaders } from '../mcp/http-headers.js';
import type { McpResult } from '../transformers/contract.js';
import { EmulatedSession, type CallHooks, type SessionBackend, type SessionClient } from './emulated-session.js';
import type { UpstreamServer } from './era.js';
import { sleep } from './http-streams.js';
import type { ModernUpstream } from './modern-http.js';
import { UpstreamListen } from './modern-listen.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

export interface ModernBridgeOptions {
  upstream: ModernUpstream;
  /** Whose session it is: a list answer may be shared with the principal's other requests (list-cache.ts). */
  who: { principal: string; clientKey: string };
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

/** A legacy client session served by the modern upstream. */
export function bridgedSession(events: UpstreamEvents, o: ModernBridgeOptions): UpstreamConnection {
  let session: EmulatedSession | undefined;
  const bridge = new ModernBridge(
    o,
    () => session!.client,
    (n) => session?.deliver(n),
  );
  session = new EmulatedSession(events, bridge, o.log, o.inputTimeoutMs);
  return session;
}

class ModernBridge implements SessionBackend {
  private readonly listening: UpstreamListen;

  constructor(
    private readonly o: ModernBridgeOptions,
    /** The session's client: its capabilities, info and log level ride in every upstream request's `_meta`. */
    private readonly client: () => SessionClient,
    deliver: (n: JsonRpcNotification) => void,
  ) {
    this.listening = new UpstreamListen(
      o.upstream,
      () => this.envelope({}),
      (msg) => {
        if (msg.method === 'notifications/tools/list_changed') o.toolsSeen();
        deliver(msg);
      },
      o.log,
    );
  }

  /** From the upstream's discover result, in the client's version when it is a legacy one the proxy knows. */
  async initialize(_client: SessionClient, params: Record<string, unknown>): Promise<McpResult> {
    const server = await this.o.server();
    const requested = params.protocolVersion;
    const protocolVersion =
      typeof requested === 'string' && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[LEGACY_VERSIONS.length - 1];
    return { ...server, protocolVersion };
  }

  /** A bridged session never moves to another replica: it listens from its start, as a session that stays does. */
  initialized(): void {
    this.listening.listChanges(true);
  }

  subscription(uri: string, on: boolean): Promise<undefined> {
    this.listening.resource(uri, on);
    return Promise.resolve(undefined);
  }

  close(): void {
    this.listening.close();
  }

  /**
   * The `_meta` of an upstream request: the request's own, then the session's protocol keys. A
   * legacy server sends log messages until the client sets a level, so a modern one is asked for all of them until then.
   */
  private envelope(meta: unknown): Record<string, unknown> {
    const { capabilities, info, logLevel } = this.client();
    return { ...(isObject(meta) ? meta : {}), ...modernEnvelope(capabilities, info, logLevel ?? 'debug') };
  }

  /** One client request: sent upstream, its input rounds put to the client, its answer relayed. */
  async call(req: JsonRpcRequest, hooks: CallHooks): Promise<{ result: McpResult } | { error: JsonRpcErrorObject }> {
    const { _meta: meta, ...rest } = req.params ?? {};
    const envelope = this.envelope(meta);
    let params: Record<string, unknown> = { ...rest, _meta: envelope };
    const paramHeaders = this.o.upstream.mirrorsHeaders ? await this.o.paramHeaders(req) : undefined;
    for (let round = 0; ; round++) {
      const id = round === 0 ? req.id : `${String(req.id)}#${round}`;
      const sent = { jsonrpc: '2.0' as const, id, method: req.method, params };
      const { frame } = await this.o.upstream.call(sent, {
        caller: { ...this.o.who, capabilities: this.client().capabilities },
        signal: hooks.signal,
        timeoutMs: this.o.requestTimeoutMs,
        paramHeaders,
        onNotification: (n) => hooks.notify(n.msg as JsonRpcNotification),
      });
      const msg = frame.msg as JsonRpcResponse;
      if (msg.error) return { error: msg.error };
      const result = msg.result ?? {};
      if (result.resultType === undefined || result.resultType === 'complete') {
        if (req.method === 'tools/list') this.o.toolsSeen(result);
        return { result: legacyResult(result) };
      }
      if (result.resultType !== 'input_required' || !INPUT_METHODS.has(req.method))
        throw new ProxyError(
          'UPSTREAM_PROTOCOL',
          `The upstream answered ${req.method} with resultType "${String(result.resultType)}", which a legacy client cannot take`,
        );
      if (round + 1 >= MAX_INPUT_ROUNDS)
        throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream asked for input more than ${MAX_INPUT_ROUNDS} times for one request`);
      const inputResponses = await this.inputFor(result.inputRequests, hooks);
      params = {
        ...rest,
        _meta: envelope,
        ...(inputResponses ? { inputResponses } : {}),
        ...(result.requestState !== undefined ? { requestState: result.requestState } : {}),
      };
    }
  }

  /** A round's answers (undefined when it asks nothing, after a short pause). */
  private async inputFor(requests: unknown, hooks: CallHooks): Promise<Record<string, unknown> | undefined> {
    if (isObject(requests) && Object.keys(requests).length > 0) return hooks.round(requests);
    await sleep(STATE_ONLY_PAUSE_MS, hooks.signal);
    if (hooks.signal.aborted) throw hooks.signal.reason;
    return undefined;
  }
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
