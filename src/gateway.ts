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
import { Agent } from 'undici';
import { clientSessions, type Config } from './config/schema.js';
import { startHttpFront, type HttpFront } from './fronts/http/server.js';
import { ClientLimits } from './fronts/http/limits.js';
import { LegacySessions } from './fronts/legacy/http.js';
import { ModernHttp } from './fronts/modern/http.js';
import type { Requester } from './core/context.js';
import { startStdioDownstream, type StdioDownstream } from './fronts/stdio.js';
import { ProxyError } from './jsonrpc/errors.js';
import type { JsonRpcNotification } from './jsonrpc/message.js';
import { ModernCore, type ModernCoreOptions } from './fronts/modern/core.js';
import { ListenHub } from './fronts/modern/listen.js';
import { Metrics } from './ops/metrics.js';
import { PROXY_VERSION } from './ops/version.js';
import type { ContentNegotiationSetup, TokenObserver } from './extensions/content-negotiation/filter.js';
import type { Filter } from './extensions/contract.js';
import { builtinChain, type BoundFilters, type FilterChain, type FiltersSnapshot } from './core/filters.js';
import { SessionTokens, type SessionClaims } from './fronts/legacy/session-tokens.js';
import { VariantCatalog } from './extensions/server-variants/scope.js';
import type { CompiledRule } from './rules/compile.js';
import { createAuthenticator, exposureProblem } from './fronts/http/auth.js';
import { maskSecrets } from './ops/mask.js';
import { diffConfig } from './config/reload.js';
import { loadTokenizer, TokenMeter } from './ops/token-counts.js';
import { Tracing } from './ops/tracing.js';
import { Readiness } from './ops/readiness.js';
import { Sealer } from './sealing/sealer.js';
import { RelaySession, type ClientSink } from './core/relay.js';
import { createHttpUpstream } from './upstream/http.js';
import { UpstreamClient, type UpstreamObserver } from './upstream/client.js';
import { UpstreamPool } from './upstream/pool.js';
import { SharedSessions } from './upstream/shared.js';
import { describeUpstream, resolveUpstream } from './config/upstream.js';
import { createStdioUpstream, killGroup } from './upstream/stdio.js';
import type { ResumedSession, UpstreamConnection, UpstreamEvents } from './upstream/types.js';

export interface GatewayDeps {
  log: Logger;
  /** Client streams for the stdio front (process.stdin/stdout in the CLI). */
  stdin?: Readable;
  stdout?: Writable;
  /** Entry point of the built-in demo upstream. */
  demoEntry?: string;
  /** Filters run after the built-in ones (server variants, content negotiation), for both eras. */
  filters?: Filter[];
  /** Compiled content-negotiation rules (src/config/rules.ts); none = a pure relay. */
  rules?: CompiledRule[];
  /** Refuse to start when the upstream fails its start-up check (otherwise: log it and serve). */
  failFast?: boolean;
}

