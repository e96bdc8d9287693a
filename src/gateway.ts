/**
 * The composition root: wires the upstream connector, the pool, the filter chain, the legacy
 * relays, the modern handler and the chosen front from a validated Config; nothing here runs per
 * request. `start()` begins serving; `close()` ends every session and reaps every child process.
 */
import { hostname } from 'node:os';
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { diffConfig } from './config/reload.js';
import type { Config } from './config/schema.js';
import { describeUpstream, resolveUpstream } from './config/upstream.js';
import { builtinChain, type FilterChain, type FiltersSnapshot } from './core/filters.js';
import { HELD_KINDS, HeldBytes } from './core/held-bytes.js';
import { LegacyRelays } from './core/legacy-relays.js';
import { Profiles } from './core/profiles.js';
import type { Filter } from './extensions/contract.js';
import { VariantCatalog } from './extensions/server-variants/scope.js';
import { createAuthenticator, exposureProblem } from './fronts/http/auth.js';
import { describeLimits, perClientLimits } from './fronts/http/limit-defaults.js';
import { ClientLimits } from './fronts/http/limits.js';
import { startHttpFront, type HttpFront } from './fronts/http/server.js';
import { LegacySessions } from './fronts/legacy/http.js';
import { SessionTokens } from './fronts/legacy/session-tokens.js';
import type { ModernHandler } from './fronts/modern/handler.js';
import { ModernHttp } from './fronts/modern/http.js';
import type { ListenHub } from './fronts/modern/listen.js';
import { startStdioDownstream, type StdioDownstream } from './fronts/stdio.js';
import { ProxyError, ProxyStartError } from './jsonrpc/errors.js';
import { Metrics } from './ops/metrics.js';
import { Observers } from './ops/observers.js';
import { logWhileWaiting, seconds } from './ops/progress.js';
import { Readiness } from './ops/readiness.js';
import type { Tracing } from './ops/tracing.js';
import type { CompiledRule } from './rules/compile.js';
import { Sealer } from './sealing/sealer.js';
import { UpstreamConnector } from './upstream/connector.js';
import type { UpstreamPool } from './upstream/pool.js';
import { CLIENT_INFO, createModernHandler, createPool, createToolCatalog, replicaAddress } from './assemble.js';
import { SharedUpstreamSessions } from './upstream/shared.js';
import type { ToolCatalog } from './upstream/tool-catalog.js';

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
  /**
   * Refuse to start when the upstream fails its start-up check within `timeoutMs` (otherwise:
   * check with timeouts.initializeMs, log the outcome and serve meanwhile).
   */
  failFast?: { timeoutMs: number };
  /** Spans for the configured OTLP endpoint (Tracing.create); none = tracing off. */
  tracing?: Tracing;
}

/** A readiness answer is reused this long; a probe gets this long to initialize an upstream session. */
const READY_TTL_MS = 5_000;
const READY_PROBE_TIMEOUT_MS = 10_000;
/** How long an HTTP upstream gets to answer server/discover before it counts as legacy. */
const DISCOVER_TIMEOUT_MS = 5_000;

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
  return new ProxyGateway(config, deps);
}

class ProxyGateway implements Gateway {
  readonly done: Promise<ProxyError | undefined>;
  private settle!: (reason: ProxyError | undefined) => void;
  private readonly log: Logger;
  private readonly target: string;
  private readonly sealer: Sealer;
  private readonly replicaId: string;
  /** Legacy sessions over an HTTP upstream go on at any replica that shares the secret. */
  private readonly sessionsMove: boolean;
  private readonly replica: ReturnType<typeof replicaAddress>;
  private readonly connector: UpstreamConnector;
  private readonly readiness: Readiness;
  private readonly authenticator: ReturnType<typeof createAuthenticator>;
  private readonly metrics: Metrics;
  private readonly tracing: Tracing | undefined;
  private readonly observers: Observers;
  /** What is held for absent clients, counted per client and in total (listen.heldBytes). */
  private readonly held: HeldBytes;
  /** The filters both eras run through, as the config says now: a reload builds them again (open legacy sessions keep theirs). */
  private filters: FilterChain;
  /** What the proxy knows of the upstream's tools: kept across reloads (it describes the upstream, not the config). */
  private readonly tools: ToolCatalog;
  private readonly pool: UpstreamPool | undefined;
  private readonly modern: { handler: ModernHandler; hub: ListenHub } | undefined;
  private readonly relays: LegacyRelays;
  private running: Config;
  private legacySessions: LegacySessions | undefined;
  private http: HttpFront | undefined;
  private stdio: StdioDownstream | undefined;

