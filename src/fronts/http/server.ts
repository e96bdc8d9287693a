/**
 * The Streamable HTTP front: POST/GET/DELETE on the MCP path (legacy sessions issued at
 * initialize; modern requests handed to src/fronts/modern), authentication, Origin/Host checks,
 * CORS, per-client limits, body and batch limits, and /healthz, /readyz, /metrics and the OAuth
 * metadata. Each session's routing lives in HttpSession; the relay itself in RelaySession.
 */
import cors from '@fastify/cors';
import rateLimit from '@fastify/rate-limit';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../../config/schema.js';
import { ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { errorResponse, isRequest, parsePayload, type Frame, type JsonRpcId, type JsonRpcRequest } from '../../jsonrpc/message.js';
import { LEGACY_VERSIONS } from '../../mcp/eras.js';
import { withVariantHeader } from '../../extensions/server-variants/variants.js';
import { duplicateId, type ClientSink, type RelaySession } from '../../core/relay.js';
import type { ModernCore } from '../modern/core.js';
import { isModernPost, serveModernPost } from '../modern/http.js';
import { hostGuard, isLoopbackAddress, originGuard, validHost } from './guards.js';
import { challenge, resourceMetadata, type AuthConfig, type AuthOutcome, type Authenticator } from './auth.js';
import { capConnections, refusalOf, timeoutOptions } from './connections.js';
import { ClientLimits, FailureCounter, limitKey, trustedAddress } from './limits.js';
import { noteExchange, registerAccessLog } from '../../ops/access-log.js';
import type { ReadinessReport } from '../../ops/readiness.js';
import { traceContextOf, withTraceContext } from '../../ops/trace-context.js';
import type { Tracing } from '../../ops/tracing.js';
import type { Metrics, RefusalReason } from '../../ops/metrics.js';
import { HttpSession } from '../legacy/session.js';
import type { SessionClaims, SessionTokens } from '../legacy/session-tokens.js';
import { PostReply, SseStream, takeOver } from './replies.js';

/** In `auto` mode, a POST whose answer takes longer than this becomes an SSE stream. */
const STREAM_AFTER_MS = 100;


/** Who a client session belongs to: the principal, and what per-client limits count (the principal, or the address). */
export interface SessionOwner {
  principal: string;
  client: string;
}

export interface HttpDownstreamOptions {
  listen: Config['listen'];
  /** Concurrent sessions per client (listen.perClient.sessions, resolved for the upstream). */
  sessionsPerClient: number;
  sessionIdleMs: number;
  /** Sessions older than this are ended (404). */
  sessionMaxAgeMs: number;
  /** Starts an upstream session for a new client session of `who`. */
  openSession(sink: ClientSink, log: Logger, who: SessionOwner): RelaySession;
  /** Session ids: sealed tokens naming this replica. */
  tokens: SessionTokens;
  /**
   * Goes on with a session another replica (or this one, before a restart) started, from its
   * token; absent when sessions cannot move (a stdio upstream, or no shared secret).
   */
  resumeSession?(sink: ClientSink, log: Logger, claims: SessionClaims, who: SessionOwner): RelaySession | undefined;
  /** This replica's URL as other replicas reach it (its host is accepted beside allowedHosts). */
  replicaUrl?(): string | undefined;
  /** Spans for each request (absent: tracing off). */
  tracing?: Tracing;
  /** Who may use the MCP endpoint (see src/fronts/auth.ts). */
  auth: { authenticator: Authenticator; config: AuthConfig };
  /** Serves modern (2026-07-28) requests; absent = legacy clients only. */
  modern?: ModernCore;
  /** What /healthz and /readyz say about the upstream (masked). */
  health(): Record<string, unknown>;
  /** Whether the upstream is usable now (/readyz: 200 or 503). */
  readiness(): Promise<ReadinessReport>;
  /** /metrics (Prometheus format), and where request durations are observed. */
  metrics: Metrics;
  log: Logger;
}

export interface HttpDownstream {
  url: string;
  sessionCount(): number;
  /** Stops taking new sessions and requests (503 + Retry-After, /readyz 503); resolves when nothing is in flight or after `graceMs`. */
  drain(graceMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startHttpDownstream(opts: HttpDownstreamOptions): Promise<HttpDownstream> {
  const { listen, log } = opts;
  const sessions = new Map<string, HttpSession>();
  /** Sessions whose initialize has not been answered yet (no id). */
  const starting = new Set<HttpSession>();
  // Origins allowed for CORS pass the DNS-rebinding check too.
  const originOk = originGuard(listen.allowedOrigins, listen.cors?.origins);
  const listedHostOk = hostGuard(listen.allowedHosts);
  // Other replicas reach this one by its own address (forwarded retries); known once listening.
  const hostOk = (host: string | undefined) => listedHostOk(host) || (host !== undefined && validHost(host) && host.toLowerCase() === selfHost());
  let self: { url?: string; host?: string } = {};
  const selfHost = () => {
    const url = opts.replicaUrl?.();
    if (url !== self.url) self = { url, host: url ? new URL(url).host.toLowerCase() : undefined };
    return self.host;
  };
  const slowReaders = { ...listen.slowReaders, log };
  const payloadLimits = { maxBatch: listen.maxBatchSize, maxDepth: listen.maxJsonDepth };
  const app = Fastify({ bodyLimit: listen.maxBodyBytes, forceCloseConnections: true, logger: false, trustProxy: listen.trustProxy, ...timeoutOptions(listen.connections) });
  const connections = capConnections(app.server, listen.connections, trustedAddress(listen.trustProxy), log, (reason) => opts.metrics.refused(reason));
  opts.metrics.countConnections(connections.open);

  /** A request refused by a limit: counted in /metrics and named on its access-log line (no line of its own: refusals come in floods). */
  const refuse = (req: FastifyRequest, reason: RefusalReason) => {
    opts.metrics.refused(reason);
    noteExchange(req, undefined, { refused: reason });
  };

  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));

  app.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, _req, reply) => {
    const status = err.statusCode ?? 500;
    if (status >= 500) {
      log.error({ err: err.message }, 'HTTP handler failed');
      return reply.code(500).type('application/json').send(JSON.stringify(errorResponse(null, toJsonRpcError(err))));
    }
    rpcError(
      reply,
      status === 429 ? new ProxyError('RATE_LIMITED', err.message)
      : err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? new ProxyError('BODY_TOO_LARGE', `Request body is larger than the limit of ${listen.maxBodyBytes} bytes`)
      : err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? new ProxyError('UNSUPPORTED_MEDIA_TYPE', 'Content-Type must be application/json')
      : new ProxyError('BAD_REQUEST', err.message),
    );
  });

  app.addHook('onRequest', (req, reply, done) => {
    const refused = refusalOf(req.raw.socket);
    if (refused) return rpcError(reply, refused);
    // DNS-rebinding protection guards the MCP endpoint; probes may name the pod's IP as Host.
    const route = req.routeOptions.url;
    if (route !== listen.path && !route?.startsWith('/.well-known/')) return done();
    if (!hostOk(req.headers.host)) return rpcError(reply, new ProxyError('FORBIDDEN', `Host header "${req.headers.host ?? ''}" is not allowed`));
    if (!originOk(req.headers.origin)) return rpcError(reply, new ProxyError('FORBIDDEN', `Origin "${req.headers.origin}" is not allowed`));
    done();
  });

  registerAccessLog(app, listen.path, log, (method, era, status, seconds) => opts.metrics.observeRequest(method, era, status, seconds));
  if (listen.cors) {
    await app.register(cors, {
      origin: listen.cors.origins.includes('*') ? '*' : listen.cors.origins,
      methods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
      // Request headers are reflected from the preflight (Mcp-Param-* names are per tool).
      exposedHeaders: ['mcp-session-id', 'mcp-protocol-version', 'www-authenticate', 'retry-after'],
      maxAge: listen.cors.maxAgeSeconds,
    });
  }
  const { authenticator, config: authConfig } = opts.auth;
  app.decorateRequest('principal', '');
  /** The resource identifier: configured, or the endpoint as this request reached it (its Host was checked). */
  const resourceOf = (req: FastifyRequest): URL => {
    try {
      return new URL(authConfig.resource ?? `${req.protocol}://${req.headers.host}${listen.path}`);
    } catch {
      return new URL(listen.path, `http://127.0.0.1:${listen.port}`);
    }
  };
  /** The metadata document's URL for that resource (RFC 9728 §3.1: the path goes after the well-known part). */
  const metadataUrl = (req: FastifyRequest) => {
    const resource = resourceOf(req);
    return `${resource.origin}/.well-known/oauth-protected-resource${resource.pathname}`;
  };
  /** Failed authentication per client address, for the endpoint and the probes alike. */
  const failures = new FailureCounter(authConfig.failuresPerAddress);
  /**
   * Authenticates with the guessing budget of the request's address: a blocked address gets
   * nothing checked but a static token (as cheap as the refusal); each attempt is counted before
   * it is verified (concurrent guesses cannot all pass the check) and forgiven when it succeeds.
   */
  const authenticate = async (req: FastifyRequest): Promise<AuthOutcome | { blocked: number }> => {
    const wait = failures.blockedFor(req.ip);
    if (wait > 0) {
      const known = authenticator.staticToken(req.headers);
      return known ? { principal: known } : { blocked: wait };
    }
    const attempt = failures.note(req.ip);
    const outcome = await authenticator.authenticate(req.headers);
    // No credential is not a guess; neither is a key set that cannot be fetched.
    if ('principal' in outcome || outcome.error === 'invalid_request' || outcome.status === 503) attempt.forgive();
    return outcome;
  };
  if (authenticator.enabled) {
    app.addHook('onRequest', async (req, reply) => {
      // The matched route, not the raw URL: the router decodes escapes (/mc%70 is /mcp).
      if (req.routeOptions.url !== listen.path) return;
      const outcome = await authenticate(req);
      if ('blocked' in outcome) {
        refuse(req, 'auth_failures');
        reply.header('retry-after', String(outcome.blocked));
        return rpcError(reply, new ProxyError('RATE_LIMITED', `Too many failed authentication attempts from this address (auth.failuresPerAddress: ${authConfig.failuresPerAddress} per minute); retry after ${outcome.blocked} s`));
      }
      if ('principal' in outcome) {
        req.principal = outcome.principal;
        return;
      }
      noteExchange(req, undefined, { refused: `${outcome.error}${outcome.reason ? `: ${outcome.reason}` : ''}` });
      if (outcome.status === 503) {
        log.warn({ err: outcome.reason }, 'tokens cannot be checked: the JWKS is unavailable; answering 503');
        return rpcError(reply, new ProxyError('AUTH_UNAVAILABLE', outcome.description));
      }
      const scopes = authConfig.jwt?.requiredScopes ?? [];
      reply.header('www-authenticate', challenge(outcome, metadataUrl(req), scopes));
      return rpcError(reply, new ProxyError(outcome.status === 403 ? 'FORBIDDEN' : 'UNAUTHORIZED', outcome.description));
    });
    const metadata = async (req: FastifyRequest, reply: FastifyReply) => {
      // Derived from the request's Host unless configured: never stored by shared caches.
      reply.header('cache-control', authConfig.resource ? 'max-age=300' : 'private, max-age=300').send(resourceMetadata(authConfig, resourceOf(req).href));
    };
    app.get('/.well-known/oauth-protected-resource', metadata);
    app.get(`/.well-known/oauth-protected-resource${listen.path}`, metadata);
  }

  const limits = new ClientLimits({ ...listen.perClient, sessions: opts.sessionsPerClient });
  /** POSTs being answered, and who waits for the last of them to finish while draining. */
  let inFlight = 0;
  let draining: { idle: () => void } | undefined;
  // A POST counts from before its body is read (after the rate limit), so that bodies trickling in count too.
  app.addHook('preParsing', (req, reply, payload, done) => {
    if (req.method !== 'POST' || req.routeOptions.url !== listen.path) return done(null, payload);
    const release = limits.begin(limitKey(req));
    if (!release) {
      refuse(req, 'in_flight');
      return rpcError(reply, new ProxyError('RATE_LIMITED', `Too many requests in flight: at most ${listen.perClient.inFlight} per client at once`));
    }
    inFlight++;
    // Every response closes, also one still queued behind pipelined others when its socket dies (tested).
    reply.raw.once('close', () => {
      release();
      if (--inFlight === 0) draining?.idle();
    });
    done(null, payload);
  });
  await app.register(rateLimit, {
    global: false,
    hook: 'onRequest', // after authentication (the key is the principal), before the body is read
    max: listen.perClient.requestsPerSecond,
    timeWindow: 1000,
    keyGenerator: limitKey,
    addHeadersOnExceeding: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false },
    addHeaders: { 'x-ratelimit-limit': false, 'x-ratelimit-remaining': false, 'x-ratelimit-reset': false, 'retry-after': true },
    onExceeded: (req) => refuse(req, 'rate'),
    errorResponseBuilder: (_req, ctx) => ({ statusCode: 429, message: `Too many requests: at most ${ctx.max} per second per client; retry after ${ctx.after}` }),
  });
  const limited = { config: { rateLimit: {} } };

  app.get('/metrics', async (_req, reply) => {
    reply.type(opts.metrics.registry.contentType).send(await opts.metrics.render());
  });

  /**
   * Whether a probe may see details (the upstream, the cause of unreadiness): a caller on this
   * machine naming an allowed Host (not a page rebinding a name to 127.0.0.1), or one with a valid
   * credential. Orchestrators' probes get the status alone, which is all they act on.
   */
  const mayInspect = async (req: FastifyRequest): Promise<boolean> => {
    const forwarded = req.headers['x-forwarded-for'] !== undefined && !listen.trustProxy;
    if (!forwarded && isLoopbackAddress(req.ip) && hostOk(req.headers.host)) return true;
    return authenticator.enabled && 'principal' in (await authenticate(req));
  };

  // Liveness: the process serves. Readiness: the upstream is usable now (cached; see src/ops/readiness.ts).
  app.get('/healthz', async (req, reply) => {
    if (!(await mayInspect(req))) return reply.send({ status: 'ok' });
    reply.send({ status: 'ok', upstream: opts.health(), sessions: sessions.size + starting.size });
  });
  app.get('/readyz', async (req, reply) => {
    const details = await mayInspect(req);
    if (draining) return reply.code(503).send({ status: 'draining', ready: false, ...(details ? { cause: 'the proxy is shutting down' } : {}) });
    const report = await opts.readiness();
    const status = report.ready ? 'ready' : 'unready';
    reply.code(report.ready ? 200 : 503).send(details ? { status, ...report, upstream: opts.health() } : { status, ready: report.ready });
  });

  /** Finds the request's session (resuming it from its token if it moved here), or answers 400/403/404 and returns undefined. */
  const sessionFor = (req: FastifyRequest, reply: FastifyReply): HttpSession | undefined => {
    const id = req.headers['mcp-session-id'];
    if (typeof id !== 'string' || id === '') {
      rpcError(reply, new ProxyError('BAD_REQUEST', 'Bad Request: Mcp-Session-Id header is required'));
      return undefined;
    }
    const version = req.headers['mcp-protocol-version'];
    if (typeof version === 'string' && !LEGACY_VERSIONS.includes(version)) {
      rpcError(reply, new ProxyError('BAD_REQUEST', `Bad Request: unsupported MCP-Protocol-Version "${version}" (supported: ${LEGACY_VERSIONS.join(', ')})`));
      return undefined;
    }
    const principal = principalOf(req);
    const session = sessions.get(id) ?? resume(id, principal, limitKey(req));
    if (session instanceof ProxyError) {
      rpcError(reply, session);
      return undefined;
    }
    const expired = expireIfOld(session);
    if (expired) {
      rpcError(reply, expired);
      return undefined;
    }
    if (session.principal !== principal) {
      log.warn({ principal }, 'a session id was presented by another principal than the one it was issued to; refused');
      rpcError(reply, notYours());
      return undefined;
    }
    return session;
  };

  /** Ends a session older than timeouts.sessionMaxAgeMs (its streams too); the reason, or undefined when it is young enough. */
  const expireIfOld = (session: HttpSession): ProxyError | undefined => {
    if (Date.now() - session.issuedAt <= opts.sessionMaxAgeMs) return undefined;
    const expired = sessionExpired();
    void session.relay.close(expired);
    return expired;
  };
  const sessionExpired = () =>
    new ProxyError('SESSION_EXPIRED', `Session expired: sessions last at most ${Math.round(opts.sessionMaxAgeMs / 60_000)} minutes (timeouts.sessionMaxAgeMs); send initialize to start a new one`);

  /** Ends a session here (idle, shutdown). One that may go on at another replica keeps its upstream session. */
  const letGo = (session: HttpSession, reason: ProxyError) => (opts.resumeSession ? session.relay.detach(reason) : session.relay.close(reason));

  const track = (session: HttpSession) => {
    sessions.set(session.id, session);
    starting.delete(session);
    return session.id;
  };

  const newSession = (principal: string, owner: string, id?: string): HttpSession =>
    new HttpSession(
      log,
      (s, reason) => {
        starting.delete(s);
        limits.sessionEnded(owner);
        if (!s.identified) return void s.relay.close(reason);
        sessions.delete(s.id);
        // An expired token is refused by its issue time; these ends are remembered instead.
        if (reason.code === 'CLIENT_GONE' || reason.code === 'UPSTREAM_SESSION_EXPIRED') opts.tokens.markEnded(s.id);
        log.info({ session: s.logId, reason: reason.code }, 'session ended');
        void (reason.code === 'SHUTTING_DOWN' || reason.code === 'SESSION_IDLE' ? letGo(s, reason) : s.relay.close(reason));
      },
      (s) => {
        const { upstream, negotiation } = s.relay.describe();
        return opts.tokens.mint({ principal, upstream, negotiation });
      },
      principal,
      id,
    );

  const openSession = (principal: string, owner: string): HttpSession => {
    const session = newSession(principal, owner);
    session.relay = opts.openSession(session, log.child({ session: session.logId }), { principal, client: owner });
    starting.add(session);
    log.info({ session: session.logId, sessions: sessions.size + starting.size }, 'session started');
    return session;
  };

  /** A session started elsewhere (another replica, or this one before a restart), rebuilt from its token. */
  const resume = (id: string, principal: string, owner: string): HttpSession | ProxyError => {
    const notFound = 'Session not found: it ended or never existed; send initialize to start a new one';
    const claims = opts.tokens.open(id);
    if (!claims) return new ProxyError('SESSION_NOT_FOUND', notFound);
    if (claims.principal !== principal) return notYours();
    // The token says when it was issued: one past the maximum age is refused here, whoever ended it.
    if (Date.now() - claims.issued * 1000 > opts.sessionMaxAgeMs) return sessionExpired();
    if (!opts.resumeSession || !claims.upstream?.id) {
      if (claims.replica === opts.tokens.replica) return new ProxyError('SESSION_NOT_FOUND', notFound);
      return new ProxyError(
        'SESSION_NOT_FOUND',
        `Session not found on this replica: it lives on replica "${claims.replica}" (its upstream runs there); route requests by the Mcp-Session-Id header (sticky sessions), or send initialize to start a new one`,
        { replica: claims.replica },
      );
    }
    if (sessions.size + starting.size >= listen.maxSessions) return new ProxyError('TOO_MANY_SESSIONS', `Too many sessions (limit ${listen.maxSessions}); try again later`);
    if (!limits.openSession(owner)) return new ProxyError('RATE_LIMITED', `Too many sessions for this client (limit ${opts.sessionsPerClient})`);
    const session = newSession(principal, owner, id);
    session.issuedAt = claims.issued * 1000;
    const relay = opts.resumeSession(session, log.child({ session: session.logId }), claims, { principal, client: owner });
    if (!relay) {
      limits.sessionEnded(owner);
      return new ProxyError('SESSION_NOT_FOUND', notFound);
    }
    session.relay = relay;
    sessions.set(id, session);
    log.info({ session: session.logId, from: claims.replica }, 'session resumed from its token');
    return session;
  };

  app.post(listen.path, limited, async (req, reply) => {
    const accept = String(req.headers.accept ?? '*/*');
    const wantsSse = accept.includes('text/event-stream') || accept.includes('*/*');
    const wantsJson = accept.includes('application/json') || accept.includes('*/*');
    if (!wantsSse && !wantsJson) {
      return rpcError(reply, new ProxyError('NOT_ACCEPTABLE', 'Not Acceptable: accept application/json or text/event-stream'));
    }
    if (typeof req.body !== 'string') return rpcError(reply, new ProxyError('BAD_REQUEST', 'Request body is empty'));
    const parsed = parsePayload(req.body, payloadLimits);
    if (!parsed.ok) return reply.code(400).type('application/json').send(JSON.stringify(parsed.error));
    const { batch } = parsed;
    const variantHeader = req.headers['mcp-server-variant'];
    let frames = typeof variantHeader === 'string' ? parsed.frames.map((f) => headerVariant(f, variantHeader)) : parsed.frames;
    const headerTrace = traceContextOf(req.headers);
    if (opts.tracing) {
      // Traced: the request's span (child of the client's trace, from the headers or the first message) is the parent of the upstream's work.
      req.span = opts.tracing.startRequest(headerTrace ?? traceContextOf((frames[0]?.msg as { params?: { _meta?: Record<string, unknown> } }).params?._meta));
      const own = req.span.context;
      frames = frames.map((f) => withTraceContext(f, own, true));
    } else if (headerTrace) {
      frames = frames.map((f) => withTraceContext(f, headerTrace));
    }
    noteExchange(req, frames);
    // Draining: no new work, but answers and cancellations for calls in flight still get through.
    if (draining && frames.some((f) => isRequest(f.msg))) {
      return rpcError(reply, new ProxyError('SHUTTING_DOWN', 'The proxy is shutting down; send this to another replica, or retry shortly'));
    }
    if (opts.modern && isModernPost(req, frames)) {
      noteExchange(req, undefined, { era: 'modern' });
      const mode = !wantsSse ? 'json' : !wantsJson ? 'sse' : listen.responseMode;
      return serveModernPost(opts.modern, req, reply, frames, batch, mode, STREAM_AFTER_MS, { principal: principalOf(req), client: limitKey(req) }, slowReaders);
    }
    const init = frames.find((f) => isRequest(f.msg) && f.msg.method === 'initialize');
    let session: HttpSession | undefined;
    if (init) {
      if (frames.length > 1) return rpcError(reply, new ProxyError('BAD_REQUEST', 'Invalid Request: initialize must be sent alone'));
      if (req.headers['mcp-session-id']) return rpcError(reply, new ProxyError('BAD_REQUEST', 'Invalid Request: this session is already initialized'));
      if (!limits.openSession(limitKey(req))) {
        log.warn({ client: limitKey(req), limit: opts.sessionsPerClient }, 'per-client session limit reached; refusing initialize');
        return rpcError(reply, new ProxyError('RATE_LIMITED', `Too many sessions for this client (limit ${opts.sessionsPerClient}, listen.perClient.sessions); end one (DELETE) or wait for it to go idle`));
      }
      if (sessions.size + starting.size >= listen.maxSessions) {
        limits.sessionEnded(limitKey(req));
        log.warn({ sessions: sessions.size + starting.size }, 'session limit reached; refusing initialize');
        return rpcError(reply, new ProxyError('TOO_MANY_SESSIONS', `Too many sessions (limit ${listen.maxSessions}); try again later`));
      }
      try {
        session = openSession(principalOf(req), limitKey(req));
      } catch (err) {
        limits.sessionEnded(limitKey(req));
        log.error({ err: (err as Error).message }, 'could not open a session');
        return rpcError(reply, new ProxyError('TOO_MANY_SESSIONS', `Could not start a session: ${(err as Error).message}`));
      }
    } else {
      session = sessionFor(req, reply);
      if (!session) return reply;
    }
    noteExchange(req, undefined, { era: 'legacy', session: session.logId });
    const ids: JsonRpcId[] = frames.flatMap((f) => (isRequest(f.msg) ? [f.msg.id] : []));
    if (ids.length === 0) {
      for (const frame of frames) session.relay.fromClient(frame);
      return reply.code(202).send();
    }
    const duplicate = ids.find((id, i) => session.isWaiting(id) || ids.indexOf(id) !== i);
    if (duplicate !== undefined) {
      return reply.code(400).type('application/json').send(JSON.stringify(errorResponse(duplicate, toJsonRpcError(duplicateId(duplicate)))));
    }
    takeOver(reply);
    const mode = !wantsSse ? 'json' : !wantsJson ? 'sse' : listen.responseMode;
    const exchangeSession = session;
    const channel = new PostReply(reply.raw, () => ({ 'mcp-session-id': init ? track(exchangeSession) : exchangeSession.id }), mode, batch, STREAM_AFTER_MS, slowReaders, init !== undefined);
    session.addExchange(channel, ids, init !== undefined);
    for (const frame of frames) session.relay.fromClient(frame);
  });

  app.get(listen.path, limited, async (req, reply) => {
    if (!String(req.headers.accept ?? '').includes('text/event-stream')) {
      return rpcError(reply, new ProxyError('NOT_ACCEPTABLE', 'Not Acceptable: the GET stream needs Accept: text/event-stream'));
    }
    const session = sessionFor(req, reply);
    if (!session) return reply;
    noteExchange(req, undefined, { era: 'legacy', session: session.logId });
    if (req.headers['last-event-id']) log.debug({ session: session.logId }, 'client asked to resume a stream; replay is not kept, opening a fresh one');
    takeOver(reply);
    session.attachGetStream(new SseStream(reply.raw, { 'mcp-session-id': session.id }, slowReaders));
  });

  app.delete(listen.path, limited, async (req, reply) => {
    const session = sessionFor(req, reply);
    if (!session) return reply;
    noteExchange(req, undefined, { era: 'legacy', session: session.logId });
    await session.relay.close(new ProxyError('CLIENT_GONE', 'The client ended the session'));
    return reply.code(200).send();
  });

  // Every tick: a keep-alive comment on each GET stream (so a vanished client's socket errors
  // out and its stream closes), then sessions past their maximum age (open streams and all) and
  // idle ones are ended.
  const reaper = setInterval(() => {
    const cutoff = Date.now() - opts.sessionIdleMs;
    for (const session of sessions.values()) {
      if (expireIfOld(session)) {
        log.info({ session: session.logId }, 'session reached timeouts.sessionMaxAgeMs; ended');
        continue;
      }
      session.heartbeat();
      if (session.isQuiet && session.relay.lastActivity < cutoff) {
        log.info({ session: session.logId }, 'session idle; ending it here');
        void letGo(session, new ProxyError('SESSION_IDLE', 'The session was idle too long'));
      }
    }
  }, Math.max(250, Math.min(opts.sessionIdleMs / 2, opts.sessionMaxAgeMs / 2, 25_000)));
  reaper.unref();

  const address = await app.listen({ host: listen.host, port: listen.port });
  const url = new URL(listen.path, address.replace('0.0.0.0', '127.0.0.1').replace('[::]', '[::1]')).toString();
  return {
    url,
    sessionCount: () => sessions.size + starting.size,
    drain(graceMs) {
      if (draining) return Promise.resolve();
      log.info({ inFlight, graceMs }, 'draining: no new requests; waiting for those in flight');
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          log.warn({ inFlight }, 'drain grace period over; ending what is still in flight');
          resolve();
        }, graceMs);
        draining = {
          idle: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        if (inFlight === 0) draining.idle();
      });
    },
    async close() {
      clearInterval(reaper);
      const reason = new ProxyError('SHUTTING_DOWN', 'The proxy is shutting down');
      await Promise.all([...[...sessions.values()].map((s) => letGo(s, reason)), ...[...starting].map((s) => s.relay.close(reason))]);
      await app.close();
    },
  };
}

/** The refusal of a session id presented by someone it was not issued to. */
function notYours(): ProxyError {
  return new ProxyError('FORBIDDEN', 'This session was issued to another client identity; send initialize to start your own');
}

/** Who sent the request ('' without authentication). */
function principalOf(req: FastifyRequest): string {
  return req.principal;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by authentication; '' when it is off. */
    principal: string;
  }
}

/** A request with the MCP-Server-Variant header applied (a new frame only when it changed). */
function headerVariant(frame: Frame, header: string): Frame {
  const msg = withVariantHeader(frame.msg as JsonRpcRequest, header);
  return msg === frame.msg ? frame : { msg };
}

/** Rejects an HTTP request before it reaches a session: the error's status and wire form. */
function rpcError(reply: FastifyReply, err: ProxyError): FastifyReply {
  if (err.retryAfter && !reply.hasHeader('retry-after')) reply.header('retry-after', String(err.retryAfter));
  // A body not read yet is not waited for: the connection closes with the refusal.
  if (!reply.request.raw.complete || refusalOf(reply.request.raw.socket)) reply.header('connection', 'close');
  return reply.code(err.httpStatus).type('application/json').send(JSON.stringify(errorResponse(null, toJsonRpcError(err))));
}
