/**
 * The client-facing halves of a Streamable HTTP exchange: the session's GET stream (SSE from the
 * start) and the reply to a POST, which is plain JSON or SSE as the exchange requires.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { Logger } from 'pino';
import type { Wire } from '../../jsonrpc/message.js';
import { deadlinesOf, type Deadline } from './deadlines.js';

/** What a response stream tolerates from a client that stops reading (listen.slowReaders). */
export interface SlowReaderLimits {
  maxUnreadBytes: number;
  stallMs: number;
  log: Logger;
}

/**
 * Keeps a client that does not read from making the proxy buffer without bound: a message is not
 * written while more than `maxUnreadBytes` of the earlier ones still wait for the client (the
 * latest message, of any size, does not count: a reader busy with one large answer is not
 * behind), and a stream whose waiting bytes do not go down for `stallMs` is closed.
 * Closing is the error the client can get: it ends the stream, and the relay then treats the
 * client as gone (its calls are cancelled upstream).
 */
class ReaderWatch {
  private timer: NodeJS.Timeout | undefined;
  private lastUnread = 0;
  /** Bytes written since the last look: waiting bytes that grew by new messages are not a stall. */
  private added = 0;
  /** Bytes of the latest message still unread when it was written. */
  private latest = 0;

  constructor(private readonly res: ServerResponse, private readonly limits: SlowReaderLimits) {}

  /** The response closed: nothing more to watch. */
  closed(): void {
    this.stopWatching();
  }

  /**
   * Writes with `send` unless the earlier messages still leave too much unread (then the stream
   * is closed instead), and watches for progress while the client is behind. A `keepAlive`
   * write (a ping) is not a message: it joins the latest message's allowance instead of
   * replacing it, so a ping after a large answer does not make that answer count as behind.
   */
  write(send: () => void, keepAlive = false): void {
    const behind = this.res.writableLength - this.latest;
    if (behind > this.limits.maxUnreadBytes) return this.cut(`${behind} bytes of earlier messages wait unread (listen.slowReaders.maxUnreadBytes: ${this.limits.maxUnreadBytes})`);
    const before = this.res.writableLength;
    send();
    const written = Math.max(0, this.res.writableLength - before);
    this.latest = keepAlive ? this.latest + written : written;
    this.added += written;
    if (this.timer || this.res.writableLength === 0 || this.res.destroyed) return;
    this.lastUnread = this.res.writableLength;
    this.added = 0;
    this.timer = setInterval(() => {
      const unread = this.res.writableLength;
      if (unread === 0 || this.res.destroyed) return this.stopWatching();
      const read = this.lastUnread + this.added - unread;
      if (read <= 0) return this.cut(`the client read nothing of ${unread} waiting bytes for ${this.limits.stallMs} ms (listen.slowReaders.stallMs)`);
      this.lastUnread = unread;
      this.added = 0;
    }, this.limits.stallMs);
    this.timer.unref();
  }

  private stopWatching(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private cut(why: string): void {
    this.stopWatching();
    this.limits.log.warn({ why }, 'client is not reading its response stream; closing it');
    this.res.destroy();
  }
}

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

/** In `auto` mode, a POST whose answer takes longer than this becomes an SSE stream. */
export const STREAM_AFTER_MS = 100;

/** An SSE comment this often on a streaming POST reply. */
const KEEPALIVE_MS = 25_000;

const EVENT_START = Buffer.from('event: message\ndata: ');
const EVENT_END = Buffer.from('\n\n');

/** One JSON-RPC message as an SSE `message` event, in pieces: an upstream's bytes are written as they are, never copied. */
function sseEvent(json: Wire): Wire[] {
  // Multi-line JSON (pretty-printed by an upstream) needs one `data:` field per line.
  if (json.includes('\n')) return [`event: message\ndata: ${json.toString().split(/\r?\n/).join('\ndata: ')}\n\n`];
  return typeof json === 'string' ? [`event: message\ndata: ${json}\n\n`] : [EVENT_START, json, EVENT_END];
}

/** Writes an event's pieces in one system call (corked), with the end of the response when `last` (end() uncorks). */
function writeEvent(res: ServerResponse, pieces: Wire[], last = false): void {
  res.cork();
  for (const piece of pieces) res.write(piece);
  if (last) res.end();
  else res.uncork();
}

function byteLength(body: Wire): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.length;
}