  constructor(
    private readonly config: Config,
    private readonly deps: GatewayDeps,
  ) {
    const log = (this.log = deps.log);
    this.running = config;
    this.done = new Promise((resolve) => (this.settle = resolve));
    const spec = resolveUpstream(config.upstream, deps.demoEntry ?? fileURLToPath(new URL('./demo/main.js', import.meta.url)));
    this.target = describeUpstream(spec);
    const secret = config.replicas.secret ?? config.modern.stateSecret;
    this.sealer = new Sealer(secret ? [secret, ...config.replicas.previousSecrets] : []);
    this.replicaId = config.replicas.id ?? `${hostname()}:${process.pid}`;
    this.sessionsMove = this.sealer.shared && spec.kind === 'http';
    this.replica = replicaAddress(config);
    const connector = (this.connector = new UpstreamConnector({
      spec,
      target: this.target,
      getFollowsClient: this.sessionsMove,
      shutdownGraceMs: config.timeouts.shutdownGraceMs,
      clientInfo: CLIENT_INFO,
      era: config.upstream.era,
      discoverTimeoutMs: Math.min(DISCOVER_TIMEOUT_MS, config.timeouts.initializeMs),
      log,
      witness: (usable, cause) => this.readiness.note(usable, cause),
    }));
    this.readiness = new Readiness(() => connector.probe(READY_PROBE_TIMEOUT_MS, log.child({ probe: true })), READY_TTL_MS);
    this.authenticator = createAuthenticator(config.auth);
    const held = (this.held = new HeldBytes(config.listen.heldBytes));
    this.metrics = new Metrics({
      sessions: () => this.legacySessions?.sessionCount ?? (this.stdio ? 1 : 0),
      upstreamProcesses: () => connector.children.size,
      held: () => HELD_KINDS.map((kind) => ({ kind, bytes: held.bytesOf(kind), dropped: held.dropped.get(kind)! })),
    });
    this.tracing = deps.tracing;
    this.observers = new Observers(this.metrics, this.tracing);
    const sharing = config.upstream.sessions === 'shared' && spec.kind === 'stdio';
    this.pool = config.modern.enabled || sharing ? createPool(config, connector, log, this.observers) : undefined;
    const shared = this.pool && sharing ? new SharedUpstreamSessions(this.pool, config.timeouts.requestMs) : undefined;
    const tools = (this.tools = createToolCatalog(config, connector, this.pool));
    this.filters = this.buildFilters(deps.rules ?? [], config);
    this.modern =
      this.pool && config.modern.enabled
        ? createModernHandler(
            config,
            this.pool,
            connector,
            tools,
            () => this.filters,
            log.child({ era: 'modern' }),
            { sealer: this.sealer, replicaId: this.replicaId, replicaUrl: () => this.replica.url },
            held,
          )
        : undefined;
    this.pool?.onUnrelated((n, principal) => {
      if (n.method === 'notifications/tools/list_changed') tools.changed();
      this.modern?.hub.publish(n, principal);
      shared?.publish(n, principal);
    });
    this.relays = new LegacyRelays({
      connector,
      shared,
      filters: () => this.filters,
      maxProcesses: config.upstream.maxProcesses,
      requestTimeoutMs: config.timeouts.requestMs,
      initializeTimeoutMs: config.timeouts.initializeMs,
      inputTimeoutMs: config.modern.inputTimeoutMs,
      tools,
      counters: this.metrics.counters,
      observe: this.observers.upstream,
    });
  }

  async start(): Promise<{ url?: string }> {
    const { config, deps, log } = this;
    const exposed = exposureProblem(config);
    if (exposed) throw new ProxyStartError(`listen.host: ${exposed}`);
    log.info({ upstream: this.target, kind: this.connector.kind }, 'upstream configured');
    // --fail-fast: nothing is served before the upstream has shown it works.
    if (deps.failFast) await this.checkAtStart();
    await this.observers.countTokens(config.contentNegotiation.tokens);
    const served = config.listen.transport === 'stdio' ? (this.startStdio(), {}) : await this.startHttp();
    if (!deps.failFast) void this.checkAtStart();
    return served;
  }

  async close(): Promise<void> {
    await this.http?.drain(this.config.timeouts.shutdownGraceMs);
    await Promise.all([this.http?.close(), this.stdio?.close()]);
    this.modern?.handler.close();
    await this.pool?.close();
    await this.connector.close();
    await this.tracing?.shutdown().catch((err: Error) => this.log.warn({ err: err.message }, 'could not export the last spans'));
    this.settle(undefined);
  }

  reload(next: Config, nextRules: CompiledRule[]): { live: string[]; restart: string[] } {
    const { running, log } = this;
    const changes = diffConfig(running, next);
    this.filters = this.buildFilters(nextRules, next);
    // A modern section that changed beyond its cache needs a restart: nothing of it applies now.
    if (changes.live.includes('modern.cache')) this.modern?.handler.setCache(next.modern.cache);
    log.level = next.logLevel;
    if (JSON.stringify(next.contentNegotiation.tokens) !== JSON.stringify(running.contentNegotiation.tokens)) {
      this.observers
        .countTokens(next.contentNegotiation.tokens)
        .catch((err: Error) => log.error({ err: err.message }, 'token counting could not start'));
    }
    // What needs a restart is not in effect: it stays as it was, and is reported again next time.
    this.running = {
      ...next,
      ...Object.fromEntries(changes.restart.filter((key) => key in running).map((key) => [key, running[key as keyof Config]])),
    };
    return changes;
  }