const CLIENT_INFO = { name: 'mcp-negotiate-proxy', version: PROXY_VERSION };
/** A readiness answer is reused this long; a probe gets this long to initialize an upstream session. */
const READY_TTL_MS = 5_000;
const READY_PROBE_TIMEOUT_MS = 10_000;

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
  /**
   * Takes over a new, already validated config: rules, variants, shaping limits, log level and
   * cache hints apply to new sessions and to every modern request from now on; existing legacy
   * sessions keep what they negotiated. Returns what changed, and what only a restart applies.
   */
  reload(next: Config, rules: CompiledRule[]): { live: string[]; restart: string[] };
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
  const health = { lastExit: undefined as string | undefined };
  let http: HttpFront | undefined;
  let legacySessions: LegacySessions | undefined;
  let stdio: StdioDownstream | undefined;
  let settle!: (reason: ProxyError | undefined) => void;
  const done = new Promise<ProxyError | undefined>((resolve) => (settle = resolve));

  /** Connects one upstream session; what it shows about the upstream feeds readiness. */
  const connect = (events: UpstreamEvents, sessionLog: Logger, resume?: ResumedSession): UpstreamConnection => {
    const watched: UpstreamEvents = {
      onMessage(frame, relatedId) {
        readiness.note(true);
        events.onMessage(frame, relatedId);
      },
      onFailure(id, err) {
        if (err.code === 'UPSTREAM_UNREACHABLE') readiness.note(false, err.message);
        events.onFailure(id, err);
      },
      onClose(err) {
        if (err.code === 'UPSTREAM_START_FAILED') readiness.note(false, err.message);
        else if (err.code === 'UPSTREAM_CLOSED') health.lastExit = maskSecrets(err.message);
        events.onClose(err);
      },
    };
    return spec.kind === 'http'
      ? createHttpUpstream(spec, watched, sessionLog, { dispatcher, defaultRetryMs: 1000, maxResumes: 5, resume, getFollowsClient: sessionsMove })
      : createStdioUpstream(spec, watched, sessionLog, { shutdownGraceMs: config.timeouts.shutdownGraceMs, children });
  };

  const authenticator = createAuthenticator(config.auth);
  let running = config;
  const metrics = new Metrics({ sessions: () => legacySessions?.sessionCount ?? (stdio ? 1 : 0), upstreamProcesses: () => children.size });
  const counters = metrics.counters;
  const tracing = Tracing.create(config.tracing, PROXY_VERSION);
  const observeUpstream: UpstreamObserver = (method, outcome, seconds, traceparent) => {
    metrics.observeUpstream(method, outcome, seconds);
    tracing?.record(`upstream ${method}`, traceparent ? { traceparent } : undefined, performance.now() - seconds * 1000, seconds, { 'mcp.method': method, 'mcp.outcome': outcome }, outcome !== 'ok');
  };
  const observeStep: NonNullable<ContentNegotiationSetup['observeStep']> = (transformer, seconds, failed, traceparent) => {
    metrics.observeTransformer(transformer, seconds, failed);
    tracing?.record(`transform ${transformer}`, traceparent ? { traceparent } : undefined, performance.now() - seconds * 1000, seconds, { 'mcp.transformer': transformer }, failed);
  };
  /** Token counts of negotiated results (contentNegotiation.tokens.count): the tokenizer is loaded only when that is on. */
  let tokenMeter: TokenMeter | undefined;
  const meterTokens = async (settings: Config['contentNegotiation']['tokens']): Promise<void> => {
    if (!settings.count) return void (tokenMeter = undefined);
    const count = await loadTokenizer();
    tokenMeter = new TokenMeter(count, settings.maxChars, (c) => metrics.observeTokens(c), () => metrics.tokensNotCounted());
  };
  const observeTokens: TokenObserver = (method, name, before, after) => tokenMeter?.observe(method, name, before, after);
  const sharing = config.upstream.sessions === 'shared' && spec.kind === 'stdio';
  let modern: { core: ModernCore; hub: ListenHub } | undefined;
  let shared: SharedSessions | undefined;
  const pool = config.modern.enabled || sharing
    ? createPool(config, spec.kind === 'stdio', (events, poolLog) => connect(events, poolLog), log, (n, principal) => {
        if (n.method === 'notifications/tools/list_changed') modern?.core.toolsChanged();
        modern?.hub.publish(n, principal);
        shared?.publish(n, principal);
      }, observeUpstream)
    : undefined;
  /** The filters both eras run through, as the config says now: a reload builds them again (open legacy sessions keep theirs). */
  const buildFilters = (rules: CompiledRule[], settings: Config): FilterChain =>
    builtinChain({ rules, variants: new VariantCatalog(settings.serverVariants), limits: settings.contentNegotiation.limits, counters, observeStep, observeTokens, extra: deps.filters });
  let filters = buildFilters(deps.rules ?? [], config);
  if (pool && config.modern.enabled) modern = createModernCore(config, pool, () => filters, log.child({ era: 'modern' }), { sealer, replicaId, replicaUrl: () => replicaUrl });
  if (pool && sharing) shared = new SharedSessions(pool, config.timeouts.requestMs);
  /** Stdio processes held by legacy sessions, capped by upstream.maxProcesses. */
  let sessionProcesses = 0;
  const connectSession = (events: UpstreamEvents, sessionLog: Logger, who: Requester, resume?: ResumedSession): UpstreamConnection => {
    if (shared) return shared.connect(events, sessionLog, who);
    if (spec.kind !== 'stdio') return connect(events, sessionLog, resume);
    const max = config.upstream.maxProcesses;
    if (sessionProcesses >= max) throw new ProxyError('TOO_MANY_SESSIONS', `All ${max} upstream processes for sessions are in use (upstream.maxProcesses); try again when a session ends`);
    sessionProcesses++;
    return connect({ onMessage: events.onMessage, onFailure: events.onFailure, onClose: (err) => (sessionProcesses--, events.onClose(err)) }, sessionLog);
  };
  const relay = (sink: ClientSink, sessionLog: Logger, who: Requester, shaper: BoundFilters, resume?: ResumedSession) =>
    new RelaySession((events) => connectSession(events, sessionLog, who, resume), sink, {
      requestTimeoutMs: config.timeouts.requestMs,
      initializeTimeoutMs: config.timeouts.initializeMs,
      shaper,
      counters,
      // Shared sessions go through the pool's client, which observes the upstream itself.
      observe: shared ? undefined : observeUpstream,
      log: sessionLog,
    });
  const openSession = (sink: ClientSink, sessionLog: Logger, who: Requester) => {
    counters.sessionsStarted++;
    return relay(sink, sessionLog, who, filters.forSession(sessionLog));
  };
  const resumeSession = (sink: ClientSink, sessionLog: Logger, claims: SessionClaims, who: Requester) => {
    const upstream = claims.upstream;
    if (!upstream?.id) return undefined;
    const snapshot = (claims.negotiation ?? { client: {} }) as FiltersSnapshot;
    return relay(sink, sessionLog, who, filters.restore(snapshot, sessionLog), { id: upstream.id, protocolVersion: upstream.protocolVersion });
  };

  /** Starts and initializes one upstream session, then ends it: the readiness probe. */
  const probeUpstream = async (timeoutMs: number): Promise<void> => {
    const probeLog = log.child({ probe: true });
    const client = new UpstreamClient((events) => connect(events, probeLog), { capabilities: {}, clientInfo: CLIENT_INFO, initializeTimeoutMs: timeoutMs, log: probeLog });
    try {
      await client.ready;
    } finally {
      await client.close();
    }
  };
  const readiness = new Readiness(() => probeUpstream(READY_PROBE_TIMEOUT_MS), READY_TTL_MS);

  /** Checks the upstream once at start-up and logs the outcome; with --fail-fast a failure stops the start. */
  const checkAtStart = (): Promise<void> =>
    probeUpstream(config.timeouts.initializeMs).then(
      () => {
        readiness.note(true);
        log.info({ upstream: target }, 'upstream ready');
      },
      (err: Error) => {
        readiness.note(false, err.message);
        log.error({ upstream: target, cause: err.message }, 'upstream not ready: sessions will fail until it is');
        if (deps.failFast) throw new ProxyStartError(`The upstream ${target} is not usable (--fail-fast): ${err.message}`);
      },
    );

  const upstreamReport = () => ({
    kind: spec.kind,
    target,
    ...(spec.kind === 'stdio' ? { processes: children.size } : {}),
    ...(health.lastExit ? { lastExit: health.lastExit } : {}),
  });

  return {
    done,
    async start() {
      const exposed = exposureProblem(config, authenticator.enabled);
      if (exposed) throw new ProxyStartError(exposed);
      log.info({ upstream: target, kind: spec.kind }, 'upstream configured');
      // --fail-fast: nothing is served before the upstream has shown it works.
      if (deps.failFast) await checkAtStart();
      await meterTokens(config.contentNegotiation.tokens);
      if (config.listen.transport === 'stdio') {
        stdio = startStdioDownstream({
          input: deps.stdin ?? process.stdin,
          output: deps.stdout ?? process.stdout,
          openSession,
          modern: modern?.core,
          limits: { maxBatch: config.listen.maxBatchSize, maxDepth: config.listen.maxJsonDepth },
          log,
        });
        void stdio.done.then(settle);
        if (!deps.failFast) void checkAtStart();
        return {};
      }
      const limits = new ClientLimits({ sessions: clientSessions(config), inFlight: config.listen.perClient.inFlight });
      const slowReaders = { ...config.listen.slowReaders, log };
      legacySessions = new LegacySessions({
        maxSessions: config.listen.maxSessions,
        sessionsPerClient: clientSessions(config),
        sessionIdleMs: config.timeouts.sessionIdleMs,
        sessionMaxAgeMs: config.timeouts.sessionMaxAgeMs,
        openSession,
        resumeSession: sessionsMove ? resumeSession : undefined,
        tokens: new SessionTokens(sealer, replicaId),
        limits,
        slowReaders,
        log,
      });
      http = await startHttpFront({
        listen: config.listen,
        legacy: legacySessions,
        modern: modern && new ModernHttp(modern.core, slowReaders),
        limits,
        auth: { authenticator, config: config.auth },
        replicaUrl: () => replicaUrl,
        tracing,
        health: upstreamReport,
        readiness: () => readiness.check(),
        metrics,
        log,
      });
      if (!wildcard) replicaUrl ??= http.url;
      log.info({ url: http.url }, 'listening');
      if (!deps.failFast) void checkAtStart();
      return { url: http.url };
    },
    async close() {
      await http?.drain(config.timeouts.shutdownGraceMs);
      await Promise.all([http?.close(), stdio?.close()]);
      modern?.core.close();
      await pool?.close();
      await dispatcher.close().catch(() => undefined);
      await tracing?.shutdown().catch((err: Error) => log.warn({ err: err.message }, 'could not export the last spans'));
      settle(undefined);
    },
    reload(next, nextRules) {
      const changes = diffConfig(running, next);
      filters = buildFilters(nextRules, next);
      // A modern section that changed beyond its cache needs a restart: nothing of it applies now.
      if (changes.live.includes('modern.cache')) modern?.core.setCache(next.modern.cache as ModernCoreOptions['cache']);
      log.level = next.logLevel;
      if (JSON.stringify(next.contentNegotiation.tokens) !== JSON.stringify(running.contentNegotiation.tokens)) {
        meterTokens(next.contentNegotiation.tokens).catch((err: Error) => log.error({ err: err.message }, 'token counting could not start'));
      }
      // What needs a restart is not in effect: it stays as it was, and is reported again next time.
      running = { ...next, ...Object.fromEntries(changes.restart.map((key) => [key, running[key as keyof Config]])) };
      return changes;
    },
    killChildrenNow() {
      for (const child of children) killGroup(child, 'SIGKILL');
    },
  };
}

