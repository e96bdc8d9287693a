/**
 * Legacy sessions on the Streamable HTTP endpoint: `initialize` opens one (its id a sealed
 * session token minted with the answer), POSTs relay a session's messages, GET holds its stream,
 * DELETE ends it. A session another replica (or this one, before a restart) started is resumed
 * from its token; one whose upstream runs at another replica (a stdio upstream, or a session the
 * proxy emulates in front of a 2026-07-28 server) has its requests forwarded there, to the URL
 * its token names (../http/forward.ts). Sessions end when idle, past their maximum age, or at
 * shutdown; one that may go on at another replica keeps its upstream session. When a new session finds no room
 * (listen.maxSessions, or every upstream process taken), the least recently used idle one ends
 * to make room (./idle.ts); only when every session is busy is the new one refused.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Requester } from '../../core/context.js';
import type { HeldBytes } from '../../core/held-bytes.js';
import { duplicateId, type ClientSink, type RelaySession } from '../../core/relay.js';
import { ProxyError } from '../../jsonrpc/errors.js';
import { isRequest, type JsonRpcId } from '../../jsonrpc/message.js';
import { SSE_TYPE, acceptedTypes } from '../../mcp/media-type.js';
import { LEGACY_VERSIONS } from '../../mcp/eras.js';
import { noteExchange } from '../../ops/access-log.js';
import type { Metrics } from '../../ops/metrics.js';
import type { Sealer } from '../../sealing/sealer.js';
import { forwardTo, wasForwarded, type ForwardFailure, type Owner } from '../http/forward.js';
import { sendError } from '../http/errors.js';
import { limitKey } from '../http/client-key.js';
import type { ClientLimits } from '../http/limits.js';
import { parseEventId, resumableFor, type ResumeLimits } from '../http/resumable.js';
import { KEEPALIVE_MS, PostReply, SseStream, STREAM_AFTER_MS, takeOver } from '../http/replies.js';
import type { SlowReaderLimits } from '../http/reader-watch.js';
import type { LegacyEndpoint, Post } from '../http/server.js';
import { evictionCandidate, idleLimit, reapEvery, type IdleTimeouts } from './idle.js';
import { HttpSession } from './session.js';
import type { SessionClaims, SessionTokens } from './session-tokens.js';

export interface LegacySessionsOptions extends IdleTimeouts {
  maxSessions: number;
  /** Starts an upstream session for a new client session of `who`. */
  openSession(sink: ClientSink, log: Logger, who: Requester): RelaySession;
  /**
   * Goes on with a session another replica (or this one, before a restart) started, from its
   * token; absent when sessions cannot move (a stdio upstream, or no shared secret).
   */
  resumeSession?(sink: ClientSink, log: Logger, claims: SessionClaims, who: Requester): RelaySession | undefined;
  /** Why a new session could not have an upstream now (every stdio process taken), or undefined when it could. */
  upstreamFull(): ProxyError | undefined;
  /** Whether ending an idle session would make room upstream (not when its process could not even exit yet). */
  evictionHelps(): boolean;
  /** Counts evictions for /metrics. */
  counters: Pick<Metrics['counters'], 'sessionsEvicted'>;
  /** Session ids: sealed tokens naming this replica and its URL. */
  tokens: SessionTokens;
  /**
   * Forwards the requests of a session whose upstream runs at another replica there, with the
   * secret that seals the client's address for it and timeouts.requestMs (absent: replicas share no secret).
   */
  forwarding?: { sealer: Sealer; requestMs: number };
  limits: ClientLimits;
  slowReaders: SlowReaderLimits;
  /** POST streams of 2025-11-25 clients: numbered, and held for their client to resume (windowMs 0: not resumable). */
  resumableStreams: ResumeLimits;
  /** Where held streams' bytes are counted, per client and in total (listen.heldBytes). */
  held: HeldBytes;
  log: Logger;
}

/** What a replica holding a session may take beyond its own timers before the one forwarding to it gives up. */
const FORWARD_MARGIN_MS = 5_000;

const NOT_FOUND = 'Session not found: it ended or never existed; send initialize to start a new one';

