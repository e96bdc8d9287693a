/**
 * A Streamable HTTP upstream (MCP 2025-11-25 transport) over an undici keep-alive dispatcher.
 * One instance is one upstream MCP session: it learns the session id and protocol version from
 * the initialize exchange it relays, opens the GET stream after `notifications/initialized`,
 * resumes SSE streams with Last-Event-ID after the server's `retry` delay, and ends with DELETE.
 * One request's trouble is its typed failure; a 404 (or a taken-over session unknown) closes it all.
 */
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { ProxyError, unusableAnswer } from '../jsonrpc/errors.js';
import { isNotification, isRequest, isResponse, parseUpstream, type Frame, type JsonRpcId, type Wire } from '../jsonrpc/message.js';
import { cancelledOf } from '../mcp/cancel-progress.js';
import { JSON_TYPE, SSE_TYPE, mediaTypeOf } from '../mcp/media-type.js';
import { traceContextOf } from '../ops/trace-context.js';
import { encodeForUpstream } from './encode.js';
import { holdStream, readEvents, resumeStream, type StreamState } from './http-streams.js';
import type { HttpUpstreamSpec, ResumedSession, UpstreamConnection, UpstreamEvents } from './types.js';

export interface HttpUpstreamOptions {
  dispatcher: Dispatcher;
  /** Delay before resuming a dropped stream when the server sent no `retry`. */
  defaultRetryMs: number;
  /** How many times one stream is resumed before giving up. */
  maxResumes: number;
  /** Go on with an upstream session another connection started (no initialize). */
  resume?: ResumedSession;
  /** Hold the upstream's GET stream only while `listen(true)` (the client's GET stream is here): replicas sharing a session take turns. */
  getFollowsClient?: boolean;
}

const ACCEPT = 'application/json, text/event-stream';

export class HttpUpstream implements UpstreamConnection {
  private sessionId: string | undefined;
  private protocolVersion: string | undefined;
  /** Stops the GET stream loop, while one runs. */
  private listening: AbortController | undefined;
  private initializeId: JsonRpcId | undefined;
  private closed = false;
  /** The server has accepted a message of this session through this connection. */
  private confirmed = false;
  private readonly lifetime = new AbortController();
  /** Every POST still running, so that ending the session aborts them all. */
  private readonly posts = new Set<AbortController>();
  /** Abort handles of POST streams still waiting for a response, by request id. */
  private readonly inFlight = new Map<JsonRpcId, AbortController>();
  private ending: Promise<void> | undefined;
  /**
   * The POST of `notifications/initialized`, while it runs: what follows waits for it, or the
   * server could see a request before it knows the session is initialized (servers register
   * capability-dependent tools then).
   */
  private initializing: Promise<void> | undefined;
  /** HTTP: hold (true) or let go of (false) the upstream's GET stream, following the client's. */
  readonly listen: ((on: boolean) => void) | undefined;

  constructor(
    private readonly spec: HttpUpstreamSpec,
    private readonly events: UpstreamEvents,
    private readonly log: Logger,
    private readonly opts: HttpUpstreamOptions,
  ) {
    this.sessionId = opts.resume?.id;
    this.protocolVersion = opts.resume?.protocolVersion;
    this.listen = opts.getFollowsClient ? (on) => this.follow(on) : undefined;
  }

  send(frame: Frame): void {
    if (this.closed) return;
    const msg = frame.msg;
    const body = encodeForUpstream(frame, this.events, this.log);
    if (body === undefined) return;
    if (isRequest(msg) && msg.method === 'initialize') this.initializeId = msg.id;
    const sent = this.post(frame, body);
    if (isNotification(msg) && msg.method === 'notifications/initialized') {
      this.initializing = sent.finally(() => {
        this.initializing = undefined;
      });
    }
    // A cancelled request's stream would stay open forever: drop it after telling the server.
    const id = cancelledOf(msg)?.requestId;
    if (id !== undefined) setImmediate(() => this.inFlight.get(id)?.abort());
  }

  close(): Promise<void> {
    this.ending ??= this.endSession();
    return this.ending;
  }

  detach(): void {
    this.closed = true;
    this.abortAll();
  }

  session(): { id?: string; protocolVersion?: string } {
    return { id: this.sessionId, protocolVersion: this.protocolVersion };
  }

  private headers(extra: Record<string, string>): Record<string, string> {
    const h: Record<string, string> = { ...this.spec.headers, ...extra };
    if (this.sessionId) h['mcp-session-id'] = this.sessionId;
    if (this.protocolVersion) h['mcp-protocol-version'] = this.protocolVersion;
    return h;
  }

  private fail(err: ProxyError): void {
    if (this.closed) return;
    this.closed = true;
    this.abortAll();
    this.events.onClose(err);
  }

  private abortAll(): void {
    this.lifetime.abort();
    for (const abort of this.posts) abort.abort();
  }

  private sessionExpired(): void {
    this.fail(new ProxyError('UPSTREAM_SESSION_EXPIRED', 'The upstream session has ended (HTTP 404); initialize a new session'));
  }

