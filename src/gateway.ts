/**
 * The composition root: builds the upstream factory, the relay sessions and the chosen
 * downstream front from a validated Config. `start()` begins serving; `close()` ends every
 * session and reaps every child process.
 */
import type { ChildProcess } from 'node:child_process';
import { hostname } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import type { Config } from './config/schema.js';
import { startHttpDownstream, type HttpDownstream } from './downstream/http.js';
import { startStdioDownstream, type StdioDownstream } from './downstream/stdio.js';
import { ProxyError } from './jsonrpc/errors.js';
import type { JsonRpcNotification } from './jsonrpc/message.js';
import { ModernCore, type ModernCoreOptions } from './fronts/modern/core.js';
import { ListenHub } from './fronts/modern/listen.js';
import { Metrics } from './metrics.js';
import { PROXY_VERSION } from './version.js';
import { Negotiation, type NegotiationSnapshot } from './negotiation/session.js';
import { SessionTokens, type SessionClaims } from './downstream/session-tokens.js';
import { VariantCatalog } from './negotiation/variant-scope.js';
import type { CompiledRule } from './pipeline/rules.js';
import { createAuthenticator, exposureProblem } from './fronts/auth.js';
import { Sealer } from './sealing/sealer.js';
import { RelaySession, type ClientSink } from './relay/session.js';
import { createHttpUpstream } from './upstream/http.js';
import { UpstreamPool } from './upstream/pool.js';
import { SharedSessions } from './upstream/shared.js';
import { describeUpstream, resolveUpstream } from './upstream/spec.js';
import { createStdioUpstream, killGroup } from './upstream/stdio.js';
import type { ResumedSession, UpstreamConnection, UpstreamEvents } from './upstream/types.js';

export interface GatewayDeps {
  log: Logger;
  /** Client streams for the stdio front (process.stdin/stdout in the CLI). */
  stdin?: Readable;
  stdout?: Writable;
  /** Entry point of the built-in demo upstream. */
  demoEntry?: string;
  /** Compiled content-negotiation rules (src/pipeline/load.ts); none = a pure relay. */
  rules?: CompiledRule[];
}

/** The gateway cannot start as configured; the message says why and what to do. */
export class ProxyStartError extends Error {}

export interface Gateway {
  /** Starts serving; for HTTP, resolves with the endpoint URL once listening. */
  start(): Promise<{ url?: string }>;
  /** For the stdio front: settles when the client session is over. */
  readonly done: Promise<ProxyError | undefined>;
  close(): Promise<void>;
  /** Last resort at process exit: SIGKILL every child still alive. */
  killChildrenNow(): void;
}

