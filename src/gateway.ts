/**
 * The composition root: wires the upstream connector, the pool, the filter chain, the legacy
 * relays, the modern core and the chosen front from a validated Config; nothing here runs per
 * request. `start()` begins serving; `close()` ends every session and reaps every child process.
 */
import { hostname } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { diffConfig } from './config/reload.js';
import { clientSessions, type Config } from './config/schema.js';
import { describeUpstream, resolveUpstream } from './config/upstream.js';
import { builtinChain, type FilterChain, type FiltersSnapshot } from './core/filters.js';
import { LegacyRelays } from './core/legacy-sessions.js';
import type { Filter } from './extensions/contract.js';
import { VariantCatalog } from './extensions/server-variants/scope.js';
import { createAuthenticator, exposureProblem } from './fronts/http/auth.js';
import { ClientLimits } from './fronts/http/limits.js';
import { startHttpFront, type HttpFront } from './fronts/http/server.js';
import { LegacySessions } from './fronts/legacy/http.js';
import { SessionTokens } from './fronts/legacy/session-tokens.js';
import { ModernCore, type ModernCoreOptions } from './fronts/modern/core.js';
import { ModernHttp } from './fronts/modern/http.js';
import { ListenHub } from './fronts/modern/listen.js';
import { startStdioDownstream, type StdioDownstream } from './fronts/stdio.js';
import type { ProxyError } from './jsonrpc/errors.js';
import { Metrics } from './ops/metrics.js';
import { Observers } from './ops/observers.js';
import { Readiness } from './ops/readiness.js';
import { Tracing } from './ops/tracing.js';
import { PROXY_VERSION } from './ops/version.js';
import type { CompiledRule } from './rules/compile.js';
import { Sealer } from './sealing/sealer.js';
import { UpstreamConnector } from './upstream/connector.js';
import { UpstreamPool } from './upstream/pool.js';
import { SharedSessions } from './upstream/shared.js';

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
  const spec = resolveUpstream(config.upstream, deps.demoEntry ?? fileURLToPath(new URL('./demo/main.js', import.meta.url)));
  const target = describeUpstream(spec);
  const secret = config.replicas.secret ?? config.modern.stateSecret;
  const sealer = new Sealer(secret ? [secret, ...config.replicas.previousSecrets] : []);
  const replicaId = config.replicas.id ?? `${hostname()}:${process.pid}`;
  /** Legacy sessions over an HTTP upstream go on at any replica that shares the secret. */
  const sessionsMove = sealer.shared && spec.kind === 'http';
  const replica = replicaAddress(config);
  const connector = new UpstreamConnector({ spec, target, getFollowsClient: sessionsMove, shutdownGraceMs: config.timeouts.shutdownGraceMs, clientInfo: CLIENT_INFO, witness: (usable, cause) => readiness.note(usable, cause) });
  const readiness = new Readiness(() => connector.probe(READY_PROBE_TIMEOUT_MS, log.child({ probe: true })), READY_TTL_MS);
  let legacySessions: LegacySessions | undefined;
  let http: HttpFront | undefined;
  let stdio: StdioDownstream | undefined;
  let settle!: (reason: ProxyError | undefined) => void;
  const done = new Promise<ProxyError | undefined>((resolve) => (settle = resolve));

  const authenticator = createAuthenticator(config.auth);
  let running = config;
  const metrics = new Metrics({ sessions: () => legacySessions?.sessionCount ?? (stdio ? 1 : 0), upstreamProcesses: () => connector.children.size });
  const tracing = Tracing.create(config.tracing, PROXY_VERSION);
  const observers = new Observers(metrics, tracing);
  /** The filters both eras run through, as the config says now: a reload builds them again (open legacy sessions keep theirs). */
  const buildFilters = (rules: CompiledRule[], settings: Config): FilterChain =>
    builtinChain({ rules, variants: new VariantCatalog(settings.serverVariants), limits: settings.contentNegotiation.limits, counters: metrics.counters, observeStep: observers.step, observeTokens: observers.tokens, extra: deps.filters });
  let filters = buildFilters(deps.rules ?? [], config);

  const sharing = config.upstream.sessions === 'shared' && spec.kind === 'stdio';
  let modern: { core: ModernCore; hub: ListenHub } | undefined;
  let shared: SharedSessions | undefined;
  const pool = config.modern.enabled || sharing ? createPool(config, connector, log, observers) : undefined;
  pool?.onUnrelated((n, principal) => {
    if (n.method === 'notifications/tools/list_changed') modern?.core.toolsChanged();
    modern?.hub.publish(n, principal);
    shared?.publish(n, principal);
  });
  if (pool && config.modern.enabled) modern = createModernCore(config, pool, () => filters, log.child({ era: 'modern' }), { sealer, replicaId, replicaUrl: () => replica.url });
  if (pool && sharing) shared = new SharedSessions(pool, config.timeouts.requestMs);
  const relays = new LegacyRelays({
    connector,
    shared,
    filters: () => filters,
    maxProcesses: config.upstream.maxProcesses,
    requestTimeoutMs: config.timeouts.requestMs,
    initializeTimeoutMs: config.timeouts.initializeMs,
    counters: metrics.counters,
    observe: observers.upstream,
  });

  /** Checks the upstream once at start-up and logs the outcome; with --fail-fast a failure stops the start. */
  const checkAtStart = (): Promise<void> =>
    connector.probe(config.timeouts.initializeMs, log.child({ probe: true })).then(
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

  const startStdio = () => {
    stdio = startStdioDownstream({
      input: deps.stdin ?? process.stdin,
      output: deps.stdout ?? process.stdout,
      openSession: (sink, sessionLog, who) => relays.open(sink, sessionLog, who),
      modern: modern?.core,
      limits: { maxBatch: config.listen.maxBatchSize, maxDepth: config.listen.maxJsonDepth },
      log,
    });
    void stdio.done.then(settle);
  };

  const startHttp = async () => {
    const limits = new ClientLimits({ sessions: clientSessions(config), inFlight: config.listen.perClient.inFlight });
    const slowReaders = { ...config.listen.slowReaders, log };
    legacySessions = new LegacySessions({
      maxSessions: config.listen.maxSessions,
      sessionsPerClient: clientSessions(config),
      sessionIdleMs: config.timeouts.sessionIdleMs,
      sessionMaxAgeMs: config.timeouts.sessionMaxAgeMs,
      openSession: (sink, sessionLog, who) => relays.open(sink, sessionLog, who),
      resumeSession: sessionsMove
        ? (sink, sessionLog, claims, who) => {
            const upstream = claims.upstream;
            if (!upstream?.id) return undefined;
            const snapshot = (claims.negotiation ?? { client: {} }) as FiltersSnapshot;
            return relays.resume(sink, sessionLog, who, { id: upstream.id, protocolVersion: upstream.protocolVersion }, snapshot);
          }
        : undefined,
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
      replicaUrl: () => replica.url,
      tracing,
      health: () => connector.report(),
      readiness: () => readiness.check(),
      metrics,
      log,
    });
    replica.listening(http.url);
    log.info({ url: http.url }, 'listening');
    return { url: http.url };
  };

  return {
    done,
    async start() {
      const exposed = exposureProblem(config, authenticator.enabled);
      if (exposed) throw new ProxyStartError(exposed);
      log.info({ upstream: target, kind: spec.kind }, 'upstream configured');
      // --fail-fast: nothing is served before the upstream has shown it works.
      if (deps.failFast) await checkAtStart();
      await observers.countTokens(config.contentNegotiation.tokens);
      const served = config.listen.transport === 'stdio' ? (startStdio(), {}) : await startHttp();
      if (!deps.failFast) void checkAtStart();
      return served;
    },
    async close() {
      await http?.drain(config.timeouts.shutdownGraceMs);
      await Promise.all([http?.close(), stdio?.close()]);
      modern?.core.close();
      await pool?.close();
      await connector.close();
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
        observers.countTokens(next.contentNegotiation.tokens).catch((err: Error) => log.error({ err: err.message }, 'token counting could not start'));
      }
      // What needs a restart is not in effect: it stays as it was, and is reported again next time.
      running = { ...next, ...Object.fromEntries(changes.restart.map((key) => [key, running[key as keyof Config]])) };
      return changes;
    },
    killChildrenNow() {
      connector.killChildrenNow();
    },
  };
}