export class LegacySessions implements LegacyEndpoint {
  private readonly sessions = new Map<string, HttpSession>();
  /** Sessions whose initialize has not been answered yet (no id). */
  private readonly starting = new Set<HttpSession>();
  private readonly reaper: NodeJS.Timeout;

  constructor(private readonly o: LegacySessionsOptions) {
    // Every tick: a keep-alive comment on each GET stream (so a vanished client's socket errors
    // out and its stream closes), then sessions past their maximum age (open streams and all)
    // and idle ones are ended.
    this.reaper = setInterval(() => this.reap(), reapEvery(o));
    this.reaper.unref();
  }

  get sessionCount(): number {
    return this.sessions.size + this.starting.size;
  }

  post(req: FastifyRequest, reply: FastifyReply, post: Post): void {
    const { frames } = post;
    const init = frames.find((f) => isRequest(f.msg) && f.msg.method === 'initialize');
    const ids: JsonRpcId[] = [];
    for (const f of frames) if (isRequest(f.msg)) ids.push(f.msg.id);
    const session = init ? this.initialize(req, reply, post) : this.sessionFor(req, reply, post.who, ids[0] ?? null);
    if (!session) return;
    noteExchange(req, undefined, { era: 'legacy', session: session.logId, tags: () => session.relay.tagsInEffect() });
    if (ids.length === 0) {
      for (const frame of frames) session.relay.fromClient(frame);
      reply.code(202).send();
      return;
    }
    const duplicate = ids.find((id, i) => session.isWaiting(id) || ids.indexOf(id) !== i);
    if (duplicate !== undefined) return void sendError(reply, duplicateId(duplicate), duplicate);
    takeOver(reply);
    const headers = () => ({ 'mcp-session-id': init ? this.track(session) : session.id });
    const resumable = init ? undefined : resumableFor(this.o.resumableStreams, req.headers['mcp-protocol-version']);
    const channel = new PostReply(reply.raw, headers, post.mode, post.batch, STREAM_AFTER_MS, this.o.slowReaders, {
      holdHeaders: init !== undefined,
      resumable,
    });
    session.addExchange(channel, ids, init !== undefined);
    for (const frame of frames) session.relay.fromClient(frame);
  }

  async get(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    if (!acceptedTypes(req.headers.accept).includes(SSE_TYPE)) {
      return sendError(reply, new ProxyError('NOT_ACCEPTABLE', 'Not Acceptable: the GET stream needs Accept: text/event-stream'));
    }
    const session = this.sessionFor(req, reply);
    if (!session) return reply;
    noteExchange(req, undefined, { era: 'legacy', session: session.logId });
    const lastEventId = req.headers['last-event-id'];
    const from = typeof lastEventId === 'string' ? parseEventId(lastEventId) : undefined;
    if (from && !(await session.canResume(from))) {
      return sendError(
        reply,
        new ProxyError(
          'BAD_REQUEST',
          'Bad Request: this stream cannot be resumed from that Last-Event-ID: ' +
            'it ended, its requests were given up (listen.resumableStreams.windowMs), ' +
            'or the events after it are no longer kept; send the requests again',
        ),
      );
    }
    takeOver(reply);
    const stream = new SseStream(reply.raw, { 'mcp-session-id': session.id }, this.o.slowReaders);
    if (from) session.resume(from, stream);
    else session.attachGetStream(stream);
    return undefined;
  }

  async delete(req: FastifyRequest, reply: FastifyReply): Promise<unknown> {
    const session = this.sessionFor(req, reply);
    if (!session) return reply;
    noteExchange(req, undefined, { era: 'legacy', session: session.logId });
    await session.relay.close(new ProxyError('CLIENT_GONE', 'The client ended the session'));
    return reply.code(200).send();
  }

  async close(): Promise<void> {
    clearInterval(this.reaper);
    const reason = new ProxyError('SHUTTING_DOWN', 'The proxy is shutting down');
    await Promise.all([
      ...[...this.sessions.values()].map((s) => this.letGo(s, reason)),
      ...[...this.starting].map((s) => s.relay.close(reason)),
    ]);
  }