/**
 * The pool of proxy-initialized upstream sessions (modern requests, and legacy sessions with
 * `upstream.sessions: shared`); notifications that belong to no call go to `onUnrelated`.
 */
function createPool(
  config: Config,
  stdioUpstream: boolean,
  connect: (events: UpstreamEvents, log: Logger) => UpstreamConnection,
  log: Logger,
  onUnrelated: (n: JsonRpcNotification, principal: string) => void,
  observe: UpstreamObserver,
): UpstreamPool {
  const { maxSessions, perClient } = config.modern.pool;
  return new UpstreamPool({
    connect,
    maxSessions,
    perClient: perClient ?? Math.max(1, Math.floor(maxSessions / 4)),
    // A quarter of the sessions is kept for calls that cannot ask for input.
    maxExclusive: Math.max(1, maxSessions - Math.ceil(maxSessions / 4)),
    sharePrincipals: config.upstream.stateless,
    idleMs: config.modern.pool.idleMs,
    warmSpare: config.modern.pool.warmSpare && stdioUpstream,
    initializeTimeoutMs: config.timeouts.initializeMs,
    clientInfo: CLIENT_INFO,
    log: log.child({ pool: true }),
    onUnrelated,
    observe,
  });
}

/** The modern-era core over the pool, with its listen hub. */
function createModernCore(
  config: Config,
  pool: UpstreamPool,
  filters: () => FilterChain,
  log: Logger,
  replica: { sealer: Sealer; replicaId: string; replicaUrl: () => string | undefined },
): { core: ModernCore; hub: ListenHub } {
  const hub = new ListenHub(pool, log);
  const core = new ModernCore({
    pool,
    filters,
    requestTimeoutMs: config.timeouts.requestMs,
    inputTimeoutMs: config.modern.inputTimeoutMs,
    parkedPerClient: config.modern.parkedPerClient,
    ...replica,
    cache: config.modern.cache as ModernCoreOptions['cache'],
    listen: (req, ctx, reply) => hub.listen(req, ctx, reply),
    log,
  });
  return { core, hub };
}