export function createGateway(config: Config, deps: GatewayDeps): Gateway {
  const { log } = deps;
  const demoEntry = deps.demoEntry ?? fileURLToPath(new URL('./demo/main.js', import.meta.url));
  const spec = resolveUpstream(config.upstream, demoEntry);
  const target = describeUpstream(spec);
  const children = new Set<ChildProcess>();
  const secret = config.replicas.secret ?? config.modern.stateSecret;
  const sealer = new Sealer(secret ? [secret, ...config.replicas.previousSecrets] : []);
  const replicaId = config.replicas.id ?? `${hostname()}:${process.pid}`;
  /** Legacy sessions over an HTTP upstream go on at any replica that shares the secret. */
  const sessionsMove = sealer.shared && spec.kind === 'http';
  /**
   * Where other replicas reach this one: configured; bound to every interface (a container), its
   * host name, as peers on its network resolve it; else the listening URL (known once listening).
   */
  const wildcard = ['0.0.0.0', '::', '[::]'].includes(config.listen.host);
  let replicaUrl = config.replicas.url ?? (wildcard && config.listen.port !== 0 ? `http://${hostname()}:${config.listen.port}${config.listen.path}` : undefined);
  // The relay's own timers decide when a request has taken too long; undici's 300 s defaults
  // would cut off long tool calls and quiet GET streams.
  const dispatcher = new Agent({ keepAliveTimeout: 30_000, connections: null, bodyTimeout: 0, headersTimeout: 0 });
  const health = { startFailure: undefined as string | undefined, lastExit: undefined as string | undefined };
  let http: HttpDownstream | undefined;
  let stdio: StdioDownstream | undefined;
  let settle!: (reason: ProxyError | undefined) => void;
  const done = new Promise<ProxyError | undefined>((resolve) => (settle = resolve));

  /** Connects one upstream session, noting start failures and recoveries for /healthz. */
  const connect = (events: UpstreamEvents, sessionLog: Logger, resume?: ResumedSession): UpstreamConnection => {
    const watched: UpstreamEvents = {
      onMessage(frame, relatedId) {
        health.startFailure = undefined;
        events.onMessage(frame, relatedId);
      },
      onClose(err) {
        if (err.code === 'UPSTREAM_START_FAILED') health.startFailure = err.message;
        else if (err.code === 'UPSTREAM_CLOSED') health.lastExit = err.message;
        events.onClose(err);
      },
    };
    return spec.kind === 'http'
      ? createHttpUpstream(spec, watched, sessionLog, { dispatcher, defaultRetryMs: 1000, maxResumes: 5, resume, getFollowsClient: sessionsMove })
      : createStdioUpstream(spec, watched, sessionLog, { shutdownGraceMs: config.timeouts.shutdownGraceMs, children });
  };

  const authenticator = createAuthenticator(config.auth);
  const rules = deps.rules ?? [];
  const metrics = new Metrics({ sessions: () => http?.sessionCount() ?? (stdio ? 1 : 0), upstreamProcesses: () => children.size });
  const counters = metrics.counters;
  const variants = new VariantCatalog(config.serverVariants);
  const unshapedNotices = new Set<string>();
  const sharing = config.upstream.sessions === 'shared' && spec.kind === 'stdio';
  let modern: { core: ModernCore; hub: ListenHub } | undefined;
  let shared: SharedSessions | undefined;
  const pool = config.modern.enabled || sharing
    ? createPool(config, spec.kind === 'stdio', (events, poolLog) => connect(events, poolLog), log, (n) => (modern?.hub.publish(n), shared?.publish(n)))
    : undefined;
  if (pool && config.modern.enabled) modern = createModernCore(config, pool, { rules, variants, counters, unshapedNotices, sealer, replicaId, replicaUrl: () => replicaUrl, log });
  if (pool && sharing) shared = new SharedSessions(pool, config.timeouts.requestMs);
  const negotiationSetup = (sessionLog: Logger) => ({ rules, variants, limits: config.contentNegotiation.limits, unshapedNotices, counters, log: sessionLog });
  /** Stdio processes held by legacy sessions, capped by upstream.maxProcesses. */
  let sessionProcesses = 0;
  const connectSession = (events: UpstreamEvents, sessionLog: Logger, resume?: ResumedSession): UpstreamConnection => {
    if (shared) return shared.connect(events, sessionLog);
    if (spec.kind !== 'stdio') return connect(events, sessionLog, resume);
    const max = config.upstream.maxProcesses;
    if (sessionProcesses >= max) throw new ProxyError('TOO_MANY_SESSIONS', `All ${max} upstream processes for sessions are in use (upstream.maxProcesses); try again when a session ends`);
    sessionProcesses++;
    return connect({ onMessage: events.onMessage, onClose: (err) => (sessionProcesses--, events.onClose(err)) }, sessionLog);
  };
  const relay = (sink: ClientSink, sessionLog: Logger, shaper: Negotiation, resume?: ResumedSession) =>
    new RelaySession((events) => connectSession(events, sessionLog, resume), sink, {
      requestTimeoutMs: config.timeouts.requestMs,
      initializeTimeoutMs: config.timeouts.initializeMs,
      shaper,
      counters,
      log: sessionLog,
    });
  const openSession = (sink: ClientSink, sessionLog: Logger) => {
    counters.sessionsStarted++;
    return relay(sink, sessionLog, new Negotiation(negotiationSetup(sessionLog)));
  };
  const resumeSession = (sink: ClientSink, sessionLog: Logger, claims: SessionClaims) => {
    const upstream = claims.upstream;
    if (!upstream?.id) return undefined;
    const snapshot = (claims.negotiation ?? { client: {} }) as NegotiationSnapshot;
    return relay(sink, sessionLog, Negotiation.restore(negotiationSetup(sessionLog), snapshot), { id: upstream.id, protocolVersion: upstream.protocolVersion });
  };

  const reportHealth = () => ({
    ok: health.startFailure === undefined,
    upstream: {
      kind: spec.kind,
      target,
      ...(spec.kind === 'stdio' ? { processes: children.size } : {}),
      ...(health.startFailure ? { startFailure: health.startFailure } : {}),
      ...(health.lastExit ? { lastExit: health.lastExit } : {}),
    },
  });

  return {
    done,
    async start() {
      const exposed = exposureProblem(config, authenticator.enabled);
      if (exposed) throw new ProxyStartError(exposed);
      log.info({ upstream: target, kind: spec.kind }, 'upstream configured');
      if (config.listen.transport === 'stdio') {
        stdio = startStdioDownstream({
          input: deps.stdin ?? process.stdin,
          output: deps.stdout ?? process.stdout,
          openSession,
          modern: modern?.core,
          log,
        });
        void stdio.done.then(settle);
        return {};
      }
      http = await startHttpDownstream({
        listen: config.listen,
        sessionIdleMs: config.timeouts.sessionIdleMs,
        sessionMaxAgeMs: config.timeouts.sessionMaxAgeMs,
        openSession,
        tokens: new SessionTokens(sealer, replicaId),
        auth: { authenticator, config: config.auth },
        replicaUrl: () => replicaUrl,
        resumeSession: sessionsMove ? resumeSession : undefined,
        modern: modern?.core,
        health: reportHealth,
        metrics: () => metrics.render(),
        log,
      });
      if (spec.kind === 'http') void probe(spec.url, target, dispatcher, log);
      if (!wildcard) replicaUrl ??= http.url;
      log.info({ url: http.url }, 'listening');
      return { url: http.url };
    },
    async close() {
      await Promise.all([http?.close(), stdio?.close()]);
      modern?.core.close();
      await pool?.close();
      await dispatcher.close().catch(() => undefined);
      settle(undefined);
    },
    killChildrenNow() {
      for (const child of children) killGroup(child, 'SIGKILL');
    },
  };
}