  /** Delivers one message from the server; notes what the initialize response teaches. */
  private deliver(frame: Frame, relatedId?: JsonRpcId): void {
    const msg = frame.msg;
    if (isResponse(msg) && msg.id !== null) {
      this.inFlight.delete(msg.id);
      if (msg.id === this.initializeId && msg.result) {
        this.protocolVersion = String(msg.result.protocolVersion ?? '') || undefined;
        this.initializeId = undefined;
      }
    }
    this.events.onMessage(frame, relatedId);
  }

  /** Reports `err` for each of `ids` still waiting. */
  private failed(ids: JsonRpcId[], err: ProxyError): void {
    for (const id of ids) if (this.inFlight.delete(id)) this.events.onFailure(id, err);
  }

  /** Delivers the JSON-RPC messages of a JSON body or an event's data. */
  private deliverBytes(bytes: Buffer, relatedId: JsonRpcId | undefined, what: string): void {
    const parsed = parseUpstream(bytes, this.spec.maxJsonDepth);
    if (!parsed.ok) {
      this.log.warn(
        { [what]: bytes.toString('utf8', 0, 200), why: parsed.error.error?.message },
        `upstream sent ${what === 'data' ? 'an SSE event' : 'a body'} that is not JSON-RPC; skipped`,
      );
      if (parsed.answerTo !== undefined) this.failed([parsed.answerTo], unusableAnswer(parsed));
      return;
    }
    for (const frame of parsed.frames) {
      // Whatever fails while one message is handled costs that message, not the stream it came on.
      try {
        this.deliver(frame, relatedId);
      } catch (err) {
        this.log.error(
          { err: (err as Error)?.message, [what]: bytes.toString('utf8', 0, 200) },
          'an upstream message could not be handled; dropped',
        );
      }
    }
  }

  /** Reads an SSE body to its end, delivering each message; notes where a resume would start. */
  private readSse(body: AsyncIterable<Buffer>, relatedId: JsonRpcId | undefined, state: StreamState): Promise<void> {
    return readEvents(body, state, (data) => this.deliverBytes(Buffer.from(data), relatedId, 'data'));
  }

  /** GET the session's stream (resuming after `state.lastEventId`); undefined when there is none. */
  private async getStream(state: StreamState, signal: AbortSignal): Promise<AsyncIterable<Buffer> | undefined> {
    const res = await request(this.spec.url, {
      method: 'GET',
      dispatcher: this.opts.dispatcher,
      signal,
      headers: this.headers({ accept: 'text/event-stream', ...(state.lastEventId ? { 'last-event-id': state.lastEventId } : {}) }),
    });
    if (res.statusCode === 200 && mediaTypeOf(res.headers['content-type']) === SSE_TYPE) return res.body;
    await res.body.dump();
    if (res.statusCode === 404) this.sessionExpired();
    else if (res.statusCode === 405 || res.statusCode === 200) this.log.debug({ status: res.statusCode }, 'upstream offers no GET stream');
    else throw new Error(`GET stream answered HTTP ${res.statusCode}`); // transient: retried with backoff
    return undefined;
  }

  /** Resumes a dropped stream with GET + Last-Event-ID until `done()` or the resume budget is spent. */
  private resume(relatedId: JsonRpcId | undefined, state: StreamState, done: () => boolean, signal: AbortSignal): Promise<void> {
    return resumeStream({
      state,
      done,
      signal,
      maxResumes: this.opts.maxResumes,
      defaultRetryMs: this.opts.defaultRetryMs,
      log: this.log,
      open: (st, sg) => this.getStream(st, sg),
      read: (body, st) => this.readSse(body, relatedId, st),
    });
  }

  /** Aborts what is running and DELETEs the upstream session (once; close() returns this). */
  private async endSession(): Promise<void> {
    const id = this.sessionId;
    this.closed = true;
    this.abortAll();
    if (!id) return;
    try {
      const res = await request(this.spec.url, {
        method: 'DELETE',
        dispatcher: this.opts.dispatcher,
        headers: {
          ...this.spec.headers,
          'mcp-session-id': id,
          ...(this.protocolVersion ? { 'mcp-protocol-version': this.protocolVersion } : {}),
        },
        signal: AbortSignal.timeout(2000),
      });
      await res.body.dump();
    } catch (err) {
      this.log.debug({ err: (err as Error).message }, 'upstream session DELETE failed');
    }
  }