  /** A new session for an `initialize` POST, or undefined once the refusal is sent. */
  private initialize(req: FastifyRequest, reply: FastifyReply, { frames, who }: Post): HttpSession | undefined {
    const refused = (err: ProxyError) => void sendError(reply, err);
    if (frames.length > 1) return refused(new ProxyError('BAD_REQUEST', 'Invalid Request: initialize must be sent alone'));
    if (req.headers['mcp-session-id'])
      return refused(new ProxyError('BAD_REQUEST', 'Invalid Request: this session is already initialized'));
    if (!this.o.limits.openSession(who.client)) {
      this.o.log.warn(
        { client: who.client, limit: this.o.limits.config.sessions },
        'per-client session limit reached; refusing initialize',
      );
      return refused(
        new ProxyError(
          'RATE_LIMITED',
          `Too many sessions for this client (limit ${this.o.limits.config.sessions}, ` +
            'listen.perClient.sessions); end one (DELETE) or wait for it to go idle',
        ),
      );
    }
    const full = this.makeRoom();
    if (full) {
      this.o.limits.sessionEnded(who.client);
      this.o.log.warn(
        { sessions: this.sessionCount, why: full.message },
        'no room for a new session and none idle to end; refusing initialize',
      );
      return refused(full);
    }
    try {
      const session = this.newSession(who);
      session.relay = this.o.openSession(session, this.o.log.child({ session: session.logId }), who);
      this.starting.add(session);
      this.o.log.info({ session: session.logId, sessions: this.sessionCount }, 'session started');
      return session;
    } catch (err) {
      this.o.limits.sessionEnded(who.client);
      this.o.log.error({ err: (err as Error).message }, 'could not open a session');
      return refused(new ProxyError('TOO_MANY_SESSIONS', `Could not start a session: ${(err as Error).message}`));
    }
  }

  /**
   * Finds the request's session (resuming it from its token if it moved here), or returns
   * undefined once the request is forwarded to the replica holding it (`id`: the request that
   * replica's failure answers) or answered 400/403/404.
   */
  private sessionFor(
    req: FastifyRequest,
    reply: FastifyReply,
    who: Requester = { principal: req.principal, client: limitKey(req) },
    id: JsonRpcId | null = null,
  ): HttpSession | undefined {
    const token = req.headers['mcp-session-id'];
    const refused = (err: ProxyError) => void sendError(reply, err);
    if (typeof token !== 'string' || token === '')
      return refused(new ProxyError('BAD_REQUEST', 'Bad Request: Mcp-Session-Id header is required'));
    const version = req.headers['mcp-protocol-version'];
    if (typeof version === 'string' && !LEGACY_VERSIONS.includes(version)) {
      return refused(
        new ProxyError(
          'BAD_REQUEST',
          `Bad Request: unsupported MCP-Protocol-Version "${version}" (supported: ${LEGACY_VERSIONS.join(', ')})`,
        ),
      );
    }
    const session = this.sessions.get(token) ?? this.resume(token, who, wasForwarded(req));
    if (session instanceof ProxyError) return refused(session);
    if (!(session instanceof HttpSession)) return void this.forward(session, req, reply, id);
    const expired = this.expireIfOld(session);
    if (expired) return refused(expired);
    if (session.principal !== who.principal) {
      this.o.log.warn(
        { principal: who.principal },
        'a session id was presented by another principal than the one it was issued to; refused',
      );
      return refused(notYours());
    }
    return session;
  }

