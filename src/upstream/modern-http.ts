/**
 * The proxy as a modern (2026-07-28) client of a Streamable HTTP server: one POST per request,
 * the headers rebuilt from the body it sends, the answer read from a JSON body or from the
 * request's own SSE stream (its notifications handed on as they come). Nothing is kept between
 * requests; closing the stream is how a request is cancelled.
 */
import type { Logger } from 'pino';
import type { Dispatcher } from 'undici';
import { ProxyError, unusableAnswer } from '../jsonrpc/errors.js';
import { isNotification, isResponse, parseUpstream, type Frame, type JsonRpcRequest } from '../jsonrpc/message.js';
import { PROGRESS } from '../mcp/cancel-progress.js';
import { modernRequestHeaders } from '../mcp/http-headers.js';
import { JSON_TYPE, SSE_TYPE, mediaTypeOf } from '../mcp/media-type.js';
import { traceContextOf } from '../ops/trace-context.js';
import type { CallOptions, UpstreamAnswer, UpstreamCall } from './call.js';
import { eventReader } from './http-streams.js';
import type { HttpUpstreamSpec } from './types.js';

const ACCEPT = 'application/json, text/event-stream';
/** The time limit of a request that lasts as long as it is wanted (a listen stream): the longest timer Node keeps. */
export const NO_TIMEOUT_MS = 2 ** 31 - 1;

/** Where modern requests go: a Streamable HTTP endpoint (closing the POST cancels a call), or a stdio process (modern-stdio.ts). */
export interface ModernUpstream extends UpstreamCall {
  /** Lets go of what it holds (a process). */
  close?(): Promise<void>;
  /** Whether requests carry headers that mirror their body (Streamable HTTP), which need the tools' Mcp-Param-* names. */
  readonly mirrorsHeaders: boolean;
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

  call(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer> {
    let body: string;
    try {
      body = JSON.stringify(req);
    } catch (err) {
      return Promise.reject(new ProxyError('BAD_REQUEST', `The request could not be sent to the upstream: ${(err as Error).message}`));
    }
    if (o.signal?.aborted) return Promise.reject(o.signal.reason);
    return new Promise((resolve, reject) => {
      const exchange = new UpstreamExchange(req, o, this.spec.maxJsonDepth, this.log, resolve, reject);
      this.dispatcher.dispatch(
        {
          origin: this.origin,
          path: this.path,
          method: 'POST',
          headers: {
            ...this.spec.headers,
            'content-type': 'application/json',
            accept: ACCEPT,
            ...modernRequestHeaders(req, o.paramHeaders),
            ...traceContextOf(req.params?._meta as Record<string, unknown> | undefined),
          },
          body,
        },
        exchange,
      );
    });
  }
}

/** How much of a body that is neither JSON nor SSE is read (to keep the connection) before it is closed. */
const DISCARD_BYTES = 128 * 1024;

/**
 * One request's exchange with the upstream, as undici's dispatch handler: the answer is read as
 * its bytes come, without a response stream in between (a JSON body gathered, an SSE body's events
 * read one by one, its notifications handed on as they come), and the request is closed as soon as
 * the answer is in, the time limit is over (progress restarts it) or the caller's signal aborts.
 */
class UpstreamExchange implements Dispatcher.DispatchHandler {
  private abort: ((reason?: Error) => void) | undefined;
  private over = false;
  /** The status, once the response's head came. */
  private status = 0;
  private type: string | undefined;
  private readonly chunks: Buffer[] = [];
  private bytes = 0;
  private feed: ((chunk: Buffer) => void) | undefined;
  private readonly timer: NodeJS.Timeout;
  private readonly cancelled: (() => void) | undefined;

