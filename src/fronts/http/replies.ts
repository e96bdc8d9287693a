/**
 * The client-facing halves of a Streamable HTTP exchange: the session's GET stream (SSE from the
 * start) and the reply to a POST, which is plain JSON or SSE as the exchange requires.
 */
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { Wire } from '../../jsonrpc/message.js';
import { deadlinesOf, type Deadline } from './deadlines.js';
import { ReaderWatch, type SlowReaderLimits } from './reader-watch.js';
import type { EventLog } from './resumable.js';

/** Where a request's answers go: a POST's reply, or what stands in for it while its client is away or back on a GET. */
export interface ReplyChannel {
  readonly isOpen: boolean;
  /** Can it carry notifications and requests besides the responses? */
  readonly canStream: boolean;
  /** Sends one message; `last`: no other follows on this channel. */
  send(json: Wire, last: boolean): void;
  end(): void;
  onClose(fn: () => void): void;
  /** The numbered events of a resumable stream (once its client has an event id to resume from). */
  readonly events?: EventLog;
  /** Set while the client is away: only messages about its own requests go to it. */
  readonly held?: boolean;
  /** Closes the stream from this side (its client came back on another connection); resolves once it is closed. */
  drop?(): Promise<void>;
}

/**
 * Takes the response over from fastify, keeping the headers plugins already set on the reply
 * (CORS, rate-limit): the raw response writes its own head from here on.
 */
export function takeOver(reply: FastifyReply): ServerResponse {
  for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value);
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

/** An SSE comment this often on a streaming POST reply (a GET stream has one at least as often). */
export const KEEPALIVE_MS = 25_000;

const EVENT_START = Buffer.from('event: message\ndata: ');
const EVENT_END = Buffer.from('\n\n');

/** One JSON-RPC message as an SSE `message` event, in pieces: an upstream's bytes are written as they are, never copied. */
export function sseEvent(json: Wire): Wire[] {
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

  constructor(
    private readonly res: ServerResponse,
    headers: Record<string, string>,
    slowReaders: SlowReaderLimits,
  ) {
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

  /** An event already made (a resumed stream's, with its id). */
  sendEvent(pieces: Wire[]): void {
    this.write(pieces);
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

/** What else a POST reply may be: held until its first message (an initialize reply), or resumable. */
export interface PostReplyOptions {
  /** Nothing is written before the first message (an initialize reply, whose session id is known only with the answer). */
  holdHeaders?: boolean;
  /** Its stream's events are numbered and logged, after a priming event with this reconnection delay. */
  resumable?: { events: EventLog; retryMs: number };
}

export class PostReply implements ReplyChannel {
  private streaming = false;
  private done = false;
  private readonly bodies: Wire[] = [];
  private timer: NodeJS.Timeout | undefined;
  /** In `auto` mode, when the reply becomes a stream if no answer came. */
  private streamAfter: Deadline | undefined;
  private readonly closers: Array<() => void> = [];
  private readonly reader: ReaderWatch;
  private hasClosed = false;

  private readonly log: EventLog | undefined;
  private readonly retryMs: number;

  /** `headers` is read when the headers are written. */
  constructor(
    private readonly res: ServerResponse,
    private readonly headers: () => Record<string, string>,
    private readonly mode: ReplyMode,
    private readonly batch: boolean,
    streamAfterMs: number,
    slowReaders: SlowReaderLimits,
    options: PostReplyOptions = {},
  ) {
    this.reader = new ReaderWatch(res, slowReaders);
    this.log = options.resumable?.events;
    this.retryMs = options.resumable?.retryMs ?? 0;
    // One listener for all that ends with the response (the reader's watch, the timers, onClose).
    res.once('close', () => this.closed());
    if (options.holdHeaders) return;
    if (mode === 'sse' || (mode === 'auto' && batch)) this.startStream();
    else if (mode === 'auto') this.streamAfter = deadlinesOf(streamAfterMs).after(() => this.startStream());
  }

  /** The stream's events, once the priming event gave the client an id to resume from. */
  get events(): EventLog | undefined {
    return this.streaming ? this.log : undefined;
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
    const event = sseEvent(json);
    this.write(this.log ? this.log.record(event) : event, last); // the last event and the end of the stream in one write
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

  drop(): Promise<void> {
    if (this.hasClosed) return Promise.resolve();
    return new Promise((resolve) => {
      this.res.once('close', () => resolve());
      this.res.destroy();
    });
  }

  private closed(): void {
    this.hasClosed = true;
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
    if (this.log) this.res.write(this.log.priming(this.retryMs));
    this.res.flushHeaders();
    // A long call or a listen stream stays open through proxies that time out quiet connections.
    this.timer = setInterval(() => this.ping(), KEEPALIVE_MS);
    this.timer.unref();
  }

  private finishJson(body: Wire, status = 200): void {
    clearTimeout(this.timer);
    this.done = true;
    this.reader.write(() =>
      this.res.writeHead(status, { 'content-type': 'application/json', 'content-length': byteLength(body), ...this.headers() }).end(body),
    );
  }

  private write(pieces: Wire[], last: boolean, keepAlive = false): void {
    if (!this.isOpen) return;
    this.reader.write(() => {
      if (last) this.done = true;
      writeEvent(this.res, pieces, last);
    }, keepAlive);
  }
}
