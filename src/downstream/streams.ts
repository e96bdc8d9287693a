/**
 * The client-facing halves of a Streamable HTTP exchange: the session's GET stream (SSE from the
 * start) and the reply to a POST, which is plain JSON or SSE as the exchange requires.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';

/**
 * Takes the response over from fastify, keeping the headers plugins already set on the reply
 * (CORS, rate-limit): the raw response writes its own head from here on.
 */
export function takeOver(reply: FastifyReply): ServerResponse {
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value as string | string[]);
  reply.hijack();
  return reply.raw;
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** An SSE comment this often on a streaming POST reply. */
const KEEPALIVE_MS = 25_000;

/** One JSON-RPC message as an SSE `message` event. */
function sseEvent(json: string): string {
  // Multi-line JSON (pretty-printed by an upstream) needs one `data:` field per line.
  const data = json.includes('\n') ? json.split(/\r?\n/).join('\ndata: ') : json;
  return `event: message\ndata: ${data}\n\n`;
}

/** A server-sent events stream that starts at once (the session's GET stream). */
export class SseStream {
  constructor(private readonly res: ServerResponse, headers: Record<string, string>) {
    res.writeHead(200, { ...SSE_HEADERS, ...headers });
    res.flushHeaders();
  }

  get isOpen(): boolean {
    return !this.res.writableEnded && !this.res.destroyed;
  }

  send(json: string): void {
    if (this.isOpen) this.res.write(sseEvent(json));
  }

  /** An SSE comment: keeps proxies from timing the stream out and reveals a dead socket. */
  ping(): void {
    if (this.isOpen) this.res.write(': ping\n\n');
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
  }

  onClose(fn: () => void): void {
    this.res.once('close', fn);
  }
}

/**
 * How a POST is answered: `sse` always streams; `json` never does (the client accepts only
 * JSON, or the operator chose it); `auto` answers with plain JSON when the response is the first
 * and only message and comes within `streamAfterMs`, and otherwise becomes an SSE stream. Plain
 * JSON is the cheaper path for both sides; the stream is there for progress and server requests.
 */
export type ReplyMode = 'auto' | 'sse' | 'json';

export class PostReply {
  private streaming = false;
  private done = false;
  private readonly bodies: string[] = [];
  private timer: NodeJS.Timeout | undefined;

  /**
   * `headers` is read when the headers are written. With `holdHeaders` nothing is written before
   * the first message (an initialize reply, whose session id is known only with the answer).
   */
  constructor(
    private readonly res: ServerResponse,
    private readonly headers: () => Record<string, string>,
    private readonly mode: ReplyMode,
    private readonly batch: boolean,
    streamAfterMs: number,
    holdHeaders = false,
  ) {
    res.once('close', () => clearTimeout(this.timer));
    if (holdHeaders) return;
    if (mode === 'sse' || (mode === 'auto' && batch)) this.startStream();
    else if (mode === 'auto') this.timer = setTimeout(() => this.startStream(), streamAfterMs);
  }

  /** Can this reply carry notifications and requests besides the responses? */
  get canStream(): boolean {
    return this.mode !== 'json';
  }

  get isOpen(): boolean {
    return !this.done && !this.res.destroyed;
  }

  /** An SSE comment on a streaming reply: keeps proxies from timing it out, reveals a dead socket. */
  private ping(): void {
    if (this.streaming && this.isOpen) this.res.write(': ping\n\n');
  }

  /**
   * Sends one message; `last` means no other message will follow on this reply. `status` is
   * used when the reply ends as plain JSON (a stream has already said 200).
   */
  send(json: string, last: boolean, status = 200): void {
    if (!this.isOpen) return;
    if (this.mode === 'json') {
      this.bodies.push(json);
      if (last) this.end();
      return;
    }
    if (!this.streaming) {
      if (last && !this.batch) return this.finishJson(json, status);
      this.startStream();
    }
    if (last) {
      this.done = true;
      this.res.end(sseEvent(json)); // the event and the end of the stream in one write
    } else {
      this.res.write(sseEvent(json));
    }
  }

  end(): void {
    if (this.done) return;
    if (this.streaming) {
      this.done = true;
      this.res.end();
    } else {
      this.finishJson(this.batch ? `[${this.bodies.join(',')}]` : (this.bodies[0] ?? ''));
    }
  }

  onClose(fn: () => void): void {
    this.res.once('close', fn);
  }

  private startStream(): void {
    if (this.streaming || this.done) return;
    clearTimeout(this.timer);
    this.streaming = true;
    this.res.writeHead(200, { ...SSE_HEADERS, ...this.headers() });
    this.res.flushHeaders();
    // A long call or a listen stream stays open through proxies that time out quiet connections.
    this.timer = setInterval(() => this.ping(), KEEPALIVE_MS);
    this.timer.unref();
  }

  private finishJson(body: string, status = 200): void {
    clearTimeout(this.timer);
    this.done = true;
    this.res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body), ...this.headers() });
    this.res.end(body);
  }
}
