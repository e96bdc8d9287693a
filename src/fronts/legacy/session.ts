/**
 * A downstream Streamable HTTP session: the relay's sink. It decides which stream carries each
 * message: a response (and progress, and whatever the upstream sent on that request's stream)
 * goes on the stream of the POST that asked; anything else goes on the GET stream, or on an
 * open POST stream when the client has no GET stream, or waits (bounded) for one.
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Held } from '../../core/held-bytes.js';
import { ProxyError } from '../../jsonrpc/errors.js';
import { isResponse, serialize, type Frame, type JsonRpcId, type Wire } from '../../jsonrpc/message.js';
import type { ClientSink, RelaySession } from '../../core/relay.js';
import type { ReplyChannel, SseStream } from '../http/replies.js';
import { HeldChannel, ResumedChannel, type EventLog } from '../http/resumable.js';

const BACKLOG_LIMIT = 1000;
/** Streams one session holds for its client to resume, at most (each keeps up to listen.resumableStreams.maxBytes). */
const MAX_HELD = 8;

interface Exchange {
  channel: ReplyChannel;
  waiting: Set<JsonRpcId>;
}

/** An exchange whose client lost its stream, waiting (the window) for it to resume. */
interface HeldStream {
  exchange: Exchange;
  events: EventLog;
  timer: NodeJS.Timeout;
  /** Gives back what holding it costs its client: its place in flight and its bytes in listen.heldBytes. */
  release(): void;
}

/** How this session's streams are held for a client that went away (listen.resumableStreams, listen.heldBytes). */
export interface StreamKeeping {
  /** How long a stream's unanswered requests wait for their client. */
  windowMs: number;
  /** Counts a held stream as a request of its client in flight: its release, or undefined when the client has as many as it may. */
  inFlight(): (() => void) | undefined;
  /** Counts a held stream's bytes against its client's share of listen.heldBytes; `drop` gives the stream up. */
  hold(bytes: number, drop: () => void): Held;
}

export class HttpSession implements ClientSink {
  relay!: RelaySession;
  /** Names the session in logs (the id itself is a credential). */
  readonly logId = randomUUID().slice(0, 8);
  /** When the session was started (ms since the epoch), wherever that was. */
  issuedAt = Date.now();
  /** Messages about the initialize request that came before its answer (the session id is minted with the answer). */
  private early: Array<[Frame, JsonRpcId]> | undefined;
  /** The session id (a sealed token), known once the initialize answer goes out. */
  private sessionId: string | undefined;
  private readonly exchanges = new Map<JsonRpcId, Exchange>();
  private getStream: SseStream | undefined;
  /** Whether the client ever opened a GET stream, and when its last one closed (ms since the epoch). */
  private listened = false;
  private streamClosedAt = 0;
  private backlog: Wire[] = [];
  private ended = false;
  /** The id of the initialize request that opened the session, until it is answered. */
  private initializeId: JsonRpcId | undefined;
  /** Exchanges held for their client to resume, by their stream's name. */
  private readonly held = new Map<string, HeldStream>();

  /**
   * `identify` issues the session id when the initialize answer is about to go out; a session
   * resumed from its token already has one.
   */
  constructor(
    private readonly log: Logger,
    private readonly onEnd: (session: HttpSession, reason: ProxyError) => void,
    private readonly identify: (session: HttpSession) => string,
    readonly principal: string,
    id?: string,
    /** How resumable streams are held for their client (none: their requests are given up at once). */
    private readonly keeping?: StreamKeeping,
  ) {
    this.sessionId = id;
  }

  get id(): string {
    this.sessionId ??= this.identify(this);
    return this.sessionId;
  }

  /** Whether the client has been told the session id (a session still initializing has none). */
  get identified(): boolean {
    return this.sessionId !== undefined;
  }

  /** Nothing in flight and no stream open: a candidate for idle reaping, and for eviction. */
  get isQuiet(): boolean {
    return this.exchanges.size === 0 && !this.getStream?.isOpen && this.relay.pendingCount === 0;
  }

  /** Whether the client ever opened a GET stream (it listens for what the server sends on its own). */
  get hasListened(): boolean {
    return this.listened;
  }

  /** When the session was last used (ms since the epoch): a request, an answer, or its GET stream, open until now. */
  get lastUsed(): number {
    if (this.getStream?.isOpen) return Date.now();
    return Math.max(this.relay.lastActivity, this.streamClosedAt);
  }

  /** Is a response stream already waiting for the answer to `id`? */
  isWaiting(id: JsonRpcId): boolean {
    return this.exchanges.has(id);
  }

  /** Registers a POST's channel as the place the answers to `ids` go. */
  addExchange(channel: ReplyChannel, ids: JsonRpcId[], initialize = false): void {
    const exchange: Exchange = { channel, waiting: new Set(ids) };
    for (const id of ids) this.exchanges.set(id, exchange);
    if (initialize) this.initializeId = ids[0];
    this.watch(exchange);
  }

  /**
   * Whether a stream of this session can be resumed after event `seq` (nothing it sent is lost).
   * A client may come back before this side has seen its old connection drop: the stream it
   * names, if still open here, is closed (and so held) first.
   */
  async canResume(from: { stream: string; seq: number }): Promise<boolean> {
    if (!this.held.has(from.stream)) {
      for (const exchange of new Set(this.exchanges.values()))
        if (exchange.channel.events?.stream === from.stream) await exchange.channel.drop?.();
    }
    return this.held.get(from.stream)?.events.after(from.seq) !== undefined;
  }

