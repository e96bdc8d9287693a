/**
 * A Streamable HTTP upstream (MCP 2025-11-25 transport) over an undici keep-alive dispatcher.
 * One instance is one upstream MCP session: it learns the session id and protocol version from
 * the initialize exchange it relays, opens the GET stream after `notifications/initialized`,
 * resumes SSE streams with Last-Event-ID after the server's `retry` delay, and ends with DELETE.
 */
import { StringDecoder } from 'node:string_decoder';
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { ProxyError, toJsonRpcError } from '../jsonrpc/errors.js';
import {
  errorResponse,
  isNotification,
  isRequest,
  isResponse,
  parsePayload,
  type Frame,
  type JsonRpcId,
} from '../jsonrpc/message.js';
import { traceContextOf } from '../ops/trace-context.js';
import { encodeForUpstream } from './encode.js';
import { createSseReader } from '../jsonrpc/sse.js';
import type { HttpUpstreamSpec, ResumedSession, UpstreamConnection, UpstreamEvents } from './types.js';

export interface HttpUpstreamOptions {
  dispatcher: Dispatcher;
  /** Delay before resuming a dropped stream when the server sent no `retry`. */
  defaultRetryMs: number;
  /** How many times one stream is resumed before giving up. */
  maxResumes: number;
  /** Go on with an upstream session another connection started (no initialize). */
  resume?: ResumedSession;
  /**
   * Hold the upstream's GET stream only while `listen(true)` (the client's GET stream is here),
   * instead of from `notifications/initialized` on: replicas sharing a session take turns.
   */
  getFollowsClient?: boolean;
}

const ACCEPT = 'application/json, text/event-stream';