/**
 * Where other replicas reach this one: configured; bound to every interface (a container), its
 * host name, as peers on its network resolve it; else the listening URL, once known.
 */
function replicaAddress(config: Config): { url: string | undefined; listening(url: string): void } {
  const wildcard = ['0.0.0.0', '::', '[::]'].includes(config.listen.host);
  const address = {
    url: config.replicas.url ?? (wildcard && config.listen.port !== 0 ? `http://${hostname()}:${config.listen.port}${config.listen.path}` : undefined),
    listening(url: string) {
      if (!wildcard) address.url ??= url;
    },
  };
  return address;
}

/** The pool of proxy-initialized upstream sessions (modern requests, and legacy sessions with `upstream.sessions: shared`). */
function createPool(config: Config, connector: UpstreamConnector, log: Logger, observers: Observers): UpstreamPool {
  const { maxSessions, perClient } = config.modern.pool;
  return new UpstreamPool({
    connect: (events, poolLog) => connector.connect(events, poolLog),
    maxSessions,
    perClient: perClient ?? Math.max(1, Math.floor(maxSessions / 4)),
    // A quarter of the sessions is kept for calls that cannot ask for input.
    maxExclusive: Math.max(1, maxSessions - Math.ceil(maxSessions / 4)),
    sharePrincipals: config.upstream.stateless,
    idleMs: config.modern.pool.idleMs,
    warmSpare: config.modern.pool.warmSpare && connector.kind === 'stdio',
    initializeTimeoutMs: config.timeouts.initializeMs,
    clientInfo: CLIENT_INFO,
    log: log.child({ pool: true }),
    observe: observers.upstream,
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
