/**
 * Resumable POST streams (the 2025-11-25 transport): a stream's events are numbered and kept, so
 * that a client that lost the stream can resume it with GET and `Last-Event-ID`. An event id is
 * `<stream>-<n>`; event 0 is the priming event (an id, the reconnection delay, no data). A log
 * keeps at most `maxBytes` of events: the oldest go first (an event larger than that is not kept
 * at all), and a resume from before them is refused rather than served with a gap. While the
 * client is away its requests' answers go to a held channel (logged only, its bytes counted in
 * listen.heldBytes); a GET that resumes the stream carries on from the log.
 */
import { randomBytes } from 'node:crypto';
import type { Wire } from '../../jsonrpc/message.js';
import { LEGACY_VERSIONS } from '../../mcp/eras.js';
import { sseEvent, type ReplyChannel, type SseStream } from './replies.js';

/** How resumable streams behave (listen.resumableStreams). */
export interface ResumeLimits {
  /** How long a POST stream's unanswered requests wait for their client to come back. */
  windowMs: number;
  /** The reconnection delay (`retry:`) clients are told. */
  retryMs: number;
  /** Most bytes of events kept for one stream. */
  maxBytes: number;
}

interface LoggedEvent {
  seq: number;
  pieces: Wire[];
  bytes: number;
}

export class EventLog {
  private name: string | undefined;
  private readonly events: LoggedEvent[] = [];
  private seq = 0;
  private bytes = 0;
  /** Events up to this one are no longer kept. */
  private droppedThrough = 0;

  constructor(private readonly maxBytes: number) {}

  /**
   * The stream's name in its event ids (random: a client cannot guess another's), drawn when first
   * needed: most POST replies end as plain JSON, and drawing it costs tens of µs.
   */
  get stream(): string {
    return (this.name ??= randomBytes(9).toString('base64url'));
  }

  /** Bytes of the events kept. */
  get size(): number {
    return this.bytes;
  }

  /** The priming event: an id to resume from and the reconnection delay, before any message. */
  priming(retryMs: number): string {
    return `id: ${this.stream}-0\nretry: ${retryMs}\ndata: \n\n`;
  }

  /** An event's pieces with its id in front, kept for a resume. */
  record(pieces: Wire[]): Wire[] {
    const seq = ++this.seq;
    const numbered = [`id: ${this.stream}-${seq}\n`, ...pieces];
    let size = 0;
    for (const piece of numbered) size += typeof piece === 'string' ? Buffer.byteLength(piece) : piece.length;
    this.events.push({ seq, pieces: numbered, bytes: size });
    this.bytes += size;
    while (this.bytes > this.maxBytes && this.events.length > 0) {
      const old = this.events.shift()!;
      this.bytes -= old.bytes;
      this.droppedThrough = old.seq;
    }
    return numbered;
  }

  /** The events after `seq` (the last one the client saw), or undefined when some of them are no longer kept. */
  after(seq: number): Wire[][] | undefined {
    if (seq < this.droppedThrough) return undefined;
    return this.events.filter((e) => e.seq > seq).map((e) => e.pieces);
  }
}

/**
 * What makes a POST reply resumable for a client on `version`, or undefined: resumable streams came
 * with 2025-11-25, and earlier clients cannot read the priming event (an event without data).
 */
export function resumableFor(limits: ResumeLimits, version: unknown): { events: EventLog; retryMs: number } | undefined {
  if (limits.windowMs === 0 || typeof version !== 'string' || version < '2025-11-25' || !LEGACY_VERSIONS.includes(version))
    return undefined;
  return { events: new EventLog(limits.maxBytes), retryMs: limits.retryMs };
}

/** A `Last-Event-ID` as this proxy writes them: the stream and the number, or undefined. */
export function parseEventId(id: string): { stream: string; seq: number } | undefined {
  const match = /^([A-Za-z0-9_-]{12})-(\d{1,9})$/.exec(id);
  return match ? { stream: match[1], seq: Number(match[2]) } : undefined;
}

/** Stands in for a stream whose client went away: what comes for it is logged for the resume. */
export class HeldChannel implements ReplyChannel {
  readonly isOpen = true;
  readonly canStream = true;
  readonly held = true;

  /** `logged`: the log's size after each event (its bytes are held for an absent client). */
  constructor(
    readonly events: EventLog,
    private readonly logged: (bytes: number) => void = () => undefined,
  ) {}

  send(json: Wire): void {
    this.events.record(sseEvent(json));
    this.logged(this.events.size);
  }

  end(): void {}

  onClose(): void {}
}

/** A resumed stream: a GET that carries on a POST stream's events, numbered as before; it ends with the last answer. */
export class ResumedChannel implements ReplyChannel {
  readonly canStream = true;

  constructor(
    private readonly stream: SseStream,
    readonly events: EventLog,
  ) {}

  get isOpen(): boolean {
    return this.stream.isOpen;
  }

  send(json: Wire, last: boolean): void {
    this.stream.sendEvent(this.events.record(sseEvent(json)));
    if (last) this.stream.end();
  }

  end(): void {
    this.stream.end();
  }

  onClose(fn: () => void): void {
    this.stream.onClose(fn);
  }
}