export function createHttpUpstream(
  spec: HttpUpstreamSpec,
  events: UpstreamEvents,
  log: Logger,
  opts: HttpUpstreamOptions,
): UpstreamConnection {
  let sessionId: string | undefined = opts.resume?.id;
  let protocolVersion: string | undefined = opts.resume?.protocolVersion;
  /** Stops the GET stream loop, while one runs. */
  let listening: AbortController | undefined;
  let initializeId: JsonRpcId | undefined;
  let closed = false;
  /** The server has accepted a message of this session through this connection. */
  let confirmed = false;
  const lifetime = new AbortController();
  /** Every POST still running, so that ending the session aborts them all. */
  const posts = new Set<AbortController>();
  /** Abort handles of POST streams still waiting for a response, by request id. */
  const inFlight = new Map<JsonRpcId, AbortController>();

  const headers = (extra: Record<string, string>): Record<string, string> => {
    const h: Record<string, string> = { ...spec.headers, ...extra };
    if (sessionId) h['mcp-session-id'] = sessionId;
    if (protocolVersion) h['mcp-protocol-version'] = protocolVersion;
    return h;
  };

  const fail = (err: ProxyError) => {
    if (closed) return;
    closed = true;
    abortAll();
    events.onClose(err);
  };

  const abortAll = () => {
    lifetime.abort();
    for (const abort of posts) abort.abort();
  };

  const sessionExpired = () =>
    fail(new ProxyError('UPSTREAM_SESSION_EXPIRED', 'The upstream session has ended (HTTP 404); initialize a new session'));

  /** Delivers one message from the server; notes what the initialize response teaches. */
  const deliver = (frame: Frame, relatedId?: JsonRpcId) => {
    const msg = frame.msg;
    if (isResponse(msg) && msg.id !== null) {
      inFlight.delete(msg.id);
      if (msg.id === initializeId && msg.result) {
        protocolVersion = String(msg.result.protocolVersion ?? '') || undefined;
        initializeId = undefined;
      }
    }
    events.onMessage(frame, relatedId);
  };

  const answerWithError = (ids: JsonRpcId[], err: ProxyError) => {
    for (const id of ids) {
      if (inFlight.delete(id)) events.onFailure(id, err);
    }
  };

  /** Reads an SSE body to its end, delivering each message; notes where a resume would start. */
  const readSse = async (body: AsyncIterable<Buffer>, relatedId: JsonRpcId | undefined, state: StreamState) => {
    const reader = createSseReader((ev) => {
      if (ev.event !== 'message' || ev.data === '') return; // priming events carry only an id
      const parsed = parsePayload(ev.data);
      if (!parsed.ok) {
        log.warn({ data: ev.data.slice(0, 200) }, 'upstream sent an SSE event that is not JSON-RPC; skipped');
        return;
      }
      for (const frame of parsed.frames) deliver(frame, relatedId);
    });
    const decoder = new StringDecoder('utf8'); // a character may be split across chunks
    try {
      for await (const chunk of body) reader.feed(decoder.write(chunk));
    } finally {
      // Kept even when the stream breaks off, so a resume starts after the last event seen.
      state.lastEventId = reader.lastEventId ?? state.lastEventId;
      state.retryMs = reader.retryMs ?? state.retryMs;
    }
  };

  /** GET the session's stream (resuming after `state.lastEventId`); undefined when there is none. */
  const getStream = async (state: StreamState, signal: AbortSignal) => {
    const res = await request(spec.url, {
      method: 'GET',
      dispatcher: opts.dispatcher,
      signal,
      headers: headers({ accept: 'text/event-stream', ...(state.lastEventId ? { 'last-event-id': state.lastEventId } : {}) }),
    });
    if (res.statusCode === 200 && String(res.headers['content-type']).startsWith('text/event-stream')) return res.body;
    await res.body.dump();
    if (res.statusCode === 404) sessionExpired();
    else if (res.statusCode === 405 || res.statusCode === 200) log.debug({ status: res.statusCode }, 'upstream offers no GET stream');
    else throw new Error(`GET stream answered HTTP ${res.statusCode}`); // transient: retried with backoff
    return undefined;
  };

  /** Resumes a dropped stream with GET + Last-Event-ID until `done()` or the resume budget is spent. */
  const resume = async (relatedId: JsonRpcId | undefined, state: StreamState, done: () => boolean, signal: AbortSignal) => {
    for (let attempt = 0; attempt < opts.maxResumes && !done() && !signal.aborted; attempt++) {
      await sleep(state.retryMs ?? opts.defaultRetryMs, signal);
      if (signal.aborted) return;
      try {
        const body = await getStream(state, signal);
        if (!body) return;
        await readSse(body, relatedId, state);
      } catch (err) {
        if (signal.aborted) return;
        log.debug({ err: (err as Error).message, attempt }, 'resuming the upstream stream failed; retrying');
      }
    }
  };

  /** Aborts what is running and DELETEs the upstream session (once; close() returns this). */
  const endSession = async () => {
    const id = sessionId;
    closed = true;
    abortAll();
    if (!id) return;
    try {
      const res = await request(spec.url, {
        method: 'DELETE',
        dispatcher: opts.dispatcher,
        headers: { ...spec.headers, 'mcp-session-id': id, ...(protocolVersion ? { 'mcp-protocol-version': protocolVersion } : {}) },
        signal: AbortSignal.timeout(2000),
      });
      await res.body.dump();
    } catch (err) {
      log.debug({ err: (err as Error).message }, 'upstream session DELETE failed');
    }
  };
  let ending: Promise<void> | undefined;
  /**
   * The POST of `notifications/initialized`, while it runs: what follows waits for it, or the
   * server could see a request before it knows the session is initialized (servers register
   * capability-dependent tools then).
   */
  let initializing: Promise<void> | undefined;

  const post = async (frame: Frame, body: string) => {
    if (initializing) await initializing;
    const msg = frame.msg;
    const ids = isRequest(msg) ? [msg.id] : [];
    const abort = new AbortController();
    const signal = abort.signal;
    posts.add(abort);
    for (const id of ids) inFlight.set(id, abort);
    let responded = false;
    try {
      const res = await request(spec.url, {
        method: 'POST',
        dispatcher: opts.dispatcher,
        signal,
        headers: headers({ 'content-type': 'application/json', accept: ACCEPT, ...traceContextOf((msg as { params?: { _meta?: Record<string, unknown> } }).params?._meta) }),
        body,
      });
      responded = true;
      const newSession = res.headers['mcp-session-id'];
      if (typeof newSession === 'string' && !sessionId) sessionId = newSession;
      if (res.statusCode === 404 && sessionId) {
        await res.body.dump();
        return sessionExpired();
      }
      const type = String(res.headers['content-type'] ?? '');
      if (res.statusCode >= 200 && res.statusCode < 300) {
        confirmed = true;
        if (type.startsWith('text/event-stream')) {
          const state: StreamState = {};
          const answered = () => !ids.some((id) => inFlight.has(id));
          try {
            await readSse(res.body, ids[0], state);
          } catch (err) {
            if (signal.aborted || !state.lastEventId) throw err; // not resumable
            log.debug({ err: (err as Error).message }, 'upstream response stream broke off; resuming');
          }
          if (!answered() && state.lastEventId) await resume(ids[0], state, answered, signal);
        } else if (type.startsWith('application/json')) {
          deliverBody(await res.body.text(), ids[0]);
        } else {
          await res.body.dump();
        }
        if (!signal.aborted && ids.some((id) => inFlight.has(id))) {
          answerWithError(ids, new ProxyError('UPSTREAM_PROTOCOL', 'The upstream ended the response without answering'));
        }
        if (isNotification(msg) && msg.method === 'notifications/initialized' && !opts.getFollowsClient) listen(true);
        return;
      }
      // An error status: relay a JSON-RPC error body as is, or describe the status.
      const text = await res.body.text();
      // A session taken over from a token that the server refuses at once is gone: servers built on
      // the SDK's example answer an unknown session with 400 ("No valid session ID"), not 404.
      if (res.statusCode === 400 && opts.resume && !confirmed && /session/i.test(text.slice(0, 500))) return sessionExpired();
      const rejection = type.startsWith('application/json') ? requestError(text, ids) : undefined;
      if (rejection) deliver(rejection, ids[0]);
      answerWithError(ids, new ProxyError('UPSTREAM_PROTOCOL', `The upstream answered HTTP ${res.statusCode}`, { body: text.slice(0, 500) }));
      if (ids.length === 0) log.warn({ status: res.statusCode, body: text.slice(0, 200) }, 'upstream rejected a message');
    } catch (err) {
      if (signal.aborted) return;
      log.warn({ err: (err as Error).message }, 'upstream request failed');
      const what = responded ? "The upstream's response broke off before the answer" : 'The upstream could not be reached';
      answerWithError(ids, new ProxyError('UPSTREAM_UNREACHABLE', `${what}: ${(err as Error).message}`));
    } finally {
      posts.delete(abort);
      for (const id of ids) if (inFlight.get(id) === abort) inFlight.delete(id);
    }
  };

  /** Returns false when the body held no JSON-RPC message. */
  const deliverBody = (text: string, relatedId: JsonRpcId | undefined) => {
    const parsed = parsePayload(text);
    if (!parsed.ok) return log.warn({ body: text.slice(0, 200) }, 'upstream answered with a body that is not JSON-RPC');
    for (const frame of parsed.frames) deliver(frame, relatedId);
  };

  /** Holds the GET stream until `signal` aborts: reconnects when it drops (another replica may hold it: 409). */
  const openGetStream = async (signal: AbortSignal) => {
    const state: StreamState = {};
    let failures = -1; // -1: the first attempt goes without delay
    while (!closed && !signal.aborted) {
      try {
        // Back off while the upstream is down: retry, 2×, 4×… up to 30 s.
        if (failures >= 0) await sleep(Math.min((state.retryMs ?? opts.defaultRetryMs) * 2 ** failures, 30_000), signal);
        if (closed || signal.aborted) return;
        failures++;
        const body = await getStream(state, signal);
        if (!body) return;
        failures = 0;
        await readSse(body, undefined, state);
      } catch (err) {
        if (closed || signal.aborted) return;
        log.debug({ err: (err as Error).message }, 'upstream GET stream dropped; reconnecting');
      }
    }
  };

  const listen = (on: boolean) => {
    if (!on) {
      listening?.abort();
      listening = undefined;
    } else if (!listening && !closed && sessionId) {
      const loop = new AbortController();
      listening = loop;
      void openGetStream(AbortSignal.any([lifetime.signal, loop.signal])).finally(() => {
        if (listening === loop) listening = undefined;
      });
    }
  };

  return {
    send(frame) {
      if (closed) return;
      const msg = frame.msg;
      const body = encodeForUpstream(frame, events, log);
      if (body === undefined) return;
      if (isRequest(msg) && msg.method === 'initialize') initializeId = msg.id;
      const sent = post(frame, body);
      if (isNotification(msg) && msg.method === 'notifications/initialized') {
        initializing = sent.finally(() => {
          initializing = undefined;
        });
      }
      // A cancelled request's stream would stay open forever: drop it after telling the server.
      if (isNotification(msg) && msg.method === 'notifications/cancelled') {
        const id = (msg as { params?: { requestId?: JsonRpcId } }).params?.requestId;
        if (id !== undefined) setImmediate(() => inFlight.get(id)?.abort());
      }
    },
    close() {
      ending ??= endSession();
      return ending;
    },
    detach() {
      closed = true;
      abortAll();
    },
    session: () => ({ id: sessionId, protocolVersion }),
    listen: opts.getFollowsClient ? listen : undefined,
  };
}

/**
 * The JSON-RPC error in an error-status body, as the answer to the one request of the POST.
 * Servers often send such errors with `id: null` (they failed before reading the id).
 */
function requestError(text: string, ids: JsonRpcId[]): Frame | undefined {
  const parsed = parsePayload(text);
  if (!parsed.ok || parsed.batch || ids.length !== 1) return undefined;
  const msg = parsed.frames[0].msg;
  if (!isResponse(msg) || !msg.error) return undefined;
  return msg.id === ids[0] ? parsed.frames[0] : { msg: { ...msg, id: ids[0] } };
}

interface StreamState {
  lastEventId?: string;
  retryMs?: number;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