/** A server-sent events stream that starts at once (the session's GET stream). */
export class SseStream {
  private readonly reader: ReaderWatch;

  constructor(private readonly res: ServerResponse, headers: Record<string, string>, slowReaders: SlowReaderLimits) {
    this.reader = new ReaderWatch(res, slowReaders);
    res.once('close', () => this.reader.closed());
    res.writeHead(200, { ...SSE_HEADERS, ...headers });
    res.flushHeaders();
  }

  get isOpen(): boolean {
    return !this.res.writableEnded && !this.res.destroyed;
  }

  send(json: Wire): void {
    this.write(sseEvent(json));
  }

  /** An SSE comment: keeps proxies from timing the stream out and reveals a dead socket. */
  ping(): void {
    this.write([': ping\n\n'], true);
  }

  private write(pieces: Wire[], keepAlive = false): void {
    if (this.isOpen) this.reader.write(() => writeEvent(this.res, pieces), keepAlive);
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
  private readonly bodies: Wire[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** In `auto` mode, when the reply becomes a stream if no answer came. */
  private streamAfter: Deadline | undefined;
  private readonly closers: Array<() => void> = [];
  private readonly reader: ReaderWatch;

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
    slowReaders: SlowReaderLimits,
    holdHeaders = false,
  ) {
    this.reader = new ReaderWatch(res, slowReaders);
    // One listener for all that ends with the response (the reader's watch, the timers, onClose).
    res.once('close', () => this.closed());
    if (holdHeaders) return;
    if (mode === 'sse' || (mode === 'auto' && batch)) this.startStream();
    else if (mode === 'auto') this.streamAfter = deadlinesOf(streamAfterMs).after(() => this.startStream());
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
    if (this.streaming) this.write([': ping\n\n'], false, true);
  }

  /**
   * Sends one message; `last` means no other message will follow on this reply. `status` is
   * used when the reply ends as plain JSON (a stream has already said 200).
   */
  send(json: Wire, last: boolean, status = 200): void {
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
    this.write(sseEvent(json), last); // the last event and the end of the stream in one write
  }

  end(): void {
    if (this.done) return;
    if (this.streaming) {
      this.done = true;
      this.res.end();
    } else {
      this.finishJson(this.batch ? `[${this.bodies.map(String).join(',')}]` : (this.bodies[0] ?? ''));
    }
  }

  onClose(fn: () => void): void {
    this.closers.push(fn);
  }

  private closed(): void {
    clearTimeout(this.timer);
    this.streamAfter?.cancel();
    this.reader.closed();
    for (const fn of this.closers) fn();
  }

  private startStream(): void {
    if (this.streaming || this.done) return;
    this.streamAfter?.cancel();
    this.streaming = true;
    this.res.writeHead(200, { ...SSE_HEADERS, ...this.headers() });
    this.res.flushHeaders();
    // A long call or a listen stream stays open through proxies that time out quiet connections.
    this.timer = setInterval(() => this.ping(), KEEPALIVE_MS);
    this.timer.unref();
  }

  private finishJson(body: Wire, status = 200): void {
    clearTimeout(this.timer);
    this.done = true;
    this.reader.write(() => this.res.writeHead(status, { 'content-type': 'application/json', 'content-length': byteLength(body), ...this.headers() }).end(body));
  }

  private write(pieces: Wire[], last: boolean, keepAlive = false): void {
    if (!this.isOpen) return;
    this.reader.write(() => {
      if (last) this.done = true;
      writeEvent(this.res, pieces, last);
    }, keepAlive);
  }
}