  killChildrenNow(): void {
    this.connector.killChildrenNow();
  }

  private buildFilters(rules: CompiledRule[], settings: Config): FilterChain {
    const { metrics, observers } = this;
    return builtinChain({
      rules,
      variants: new VariantCatalog(settings.serverVariants),
      profiles: new Profiles(settings.profiles),
      limits: settings.contentNegotiation.limits,
      counters: metrics.counters,
      observeStep: observers.step,
      observeTokens: observers.tokens,
      tools: this.tools,
      extra: this.deps.filters,
    });
  }

  /**
   * Checks the upstream once at start-up and logs the outcome. With --fail-fast nothing is served
   * meanwhile: it has its own (shorter) time limit, progress is logged, and a failure stops the start.
   */
  private checkAtStart(): Promise<void> {
    const { log, target } = this;
    const failFast = this.deps.failFast;
    const limitMs = failFast?.timeoutMs ?? this.config.timeouts.initializeMs;
    const probe = this.connector.probe(limitMs, log.child({ probe: true }));
    const watched = failFast
      ? logWhileWaiting(probe, limitMs, log, (waited, limit) => `waiting for the upstream to answer initialize (${waited} of ${limit})…`)
      : probe;
    return watched.then(
      () => {
        this.readiness.note(true);
        log.info({ upstream: target }, 'upstream ready');
      },
      (err: Error) => {
        this.readiness.note(false, err.message);
        log.error({ upstream: target, cause: err.message }, 'upstream not ready: sessions will fail until it is');
        if (!failFast) return;
        const slow = err instanceof ProxyError && err.code === 'REQUEST_TIMEOUT';
        const hint = slow
          ? ` (--fail-fast-timeout ${limitMs}): raise it if the upstream needs ` +
            'longer to start (npx may download first), or check that it speaks MCP'
          : '';
        const why = slow ? `it did not answer initialize within ${seconds(limitMs)}` : err.message;
        throw new ProxyStartError(`The upstream ${target} is not usable (--fail-fast): ${why}${hint}`);
      },
    );
  }

  private startStdio(): void {
    const { config, deps } = this;
    this.stdio = startStdioDownstream({
      input: deps.stdin ?? process.stdin,
      output: deps.stdout ?? process.stdout,
      openSession: (sink, sessionLog, who) => this.relays.open(sink, sessionLog, who),
      modern: this.modern?.handler,
      limits: { maxBatch: config.listen.maxBatchSize, maxDepth: config.listen.maxJsonDepth },
      log: this.log,
    });
    void this.stdio.done.then(this.settle);
  }

  private async startHttp(): Promise<{ url: string }> {
    const { config, log } = this;
    const perClient = perClientLimits(config, this.authenticator.enabled);
    const described = describeLimits(perClient);
    log.info({ perClient: described.values, oneLocalUser: perClient.oneLocalUser }, described.message);
    const limits = new ClientLimits(perClient);
    const slowReaders = { ...config.listen.slowReaders, log };
    this.legacySessions = new LegacySessions({
      maxSessions: config.listen.maxSessions,
      sessionIdleMs: config.timeouts.sessionIdleMs,
      sessionIdleNoStreamMs: config.timeouts.sessionIdleNoStreamMs,
      resumableStreams: config.listen.resumableStreams,
      held: this.held,
      sessionMaxAgeMs: config.timeouts.sessionMaxAgeMs,
      openSession: (sink, sessionLog, who) => this.relays.open(sink, sessionLog, who),
      resumeSession: this.sessionsMove
        ? (sink, sessionLog, claims, who) => {
            const upstream = claims.upstream;
            if (!upstream?.id) return undefined;
            const snapshot = (claims.negotiation ?? { client: {} }) as FiltersSnapshot;
            return this.relays.resume(sink, sessionLog, who, { id: upstream.id, protocolVersion: upstream.protocolVersion }, snapshot);
          }
        : undefined,
      upstreamFull: () => this.relays.full(),
      evictionHelps: () => this.relays.evictionHelps(),
      counters: this.metrics.counters,
      tokens: new SessionTokens(this.sealer, this.replicaId),
      limits,
      slowReaders,
      log,
    });
    this.http = await startHttpFront({
      listen: config.listen,
      profilePaths: Object.values(config.profiles).flatMap((p) => (p.path === undefined ? [] : [p.path])),
      legacy: this.legacySessions,
      modern: this.modern && new ModernHttp(this.modern.handler, slowReaders, this.sealer),
      limits,
      auth: { authenticator: this.authenticator, config: config.auth },
      replicaUrl: () => this.replica.url,
      replicas: this.sealer.shared ? { sealer: this.sealer, replicaId: this.replicaId } : undefined,
      tracing: this.tracing,
      health: () => this.connector.report(),
      readiness: () => this.readiness.check(),
      metrics: this.metrics,
      log,
    });
    this.replica.listening(this.http.url);
    log.info({ url: this.http.url }, 'listening');
    return { url: this.http.url };
  }
}
