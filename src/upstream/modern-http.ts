/**
 * The proxy as a modern (2026-07-28) client of a Streamable HTTP server: one POST per request,
 * the headers rebuilt from the body it sends, the answer read from a JSON body or from the
 * request's own SSE stream (its notifications handed on as they come). Nothing is kept between
 * requests; closing the stream is how a request is cancelled.
 */
import type { Logger } from 'pino';
import { request, type Dispatcher } from 'undici';
import { ProxyError, unusableAnswer } from '../jsonrpc/errors.js';
import { isNotification, isResponse, parseUpstream, type Frame, type JsonRpcRequest } from '../jsonrpc/message.js';
import { PROGRESS } from '../mcp/cancel-progress.js';
import { modernRequestHeaders } from '../mcp/http-headers.js';
import { JSON_TYPE, SSE_TYPE, mediaTypeOf } from '../mcp/media-type.js';
import { traceContextOf } from '../ops/trace-context.js';
import { readEvents } from './http-streams.js';
import type { CallOptions, UpstreamAnswer, UpstreamCall } from './call.js';
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
  constructor(
    private readonly spec: HttpUpstreamSpec,
    private readonly dispatcher: Dispatcher,
    private readonly log: Logger,
  ) {}

  async call(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer> {
    let body: string;
    try {
      body = JSON.stringify(req);
    } catch (err) {
      throw new ProxyError('BAD_REQUEST', `The request could not be sent to the upstream: ${(err as Error).message}`);
    }
    const done = new AbortController();
    const timer = setTimeout(() => done.abort(), o.timeoutMs);
    const signal = o.signal ? AbortSignal.any([o.signal, done.signal]) : done.signal;
    let responded = false;
    try {
      const res = await request(this.spec.url, {
        method: 'POST',
        dispatcher: this.dispatcher,
        signal,
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
      if (o.signal?.aborted) throw o.signal.reason ?? err;
      if (err instanceof ProxyError) throw err;
      if (done.signal.aborted)
        throw new ProxyError('REQUEST_TIMEOUT', `The upstream did not answer ${req.method} within ${o.timeoutMs} ms`, {
          timeoutMs: o.timeoutMs,
        });
      this.log.warn({ err: (err as Error).message, method: req.method }, 'modern upstream request failed');
      const what = responded ? "The upstream's response broke off before the answer" : 'The upstream could not be reached';
      throw new ProxyError('UPSTREAM_UNREACHABLE', `${what}: ${(err as Error).message}`);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Reads the request's stream until its answer (then lets go of the stream); notifications go to
   * `onNotification` meanwhile, and progress restarts the time limit.
   */
  private async readStream(
    body: AsyncIterable<Buffer>,
    req: JsonRpcRequest,
    o: CallOptions,
    done: AbortController,
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