  /**
   * A session started elsewhere (another replica, or this one before a restart), rebuilt from its
   * token; or the replica to forward to, when the session's upstream runs there.
   */
  private resume(id: string, who: Requester, forwarded: boolean): HttpSession | ProxyError | Owner {
    const claims = this.o.tokens.open(id);
    if (!claims) return new ProxyError('SESSION_NOT_FOUND', NOT_FOUND);
    if (claims.principal !== who.principal) return notYours();
    // The token says when it was issued: one past the maximum age is refused here, whoever ended it.
    if (Date.now() - claims.issued * 1000 > this.o.sessionMaxAgeMs) return this.sessionExpired();
    if (!this.o.resumeSession || !claims.upstream?.id) {
      if (claims.replica === this.o.tokens.replica) return new ProxyError('SESSION_NOT_FOUND', NOT_FOUND);
      const { url } = claims;
      // Forwarded once at most: a request another replica forwarded here (or a client says so) stays here.
      if (this.o.forwarding && url && url !== this.o.tokens.url() && !forwarded) return { replica: claims.replica, url };
      return new ProxyError(
        'SESSION_NOT_FOUND',
        `Session not found on this replica: it lives on replica "${claims.replica}" (its upstream runs there), ` +
          (forwarded
            ? 'and a request forwarded by another replica is not forwarded again; '
            : url
              ? "but the URL its token names (replicas.url) is this replica's: give every replica its own; "
              : 'whose URL it did not know (replicas.url): set replicas.url on every replica, or route requests by the ' +
                'Mcp-Session-Id header (sticky sessions); ') +
          'send initialize to start a new one',
        { replica: claims.replica },
      );
    }
    if (!this.o.limits.openSession(who.client))
      return new ProxyError('RATE_LIMITED', `Too many sessions for this client (limit ${this.o.limits.config.sessions})`);
    const full = this.makeRoom();
    if (full) {
      this.o.limits.sessionEnded(who.client);
      return full;
    }
    const session = this.newSession(who, id);
    session.issuedAt = claims.issued * 1000;
    const relay = this.o.resumeSession(session, this.o.log.child({ session: session.logId }), claims, who);
    if (!relay) {
      this.o.limits.sessionEnded(who.client);
      return new ProxyError('SESSION_NOT_FOUND', NOT_FOUND);
    }
    session.relay = relay;
    this.sessions.set(id, session);
    this.o.log.info({ session: session.logId, from: claims.replica }, 'session resumed from its token');
    return session;
  }

  /** Sends the request to the replica holding its session; the client hears from that replica, or why it could not. */
  private forward(owner: Owner, req: FastifyRequest, reply: FastifyReply, id: JsonRpcId | null): Promise<void> {
    const { sealer, requestMs } = this.o.forwarding!;
    // An answer begins within requestMs (a stream at once); once begun, a stream has a keep-alive every KEEPALIVE_MS at most.
    const wait = { beginMs: requestMs + FORWARD_MARGIN_MS, gapMs: Math.max(requestMs, 2 * KEEPALIVE_MS) + FORWARD_MARGIN_MS };
    noteExchange(req, undefined, { era: 'legacy', session: `at ${owner.replica}` });
    const failed = (why: ForwardFailure, detail: string) =>
      why === 'timeout'
        ? new ProxyError(
            'REQUEST_TIMEOUT',
            `The replica this session lives on ("${owner.replica}") did not answer: ${detail} ` +
              '(timeouts.requestMs and 5 s); try again, or send initialize to start a new session',
            { replica: owner.replica },
          )
        : new ProxyError(
            'SESSION_NOT_FOUND',
            `Session not found: it lives on replica "${owner.replica}" (its upstream runs there), which cannot be ` +
              `reached (${detail}); send initialize to start a new one`,
            { replica: owner.replica },
          );
    return forwardTo(owner, req, reply, { replica: this.o.tokens.replica, sealer, id, era: 'legacy', wait, failed, log: this.o.log });
  }

  private newSession(who: Requester, id?: string): HttpSession {
    const ended = (s: HttpSession, reason: ProxyError) => {
      this.starting.delete(s);
      this.o.limits.sessionEnded(who.client);
      if (!s.identified) return void s.relay.close(reason);
      this.sessions.delete(s.id);
      // An expired token is refused by its issue time; these ends are remembered instead.
      if (reason.code === 'CLIENT_GONE' || reason.code === 'UPSTREAM_SESSION_EXPIRED') this.o.tokens.markEnded(s.id);
      this.o.log.info({ session: s.logId, reason: reason.code }, 'session ended');
      void (reason.code === 'SHUTTING_DOWN' || reason.code === 'SESSION_IDLE' ? this.letGo(s, reason) : s.relay.close(reason));
    };
    const mint = (s: HttpSession) => {
      const { upstream, negotiation } = s.relay.describe();
      // The session's age counts from what its token says, so this replica and any other agree on it.
      const issued = Math.floor(Date.now() / 1000);
      s.issuedAt = issued * 1000;
      return this.o.tokens.mint({ principal: who.principal, upstream, negotiation }, issued);
    };
    const keeping = {
      windowMs: this.o.resumableStreams.windowMs,
      inFlight: () => this.o.limits.begin(who.client),
      hold: (bytes: number, drop: () => void) => this.o.held.hold(who.client, 'stream', bytes, drop),
    };
    return new HttpSession(this.o.log, ended, mint, who.principal, id, keeping);
  }