  constructor(
    private readonly req: JsonRpcRequest,
    private readonly o: CallOptions,
    private readonly maxDepth: number,
    private readonly log: Logger,
    private readonly resolve: (answer: UpstreamAnswer) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.timer = setTimeout(
      () =>
        this.fail(
          new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer ${req.method} within ${o.timeoutMs} ms`, {
            timeoutMs: o.timeoutMs,
          }),
        ),
      o.timeoutMs,
    );
    const outer = o.signal;
    if (outer) {
      this.cancelled = () => this.fail(outer.reason);
      outer.addEventListener('abort', this.cancelled, { once: true });
    }
  }

  onConnect(abort: (reason?: Error) => void): void {
    if (this.over) abort();
    else this.abort = abort;
  }

  onHeaders(status: number, rawHeaders: Buffer[]): boolean {
    this.status = status;
    this.type = mediaTypeOf(contentTypeOf(rawHeaders));
    if (this.type === SSE_TYPE) this.feed = eventReader({}, (data) => this.onEvent(data));
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.over) return true;
    if (this.feed) {
      try {
        this.feed(chunk);
      } catch (err) {
        this.fail(err);
      }
    } else if (this.type === JSON_TYPE) this.chunks.push(chunk);
    else if ((this.bytes += chunk.length) > DISCARD_BYTES) this.fail(this.unanswered());
    return true;
  }

  onComplete(): void {
    if (this.over) return;
    if (this.type !== JSON_TYPE) return this.fail(this.unanswered());
    try {
      const frame = answerIn(Buffer.concat(this.chunks), this.req, this.maxDepth);
      if (frame) this.settle({ frame, status: this.status });
      else this.fail(this.unanswered());
    } catch (err) {
      this.fail(err);
    }
  }

  onError(err: Error): void {
    if (this.over) return; // the request closed by this side, once settled
    this.log.warn({ err: err.message, method: this.req.method }, 'modern upstream request failed');
    const what = this.status ? "The upstream's response broke off before the answer" : 'The upstream could not be reached';
    this.fail(new ProxyError('UPSTREAM_UNREACHABLE', `${what}: ${err.message}`));
  }

  /** One event of an SSE body: the answer settles the request; a notification goes on (progress restarts the time limit). */
  private onEvent(data: string): void {
    if (this.over) return;
    const { req } = this;
    const parsed = parseUpstream(Buffer.from(data), this.maxDepth);
    if (!parsed.ok) {
      if (parsed.answerTo === req.id) throw unusableAnswer(parsed);
      return void this.log.warn(
        { data: data.slice(0, 200), why: parsed.error.error?.message },
        'modern upstream sent an SSE event that is not JSON-RPC; skipped',
      );
    }
    const msg = parsed.frames[0].msg;
    if (isResponse(msg) && (msg.id === req.id || msg.id === null)) {
      const frame = msg.id === null ? { msg: { ...msg, id: req.id } } : parsed.frames[0];
      return this.settle({ frame, status: this.status }); // nothing more of this stream is wanted
    }
    if (!isNotification(msg)) return;
    if (msg.method === PROGRESS) this.timer.refresh();
    try {
      this.o.onNotification?.(parsed.frames[0]);
    } catch (err) {
      // It costs itself, not the request.
      this.log.error({ err: (err as Error)?.message, method: msg.method }, 'an upstream notification could not be handled; dropped');
    }
  }

  private unanswered(): ProxyError {
    const { status } = this;
    return new ProxyError(
      'UPSTREAM_PROTOCOL',
      status >= 400 ? `The upstream answered HTTP ${status}` : 'The upstream ended the response without answering',
      { status },
    );
  }

  private settle(answer: UpstreamAnswer): void {
    if (this.end()) this.resolve(answer);
  }

  private fail(err: unknown): void {
    if (this.end()) this.reject(err);
  }

  /** Ends the exchange once (false when it was over already): the timer, the caller's signal, and the request if still open. */
  private end(): boolean {
    if (this.over) return false;
    this.over = true;
    clearTimeout(this.timer);
    if (this.cancelled) this.o.signal!.removeEventListener('abort', this.cancelled);
    this.abort?.();
    return true;
  }
}

/** The Content-Type of a response's raw headers (name, value, name, value…). */
function contentTypeOf(raw: Buffer[]): string | undefined {
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (raw[i].length === 12 && raw[i].toString('latin1').toLowerCase() === 'content-type') return raw[i + 1].toString('latin1');
  return undefined;
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