  private async post(frame: Frame, body: Wire): Promise<void> {
    if (this.initializing) await this.initializing;
    const msg = frame.msg;
    const ids = isRequest(msg) ? [msg.id] : [];
    const abort = new AbortController();
    const signal = abort.signal;
    this.posts.add(abort);
    for (const id of ids) this.inFlight.set(id, abort);
    let responded = false;
    try {
      const res = await request(this.spec.url, {
        method: 'POST',
        dispatcher: this.opts.dispatcher,
        signal,
        headers: this.headers({
          'content-type': 'application/json',
          accept: ACCEPT,
          ...traceContextOf((msg as { params?: { _meta?: Record<string, unknown> } }).params?._meta),
        }),
        body,
      });
      responded = true;
      const newSession = res.headers['mcp-session-id'];
      if (typeof newSession === 'string' && !this.sessionId) this.sessionId = newSession;
      if (res.statusCode === 404 && this.sessionId) {
        await res.body.dump();
        return this.sessionExpired();
      }
      if (res.statusCode >= 200 && res.statusCode < 300) await this.answered(frame, ids, res, signal);
      else await this.refused(ids, res);
    } catch (err) {
      if (signal.aborted) return;
      this.log.warn({ err: (err as Error).message }, 'upstream request failed');
      const what = responded ? "The upstream's response broke off before the answer" : 'The upstream could not be reached';
      this.failed(ids, new ProxyError('UPSTREAM_UNREACHABLE', `${what}: ${(err as Error).message}`));
    } finally {
      this.posts.delete(abort);
      for (const id of ids) if (this.inFlight.get(id) === abort) this.inFlight.delete(id);
    }
  }

  /** A 2xx answer to a POST: its SSE stream (resumed when it breaks off), JSON body, or nothing. */
  private async answered(frame: Frame, ids: JsonRpcId[], res: Dispatcher.ResponseData, signal: AbortSignal): Promise<void> {
    this.confirmed = true;
    const type = mediaTypeOf(res.headers['content-type']);
    if (type === SSE_TYPE) {
      const state: StreamState = {};
      const done = () => !ids.some((id) => this.inFlight.has(id));
      try {
        await this.readSse(res.body, ids[0], state);
      } catch (err) {
        if (signal.aborted || !state.lastEventId) throw err; // not resumable
        this.log.debug({ err: (err as Error).message }, 'upstream response stream broke off; resuming');
      }
      if (!done() && state.lastEventId) await this.resume(ids[0], state, done, signal);
    } else if (type === JSON_TYPE) {
      this.deliverBytes(Buffer.from(await res.body.arrayBuffer()), ids[0], 'body');
    } else {
      await res.body.dump();
    }
    // Built only when a request is left unanswered: an Error's stack costs more than relaying the answer.
    if (!signal.aborted && ids.some((id) => this.inFlight.has(id)))
      this.failed(ids, new ProxyError('UPSTREAM_PROTOCOL', 'The upstream ended the response without answering'));
    const msg = frame.msg;
    if (isNotification(msg) && msg.method === 'notifications/initialized' && !this.opts.getFollowsClient) this.follow(true);
  }

  /** An error status: a JSON-RPC error body relayed as is, or the status described. */
  private async refused(ids: JsonRpcId[], res: Dispatcher.ResponseData): Promise<void> {
    const text = await res.body.text();
    // A session taken over from a token that the server refuses at once is gone: servers built on
    // the SDK's example answer an unknown session with 400 ("No valid session ID"), not 404.
    if (res.statusCode === 400 && this.opts.resume && !this.confirmed && /session/i.test(text.slice(0, 500))) return this.sessionExpired();
    const rejection = mediaTypeOf(res.headers['content-type']) === JSON_TYPE ? requestError(text, ids, this.spec.maxJsonDepth) : undefined;
    if (rejection) this.deliver(rejection, ids[0]);
    this.failed(
      ids,
      new ProxyError('UPSTREAM_PROTOCOL', `The upstream answered HTTP ${res.statusCode}`, {
        body: text.slice(0, 500),
        status: res.statusCode,
      }),
    );
    if (ids.length === 0) this.log.warn({ status: res.statusCode, body: text.slice(0, 200) }, 'upstream rejected a message');
  }

  /** Holds the GET stream until `signal` aborts: reconnects when it drops (another replica may hold it: 409). */
  private openGetStream(signal: AbortSignal): Promise<void> {
    return holdStream({
      signal,
      closed: () => this.closed,
      defaultRetryMs: this.opts.defaultRetryMs,
      log: this.log,
      open: (st, sg) => this.getStream(st, sg),
      read: (body, st) => this.readSse(body, undefined, st),
    });
  }

  /** Holds (true) or lets go of (false) the upstream's GET stream. */
  private follow(on: boolean): void {
    if (!on) {
      this.listening?.abort();
      this.listening = undefined;
    } else if (!this.listening && !this.closed && this.sessionId) {
      const loop = new AbortController();
      this.listening = loop;
      void this.openGetStream(AbortSignal.any([this.lifetime.signal, loop.signal])).finally(() => {
        if (this.listening === loop) this.listening = undefined;
      });
    }
  }
}

/**
 * The JSON-RPC error in an error-status body, as the answer to the one request of the POST.
 * Servers often send such errors with `id: null` (they failed before reading the id).
 */
function requestError(text: string, ids: JsonRpcId[], maxDepth: number): Frame | undefined {
  const parsed = parseUpstream(Buffer.from(text), maxDepth);
  if (!parsed.ok || parsed.batch || ids.length !== 1) return undefined;
  const msg = parsed.frames[0].msg;
  if (!isResponse(msg) || !msg.error) return undefined;
  return msg.id === ids[0] ? parsed.frames[0] : { msg: { ...msg, id: ids[0] } };
}
