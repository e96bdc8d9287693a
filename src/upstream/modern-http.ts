/**
 * The proxy as a modern (2026-07-28) client of a Streamable HTTP server: one POST per request,
 * the headers rebuilt from the body it sends, the answer read from a JSON body or from the
 * request's own SSE stream (its notifications handed on as they come). Nothing is kept between
 * requests; closing the stream is how a request is cancelled.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { ProxyError, unusableAnswer } from '../jsonrpc/errors.js';
import { isNotification, isResponse, parseUpstream, type Frame, type JsonRpcRequest } from '../jsonrpc/message.js';
import { PROGRESS } from '../mcp/cancel-progress.js';
import { modernRequestHeaders, type ParamHeaders } from '../mcp/http-headers.js';
import { JSON_TYPE, SSE_TYPE, mediaTypeOf } from '../mcp/media-type.js';
import { traceContextOf } from '../ops/trace-context.js';
import { readEvents } from './http-streams.js';
import type { HttpUpstreamSpec } from './types.js';

const ACCEPT = 'application/json, text/event-stream';
/** The time limit of a request that lasts as long as it is wanted (a listen stream): the longest timer Node keeps. */
export const NO_TIMEOUT_MS = 2 ** 31 - 1;

export interface UpstreamAnswer {
  /** The response, with the upstream's bytes. */
  frame: Frame;
  /** Its HTTP status (a rejection comes with a 4xx and a JSON-RPC error body). */
  status: number;
}

export interface ModernSendOptions {
  /** Aborts the request (the client left, or cancelled): the POST is closed, which cancels it upstream. */
  signal?: AbortSignal;
  /** No answer within this time (progress restarts it) → REQUEST_TIMEOUT, and the request is cancelled upstream. */
  timeoutMs: number;
  /** The tool's Mcp-Param-* headers (header, lower case → argument), for a tools/call. */
  paramHeaders?: ParamHeaders;
  /** A notification on the request's stream (progress, a log message). */
  onNotification?(frame: Frame): void;
}

/** Where modern requests go: a Streamable HTTP endpoint, or a stdio process (modern-stdio.ts). */
export interface ModernUpstream {
  /**
   * Sends one request and resolves with its answer; rejects with a ProxyError when none can be had (or with the
   * abort when `signal` ends it).
   */
  send(req: JsonRpcRequest, o: ModernSendOptions): Promise<UpstreamAnswer>;
  /** Lets go of what it holds (a process). */
  close?(): Promise<void>;
  /** Whether requests carry headers that mirror their body (Streamable HTTP), which need the tools' Mcp-Param-* names. */
  readonly mirrorsHeaders: boolean;
}

/**
 * What ends one upstream request (its time limit, its answer read, the caller's signal), as the
 * EventEmitter undici takes for a signal: in Node 20 an AbortController costs about 10 µs, and
 * AbortSignal.any several times that, with weak references every garbage collection then walks.
 */
class RequestEnd extends EventEmitter {
  aborted = false;
  reason: unknown = undefined;

  abort(reason?: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    this.emit('abort');
  }
}

export class ModernHttpUpstream implements ModernUpstream {
  readonly mirrorsHeaders = true;
  /** The endpoint, parsed once (undici would parse the URL again on every request). */
  private readonly origin: string;
  private readonly path: string;

  constructor(
    private readonly spec: HttpUpstreamSpec,
    private readonly dispatcher: Dispatcher,
    private readonly log: Logger,
  ) {
    const url = new URL(spec.url);
    this.origin = url.origin;
    this.path = `${url.pathname}${url.search}`;
  }

