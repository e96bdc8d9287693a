/**
 * The Streamable HTTP front: a Fastify server whose plugins each keep one concern (connection
 * discipline, guards, access log, CORS, authentication, limits, probes), and the MCP endpoint,
 * whose POSTs are parsed here and handed by the era classifier to the legacy or the modern
 * endpoint. The endpoints are given, so nothing here knows either era's sessions or requests.
 */
import cors from '@fastify/cors';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Requester } from '../../core/context.js';
import { ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { errorResponse, isRequest, parsePayload, type Frame, type JsonRpcRequest } from '../../jsonrpc/message.js';
import { withVariantHeader } from '../../extensions/server-variants/variants.js';
import { eraOf } from '../../mcp/eras.js';
import { httpStatusOf } from '../../mcp/http-status.js';
import { ANY_TYPE, JSON_TYPE, SSE_TYPE, acceptedTypes } from '../../mcp/media-type.js';
import { noteExchange, registerAccessLog } from '../../ops/access-log.js';
import type { Metrics, RefusalReason } from '../../ops/metrics.js';
import type { ReadinessReport } from '../../ops/readiness.js';
import { traceContextOf, withTraceContext } from '../../ops/trace-context.js';
import type { Tracing } from '../../ops/tracing.js';
import type { Sealer } from '../../sealing/sealer.js';
import type { AuthConfig, Authenticator } from './auth.js';
import { registerAuthentication } from './authentication.js';
import { capConnections, timeoutOptions, type ConnectionLimits } from './connections.js';
import { fastifyError, sendError } from './errors.js';
import { registerGuards } from './guards.js';
import { clientAddress, limitKey } from './client-key.js';
import { registerLimits, trustedAddress, type ClientLimits } from './limits.js';
import { registerProbes } from './probes.js';
import { registerReplicaClient } from './replica-client.js';
import { routeOf } from './route.js';
import type { ReplyMode } from './replies.js';

/** A parsed POST for an endpoint: its messages, how to answer, and who sent it. */
export interface Post {
  frames: Frame[];
  batch: boolean;
  mode: ReplyMode;
  who: Requester;
}

type Handler = (req: FastifyRequest, reply: FastifyReply) => Promise<unknown>;

export interface LegacyEndpoint {
  /** Answers (or hijacks) the reply before it returns: nothing to wait for. */
  post(req: FastifyRequest, reply: FastifyReply, post: Post): void;
  get: Handler;
  delete: Handler;
  readonly sessionCount: number;
  close(): Promise<void>;
}

export interface ModernEndpoint {
  post(req: FastifyRequest, reply: FastifyReply, post: Post): Promise<unknown>;
}

/** The `listen` settings the front reads. */
export interface HttpListen {
  host: string;
  port: number;
  path: string;
  allowedOrigins?: string[];
  allowedHosts?: string[];
  maxBodyBytes: number;
  maxBatchSize: number;
  maxJsonDepth: number;
  responseMode: ReplyMode;
  connections: ConnectionLimits;
  cors?: { origins: string[]; maxAgeSeconds: number };
  trustProxy: string[] | false;
}

export interface HttpFrontOptions {
  listen: HttpListen;
  /** Paths that serve the endpoint too, each for the profile that names it. */
  profilePaths?: string[];
  legacy: LegacyEndpoint;
  /** Serves modern (2026-07-28) requests; absent = legacy clients only. */
  modern?: ModernEndpoint;
  /** Per-client sessions and requests in flight (shared with the legacy endpoint). */
  limits: ClientLimits;
  /** Who may use the MCP endpoint (see ./auth.ts). */
  auth: { authenticator: Authenticator; config: AuthConfig };
  /** This replica's URL as other replicas reach it (its host is accepted beside allowedHosts). */
  replicaUrl?(): string | undefined;
  /** Replicas share a secret: a request another one forwards counts as the client it saw (see ./replica-client.ts). */
  replicas?: { sealer: Sealer; replicaId: string };
  /** Spans for each request (absent: tracing off). */
  tracing?: Tracing;
  /** What /healthz and /readyz say about the upstream (masked). */
  health(): Record<string, unknown>;
  /** With several servers behind the endpoint: the one a request's target belongs to (the access log's `server`). */
  serverOf?(rpc: string, target: string): string | undefined;
  /** Whether the upstream is usable now (/readyz: 200 or 503). */
  readiness(): Promise<ReadinessReport>;
  metrics: Metrics;
  log: Logger;
}

export interface HttpFront {
  url: string;
  /** Stops taking new sessions and requests (503 + Retry-After, /readyz 503); resolves when nothing is in flight or after `graceMs`. */
  drain(graceMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startHttpFront(opts: HttpFrontOptions): Promise<HttpFront> {
  const { listen, log, metrics } = opts;
  const app = createApp(listen, metrics, log);
  /** A request refused by a limit: counted in /metrics and named on its access-log line (no line of its own: refusals come in floods). */
  const refuse = (req: FastifyRequest, reason: RefusalReason) => {
    metrics.refused(reason);
    noteExchange(req, undefined, { refused: reason });
  };
  const hostOk = registerGuards(app, {
    path: listen.path,
    allowedHosts: listen.allowedHosts,
    allowedOrigins: listen.allowedOrigins,
    corsOrigins: listen.cors?.origins,
    replicaUrl: opts.replicaUrl,
  });
  if (opts.replicas) registerReplicaClient(app, { ...opts.replicas, log });
  registerAccessLog(app, {
    logged: (req) => routeOf(req) === listen.path,
    address: clientAddress,
    log,
    observe: (method, era, status, seconds) => metrics.observeRequest(method, era, status, seconds),
    serverOf: opts.serverOf,
  });
  if (listen.cors) {
    await app.register(cors, {
      origin: listen.cors.origins.includes('*') ? '*' : listen.cors.origins,
      methods: ['GET', 'POST', 'DELETE', 'OPTIONS'],
      // Request headers are reflected from the preflight (Mcp-Param-* names are per tool).
      exposedHeaders: ['mcp-session-id', 'mcp-protocol-version', 'www-authenticate', 'retry-after'],
      maxAge: listen.cors.maxAgeSeconds,
    });
  }
  const authenticate = registerAuthentication(app, {
    ...opts.auth,
    path: listen.path,
    port: listen.port,
    onBlocked: (req) => refuse(req, 'auth_failures'),
    log,
  });
  const inFlight = registerLimits(app, { path: listen.path, limits: opts.limits, refuse });
  let draining = false;
  registerProbes(app, {
    metrics,
    health: opts.health,
    readiness: opts.readiness,
    sessions: () => opts.legacy.sessionCount,
    draining: () => draining,
    hostOk,
    authenticate: opts.auth.authenticator.enabled ? authenticate : undefined,
    trustsForwarding: listen.trustProxy !== false,
  });

  // Not async: a legacy POST is answered or taken over before the handler returns, so no promise is made for it.
  const post = (req: FastifyRequest, reply: FastifyReply) => {
    const parsed = parsePost(req, reply, listen, opts.tracing);
    if (!parsed) return;
    // Draining: no new work, but answers and cancellations for calls in flight still get through.
    if (draining && parsed.frames.some((f) => isRequest(f.msg))) {
      sendError(reply, new ProxyError('SHUTTING_DOWN', 'The proxy is shutting down; send this to another replica, or retry shortly'));
      return;
    }
    const era = opts.modern
      ? eraOf(parsed.frames, { sessionId: req.headers['mcp-session-id'], versionHeader: req.headers['mcp-protocol-version'] })
      : 'legacy';
    if (era === 'legacy') return opts.legacy.post(req, reply, parsed);
    noteExchange(req, undefined, { era });
    return opts.modern!.post(req, reply, parsed);
  };
  for (const path of [listen.path, ...(opts.profilePaths ?? [])]) {
    const config = { endpoint: listen.path };
    app.post(path, { config }, post);
    app.get(path, { config }, (req, reply) => opts.legacy.get(req, reply));
    app.delete(path, { config }, (req, reply) => opts.legacy.delete(req, reply));
  }

  const address = await app.listen({ host: listen.host, port: listen.port });
  const url = new URL(listen.path, address.replace('0.0.0.0', '127.0.0.1').replace('[::]', '[::1]')).toString();
  return {
    url,
    drain(graceMs) {
      if (draining) return Promise.resolve();
      draining = true;
      log.info({ inFlight: inFlight.count, graceMs }, 'draining: no new requests; waiting for those in flight');
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          log.warn({ inFlight: inFlight.count }, 'drain grace period over; ending what is still in flight');
          resolve();
        }, graceMs);
        inFlight.whenIdle(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    },
    async close() {
      await opts.legacy.close();
      await app.close();
    },
  };
}

/** The Fastify server with connection discipline, the body kept as text (parsed by the MCP rules), and errors in JSON-RPC form. */
function createApp(listen: HttpListen, metrics: Metrics, log: Logger): FastifyInstance {
  const app = Fastify({
    bodyLimit: listen.maxBodyBytes,
    forceCloseConnections: true,
    logger: false,
    trustProxy: listen.trustProxy,
    ...timeoutOptions(listen.connections),
  });
  const connections = capConnections(app.server, listen.connections, trustedAddress(listen.trustProxy), log, (reason) =>
    metrics.refused(reason),
  );
  metrics.countConnections(connections.open);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => done(null, body));
  app.setErrorHandler((err: { statusCode?: number; code?: string; message: string }, _req, reply) => {
    if ((err.statusCode ?? 500) < 500) return sendError(reply, fastifyError(err, listen.maxBodyBytes));
    log.error({ err: err.message }, 'HTTP handler failed');
    return reply
      .code(httpStatusOf({ refused: err }))
      .type('application/json')
      .send(JSON.stringify(errorResponse(null, toJsonRpcError(err))));
  });
  return app;
}

/**
 * A POST's messages as the endpoints take them, or undefined once the refusal is sent: what
 * it accepts, its body parsed (batch and depth limits), the MCP-Server-Variant header applied,
 * and trace context carried into `_meta` (under the request's own span when tracing).
 */
function parsePost(req: FastifyRequest, reply: FastifyReply, listen: HttpListen, tracing: Tracing | undefined): Post | undefined {
  const accepted = acceptedTypes(req.headers.accept ?? ANY_TYPE);
  const wantsSse = accepted.includes(SSE_TYPE) || accepted.includes(ANY_TYPE);
  const wantsJson = accepted.includes(JSON_TYPE) || accepted.includes(ANY_TYPE);
  if (!wantsSse && !wantsJson)
    return void sendError(reply, new ProxyError('NOT_ACCEPTABLE', 'Not Acceptable: accept application/json or text/event-stream'));
  if (typeof req.body !== 'string') return void sendError(reply, new ProxyError('BAD_REQUEST', 'Request body is empty'));
  const parsed = parsePayload(req.body, { maxBatch: listen.maxBatchSize, maxDepth: listen.maxJsonDepth });
  if (!parsed.ok)
    return void reply
      .code(httpStatusOf({ unreadable: true }))
      .type('application/json')
      .send(JSON.stringify(parsed.error));
  const variantHeader = req.headers['mcp-server-variant'];
  let frames = typeof variantHeader === 'string' ? parsed.frames.map((f) => headerVariant(f, variantHeader)) : parsed.frames;
  const headerTrace = traceContextOf(req.headers);
  if (tracing) {
    // Traced: the request's span (child of the client's trace, from the headers or the first message) is the parent of the upstream's work.
    req.span = tracing.startRequest(
      headerTrace ?? traceContextOf((frames[0]?.msg as { params?: { _meta?: Record<string, unknown> } }).params?._meta),
    );
    const own = req.span.context;
    frames = frames.map((f) => withTraceContext(f, own, true));
  } else if (headerTrace) {
    frames = frames.map((f) => withTraceContext(f, headerTrace));
  }
  noteExchange(req, frames);
  const mode = !wantsSse ? 'json' : !wantsJson ? 'sse' : listen.responseMode;
  const featuresHeader = req.headers['mcp-features'];
  return {
    frames,
    batch: parsed.batch,
    mode,
    who: {
      principal: req.principal,
      client: limitKey(req),
      path: req.routeOptions.url,
      ...(typeof featuresHeader === 'string' ? { featuresHeader } : {}),
    },
  };
}

/** A request with the MCP-Server-Variant header applied (a new frame only when it changed). */
function headerVariant(frame: Frame, header: string): Frame {
  const msg = withVariantHeader(frame.msg as JsonRpcRequest, header);
  return msg === frame.msg ? frame : { msg };
}