/** The modern-era core and the pool of upstream sessions it forwards through. */
/**
 * The pool of proxy-initialized upstream sessions (modern requests, and legacy sessions with
 * `upstream.sessions: shared`); notifications that belong to no call go to `onUnrelated`.
 */
function createPool(config: Config, stdioUpstream: boolean, connect: (events: UpstreamEvents, log: Logger) => UpstreamConnection, log: Logger, onUnrelated: (n: JsonRpcNotification) => void): UpstreamPool {
  return new UpstreamPool({
    connect,
    maxSessions: config.modern.pool.maxSessions,
    idleMs: config.modern.pool.idleMs,
    warmSpare: config.modern.pool.warmSpare && stdioUpstream,
    initializeTimeoutMs: config.timeouts.initializeMs,
    clientInfo: { name: 'mcp-negotiate-proxy', version: PROXY_VERSION },
    log: log.child({ pool: true }),
    onUnrelated,
  });
}

/** The modern-era core over the pool, with its listen hub. */
function createModernCore(
  config: Config,
  pool: UpstreamPool,
  shared: { rules: CompiledRule[]; variants: VariantCatalog; counters: Metrics['counters']; unshapedNotices: Set<string>; sealer: Sealer; replicaId: string; replicaUrl: () => string | undefined; log: Logger },
): { core: ModernCore; hub: ListenHub } {
  const log = shared.log.child({ era: 'modern' });
  const hub = new ListenHub(pool, log);
  const core = new ModernCore({
    pool,
    negotiation: { ...shared, limits: config.contentNegotiation.limits, outputSchemas: new Map(), log },
    requestTimeoutMs: config.timeouts.requestMs,
    inputTimeoutMs: config.modern.inputTimeoutMs,
    sealer: shared.sealer,
    replicaId: shared.replicaId,
    replicaUrl: shared.replicaUrl,
    cache: config.modern.cache as ModernCoreOptions['cache'],
    listen: (req, ctx, reply) => hub.listen(req, ctx, reply),
    log,
  });
  return { core, hub };
}

/** Tells the operator at start-up whether an HTTP upstream answers at all. */
async function probe(url: string, target: string, dispatcher: Agent, log: Logger): Promise<void> {
  try {
    const res = await request(url, { method: 'GET', dispatcher, headers: { accept: 'text/event-stream' }, signal: AbortSignal.timeout(3000) });
    await res.body.dump();
    log.info({ upstream: target, status: res.statusCode }, 'upstream reachable');
  } catch (err) {
    log.warn({ upstream: target, err: (err as Error).message }, 'upstream not reachable yet; sessions will fail until it is');
  }
}