  /** The initialize answer goes out: the session has its id now. */
  private track(session: HttpSession): string {
    this.sessions.set(session.id, session);
    this.starting.delete(session);
    return session.id;
  }

  /** Ends a session older than timeouts.sessionMaxAgeMs (its streams too); the reason, or undefined when it is young enough. */
  private expireIfOld(session: HttpSession): ProxyError | undefined {
    if (Date.now() - session.issuedAt <= this.o.sessionMaxAgeMs) return undefined;
    const expired = this.sessionExpired();
    void session.relay.close(expired);
    return expired;
  }

  private sessionExpired(): ProxyError {
    return new ProxyError(
      'SESSION_EXPIRED',
      `Session expired: sessions last at most ${Math.round(this.o.sessionMaxAgeMs / 60_000)} ` +
        'minutes (timeouts.sessionMaxAgeMs); send initialize to start a new one',
    );
  }

  /**
   * Undefined when one more session fits (listen.maxSessions, and an upstream for it), after
   * ending the least recently used idle session (any principal's: see ./idle.ts) if that was
   * needed; else why it does not. Callers check the per-client session limit first.
   */
  private makeRoom(): ProxyError | undefined {
    const full = () =>
      this.sessionCount >= this.o.maxSessions
        ? new ProxyError('TOO_MANY_SESSIONS', `Too many sessions (limit ${this.o.maxSessions}, listen.maxSessions)`)
        : this.o.upstreamFull();
    const refused = full();
    // Ending a session that cannot make room would end it for nothing, again at every retry.
    if (!refused || !this.o.evictionHelps()) return refused;
    const idle = evictionCandidate(this.sessions.values());
    if (!idle)
      return new ProxyError(
        refused.code,
        `${refused.message}, and every session is busy (a request in flight or ` +
          'an open stream), so none was ended to make room; try again when one ends',
      );
    this.evict(idle);
    return full();
  }

  private evict(session: HttpSession): void {
    const now = Date.now();
    this.o.counters.sessionsEvicted++;
    // Its client gets 404 and starts again; where sessions move between replicas, it goes on from its token instead.
    this.o.log.info(
      { session: session.logId, ageMs: now - session.issuedAt, idleMs: now - session.lastUsed },
      'no room for a new session: ended the least recently used idle one',
    );
    void this.letGo(session, new ProxyError('SESSION_IDLE', 'The session was idle and its place was needed for a new one'));
  }

  /** Ends a session here (idle, shutdown). One that may go on at another replica keeps its upstream session. */
  private letGo(session: HttpSession, reason: ProxyError): Promise<void> {
    return this.o.resumeSession ? session.relay.detach(reason) : session.relay.close(reason);
  }

  private reap(): void {
    const now = Date.now();
    for (const session of this.sessions.values()) {
      if (this.expireIfOld(session)) {
        this.o.log.info({ session: session.logId }, 'session reached timeouts.sessionMaxAgeMs; ended');
        continue;
      }
      session.heartbeat();
      if (!session.isQuiet || now - session.lastUsed <= idleLimit(session, this.o)) continue;
      const why = session.hasListened ? 'timeouts.sessionIdleMs' : 'timeouts.sessionIdleNoStreamMs: its client never opened a GET stream';
      this.o.log.info({ session: session.logId, idleMs: now - session.lastUsed }, `session idle (${why}); ending it here`);
      void this.letGo(session, new ProxyError('SESSION_IDLE', 'The session was idle too long'));
    }
  }
}

/** The refusal of a session id presented by someone it was not issued to. */
function notYours(): ProxyError {
  return new ProxyError('FORBIDDEN', 'This session was issued to another client identity; send initialize to start your own');
}