  /** Carries a held stream on `stream` (a GET with Last-Event-ID): what the client missed, then the rest. */
  resume(from: { stream: string; seq: number }, stream: SseStream): void {
    const held = this.held.get(from.stream)!;
    clearTimeout(held.timer);
    this.held.delete(from.stream);
    held.release();
    for (const event of held.events.after(from.seq)!) stream.sendEvent(event);
    if (held.exchange.waiting.size === 0) return stream.end();
    held.exchange.channel = new ResumedChannel(stream, held.events);
    this.watch(held.exchange);
  }

  heartbeat(): void {
    this.getStream?.ping();
  }

  cancelled(id: JsonRpcId): void {
    const exchange = this.exchanges.get(id);
    if (exchange) this.answered(exchange, id);
  }

  /** Makes `stream` the session's GET stream (a reconnecting client replaces its old one) and flushes what waited for one. */
  attachGetStream(stream: SseStream): void {
    this.getStream?.end();
    this.getStream = stream;
    this.listened = true;
    this.relay.clientListening(true);
    stream.onClose(() => {
      if (this.getStream !== stream) return;
      this.getStream = undefined;
      this.streamClosedAt = Date.now();
      this.relay.clientListening(false);
    });
    const waiting = this.backlog;
    this.backlog = [];
    for (const json of waiting) stream.send(json);
  }

  deliver(frame: Frame, relatedId?: JsonRpcId): void {
    if (relatedId !== undefined && relatedId === this.initializeId) {
      if (!isResponse(frame.msg) || frame.msg.id !== relatedId) return void (this.early ??= []).push([frame, relatedId]);
      this.initializeId = undefined;
      // A session whose initialize failed is of no use: end it (the client starts a new one).
      if (frame.msg.error) setImmediate(() => this.closeFailed('initialize failed'));
      void this.id; // minted now, with everything the answer taught (upstream session, protocol version)
      const early = this.early ?? [];
      this.early = undefined;
      for (const [f, id] of early) this.deliver(f, id);
    }
    const json = serialize(frame);
    const exchange = relatedId === undefined ? undefined : this.exchanges.get(relatedId);
    if (exchange?.channel.isOpen && (exchange.channel.canStream || isResponse(frame.msg))) {
      const answers = isResponse(frame.msg) && frame.msg.id === relatedId;
      exchange.channel.send(json, answers && exchange.waiting.size === 1);
      if (answers) this.answered(exchange, relatedId);
      return;
    }
    if (this.getStream?.isOpen) return this.getStream.send(json);
    for (const other of this.exchanges.values()) {
      if (other.channel.canStream && other.channel.isOpen && !other.channel.held) return other.channel.send(json, false);
    }
    if (this.backlog.length >= BACKLOG_LIMIT) {
      this.backlog.shift();
      this.log.warn({ session: this.logId }, 'no client stream open for server messages; dropped the oldest queued one');
    }
    this.backlog.push(json);
  }

  end(reason: ProxyError): void {
    if (this.ended) return;
    this.ended = true;
    for (const held of this.held.values()) {
      clearTimeout(held.timer);
      held.release();
    }
    this.held.clear();
    for (const exchange of new Set(this.exchanges.values())) {
      exchange.waiting.clear();
      exchange.channel.end();
    }
    this.exchanges.clear();
    this.getStream?.end();
    this.onEnd(this, reason);
  }

  /**
   * When the exchange's channel closes with requests unanswered: a resumable stream is held for
   * its client to come back, as a request in flight and with its events in the client's share of
   * listen.heldBytes; otherwise, or when it does not come back in time, or when the budget needs
   * its room, they are given up (cancelled upstream).
   */
  private watch(exchange: Exchange): void {
    const channel = exchange.channel;
    channel.onClose(() => {
      if (exchange.channel !== channel || exchange.waiting.size === 0) return;
      const keeping = this.keeping;
      if (!channel.events || !keeping || keeping.windowMs === 0 || this.ended || this.held.size >= MAX_HELD)
        return this.abandon(exchange, 'The client closed the response stream');
      const inFlight = keeping.inFlight();
      if (!inFlight)
        return this.abandon(
          exchange,
          'The client closed the response stream, and has as many requests in flight as it may (listen.perClient.inFlight)',
        );
      const events = channel.events;
      const overBudget =
        'The client did not come back for its response stream, and held more than the proxy keeps for it (listen.heldBytes)';
      let entry: HeldStream | undefined;
      const giveUp = (why: string) => {
        if (!entry || this.held.get(events.stream) !== entry) return;
        clearTimeout(entry.timer);
        this.held.delete(events.stream);
        entry.release();
        this.abandon(exchange, why);
      };
      const bytes = keeping.hold(events.size, () => giveUp(overBudget));
      const timer = setTimeout(
        () => giveUp('The client did not come back for its response stream (listen.resumableStreams.windowMs)'),
        keeping.windowMs,
      );
      timer.unref();
      entry = {
        exchange,
        events,
        timer,
        release: () => {
          bytes.release();
          inFlight();
        },
      };
      this.held.set(events.stream, entry);
      exchange.channel = new HeldChannel(events, (size) => bytes.resize(size));
      if (bytes.dropped) giveUp(overBudget); // too large to hold on its own
    });
  }

  private abandon(exchange: Exchange, why: string): void {
    for (const id of exchange.waiting) {
      this.exchanges.delete(id);
      this.relay.abandon(id, why);
      if (id === this.initializeId) this.closeFailed('The client gave up on initialize');
    }
    exchange.waiting.clear();
  }

  private closeFailed(why: string): void {
    void this.relay.close(new ProxyError('UPSTREAM_START_FAILED', why));
  }

  private answered(exchange: Exchange, id: JsonRpcId): void {
    exchange.waiting.delete(id);
    this.exchanges.delete(id);
    if (exchange.waiting.size === 0) exchange.channel.end();
  }
}