  async send(req: JsonRpcRequest, o: ModernSendOptions): Promise<UpstreamAnswer> {
    let body: string;
    try {
      body = JSON.stringify(req);
    } catch (err) {
      throw new ProxyError('BAD_REQUEST', `The request could not be sent to the upstream: ${(err as Error).message}`);
    }
    const done = new RequestEnd();
    const timer = setTimeout(() => done.abort(), o.timeoutMs);
    const outer = o.signal;
    const cancelled = outer && (() => done.abort(outer.reason));
    if (outer?.aborted) done.abort(outer.reason);
    else if (cancelled) outer.addEventListener('abort', cancelled, { once: true });
    let responded = false;
    try {
      const res = await this.dispatcher.request({
        origin: this.origin,
        path: this.path,
        method: 'POST',
        signal: done,
        headers: {
          ...this.spec.headers,
          'content-type': 'application/json',
          accept: ACCEPT,
          ...modernRequestHeaders(req, o.paramHeaders),
          ...traceContextOf(req.params?._meta as Record<string, unknown> | undefined),
        },
        body,
      });
      responded = true;
      const type = mediaTypeOf(res.headers['content-type']);
      const frame =
        type === SSE_TYPE
          ? await this.readStream(res.body, req, o, done, () => timer.refresh())
          : type === JSON_TYPE
            ? answerIn(Buffer.from(await res.body.arrayBuffer()), req, this.spec.maxJsonDepth)
            : undefined;
      if (type !== SSE_TYPE && type !== JSON_TYPE) await res.body.dump();
      if (frame) return { frame, status: res.statusCode };
      throw new ProxyError(
        'UPSTREAM_PROTOCOL',
        res.statusCode >= 400 ? `The upstream answered HTTP ${res.statusCode}` : 'The upstream ended the response without answering',
        { status: res.statusCode },
      );
    } catch (err) {
      if (outer?.aborted) throw outer.reason ?? err;
      if (err instanceof ProxyError) throw err;
      if (done.aborted)
        throw new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer ${req.method} within ${o.timeoutMs} ms`, {
          timeoutMs: o.timeoutMs,
        });
      this.log.warn({ err: (err as Error).message, method: req.method }, 'modern upstream request failed');
      const what = responded ? "The upstream's response broke off before the answer" : 'The upstream could not be reached';
      throw new ProxyError('UPSTREAM_UNREACHABLE', `${what}: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
      if (cancelled) outer.removeEventListener('abort', cancelled);
    }
  }

  /**
   * Reads the request's stream until its answer (then lets go of the stream); notifications go to
   * `onNotification` meanwhile, and progress restarts the time limit.
   */
  private async readStream(
    body: AsyncIterable<Buffer>,
    req: JsonRpcRequest,
    o: ModernSendOptions,
    done: RequestEnd,
    progressed: () => void,
  ): Promise<Frame | undefined> {
    let answer: Frame | undefined;
    const stop = new Error('answered');
    try {
      await readEvents(body, {}, (data) => {
        if (answer) return;
        const parsed = parseUpstream(Buffer.from(data), this.spec.maxJsonDepth);
        if (!parsed.ok) {
          if (parsed.answerTo === req.id) throw unusableAnswer(parsed);
          return void this.log.warn(
            { data: data.slice(0, 200), why: parsed.error.error?.message },
            'modern upstream sent an SSE event that is not JSON-RPC; skipped',
          );
        }
        const msg = parsed.frames[0].msg;
        if (isResponse(msg) && (msg.id === req.id || msg.id === null)) {
          answer = msg.id === null ? { msg: { ...msg, id: req.id } } : parsed.frames[0];
          throw stop;
        }
        if (!isNotification(msg)) return;
        if (msg.method === PROGRESS) progressed();
        try {
          o.onNotification?.(parsed.frames[0]);
        } catch (err) {
          // It costs itself, not the request.
          this.log.error({ err: (err as Error)?.message, method: msg.method }, 'an upstream notification could not be handled; dropped');
        }
      });
    } catch (err) {
      if (err !== stop) throw err;
      done.abort(); // the answer is in: nothing more of this stream is wanted
    }
    return answer;
  }
}

/** The answer to `req` in a JSON body (an error sent with `id: null`, as servers do when they fail early, is taken as the answer). */
function answerIn(bytes: Buffer, req: JsonRpcRequest, maxDepth: number): Frame | undefined {
  const parsed = parseUpstream(bytes, maxDepth);
  if (!parsed.ok && parsed.answerTo === req.id) throw unusableAnswer(parsed);
  if (!parsed.ok || parsed.batch) return undefined;
  const msg = parsed.frames[0].msg;
  if (!isResponse(msg)) return undefined;
  if (msg.id === req.id) return parsed.frames[0];
  return msg.id === null && msg.error ? { msg: { ...msg, id: req.id } } : undefined;
}
