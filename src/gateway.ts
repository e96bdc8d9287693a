/**
 * The composition root: builds each part from a validated Config through src/wiring/ (the
 * upstream side, replicas, operations, the filter chain, the legacy and modern fronts, the front
 * the config chooses) and holds them; nothing here runs per request. `start()` begins serving;
 * `close()` ends every session and reaps every child process; `reload()` takes over a new config.
 */
import type { Readable, Writable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import type { Logger } from 'pino';
import { diffConfig } from './config/reload.js';
import type { Config } from './config/schema.js';
import { describeUpstream, resolveUpstream } from './config/upstream.js';
import type { FilterChain } from './core/filters.js';
import { HeldBytes } from './core/held-bytes.js';
import type { LegacyRelays } from './core/legacy-relays.js';
import type { Filter } from './extensions/contract.js';
import { createAuthenticator, exposureProblem, type Authenticator } from './fronts/http/auth.js';
import type { HttpFront } from './fronts/http/server.js';
import type { LegacySessions } from './fronts/legacy/http.js';
import type { StdioDownstream } from './fronts/stdio.js';
import { ProxyStartError, type ProxyError } from './jsonrpc/errors.js';
import type { ServerOutcome } from './ops/metrics.js';
import type { Tracing } from './ops/tracing.js';
import type { CompiledRule } from './rules/compile.js';
import type { UpstreamEndpoint } from './upstream/connector.js';
import type { UpstreamPool } from './upstream/pool.js';
import { createFilters } from './wiring/filters.js';
import { createClientLimits, startHttp, startStdio } from './wiring/fronts.js';
import { createLegacySessions, createRelays } from './wiring/legacy.js';
import { createModernHandler, type ModernFront } from './wiring/modern.js';
import { checkUpstreamAtStart, createOperations, type Operations } from './wiring/operations.js';
import { createReplica, type Replica } from './wiring/replicas.js';
import { createAggregate, createConnector, createListCache, createUpstreamSessions } from './wiring/upstream.js';
import type { ToolCatalog } from './upstream/tool-catalog.js';
import { TOOLS_LIST_CHANGED } from './upstream/tool-pins.js';

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
  private readonly replica: Replica;
  private readonly connector: UpstreamEndpoint;
  private readonly authenticator: Authenticator;
  private readonly ops: Operations;
  /** What is held for absent clients, counted per client and in total (listen.heldBytes). */
  private readonly held: HeldBytes;
  /** The filters both eras run through, as the config says now: a reload builds them again (open legacy sessions keep theirs). */
  private filters: FilterChain;
  /** What the proxy knows of the upstream's tools: kept across reloads (it describes the upstream, not the config). */
  private readonly tools: ToolCatalog;
  private readonly pool: UpstreamPool | undefined;
  private readonly modern: ModernFront | undefined;
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
    const demoEntry = deps.demoEntry ?? fileURLToPath(new URL('./demo/main.js', import.meta.url));
    const witness = (usable: boolean, cause?: string) => this.ops.readiness.note(usable, cause);
    const lists = createListCache(config, log);
    let connector: UpstreamEndpoint;
    if (config.upstreams) {
      // Several servers: their sessions are this replica's (another replica forwards to it).
      this.replica = createReplica(config, false);
      const count = (server: string, method: string, outcome: ServerOutcome) => this.ops.metrics.countServer(server, method, outcome);
      connector = this.connector = createAggregate(config, { demoEntry, log, witness, count });
      this.target = config.upstreams.map((server) => server.name).join(', ');
    } else {
      const spec = resolveUpstream(config.upstream, demoEntry);
      this.target = describeUpstream(spec);
      this.replica = createReplica(config, spec.kind === 'http');
      const getFollowsClient = this.replica.sessionsMove;
      connector = this.connector = createConnector(config, { spec, target: this.target }, { getFollowsClient, lists, log, witness });
    }
    const replica = this.replica;
    this.authenticator = createAuthenticator(config.auth);
    const held = (this.held = new HeldBytes(config.listen.heldBytes));
    const sessions = () => this.legacySessions?.sessionCount ?? (this.stdio ? 1 : 0);
    const toolPins = () => this.tools?.pins?.size;
    const ops = (this.ops = createOperations(connector, { sessions, held, lists, toolPins, tracing: deps.tracing, log }));
    const upstream = createUpstreamSessions(config, connector, { log, observers: ops.observers, lists, counters: ops.metrics.counters });
    const { pool, shared, tools } = upstream;
    this.pool = pool;
    this.tools = tools;
    this.filters = this.buildFilters(deps.rules ?? [], config);
    this.modern =
      pool && upstream.lists && config.modern.enabled
        ? createModernHandler(
            config,
            pool,
            upstream.lists,
            connector,
            tools,
            () => this.filters,
            log.child({ era: 'modern' }),
            { sealer: replica.sealer, replicaId: replica.replicaId, replicaUrl: () => replica.address.url },
            held,
          )
        : undefined;
    // A changed tool definition announced (upstream.toolChanges): modern listeners here, legacy sessions in their relays.
    tools.pins?.onAnnounce(() => this.modern?.hub.publish(TOOLS_LIST_CHANGED, ''));
    pool?.onUnrelated((n, principal) => {
      // Before anyone hears of a list change, the answers it makes stale are gone.
      lists.heard(n);
      if (n.method === 'notifications/tools/list_changed') tools.changed();
      this.modern?.hub.publish(n, principal);
      shared?.publish(n, principal);
    });
    this.relays = createRelays(config, connector, upstream, {
      filters: () => this.filters,
      metrics: ops.metrics,
      observers: ops.observers,
    });
  }

  async start(): Promise<{ url?: string }> {
    const { config, deps, log } = this;
    const exposed = exposureProblem(config);
    if (exposed) throw new ProxyStartError(`listen.host: ${exposed}`);
    log.info({ upstream: this.target, kind: this.connector.kind }, 'upstream configured');
    // --fail-fast: nothing is served before the upstream has shown it works.
    if (deps.failFast) await this.checkAtStart();
    await this.ops.observers.countTokens(config.contentNegotiation.tokens);
    const served = config.listen.transport === 'stdio' ? (this.startStdio(), {}) : await this.startHttp();
    if (!deps.failFast) void this.checkAtStart();
    return served;
  }

  async close(): Promise<void> {
    await this.http?.drain(this.config.timeouts.shutdownGraceMs);
    await Promise.all([this.http?.close(), this.stdio?.close()]);
    this.modern?.handler.close();
    this.tools.pins?.close();
    await this.pool?.close();
    await this.connector.close();
    await this.ops.tracing?.shutdown().catch((err: Error) => this.log.warn({ err: err.message }, 'could not export the last spans'));
    this.settle(undefined);
  }

  reload(next: Config, nextRules: CompiledRule[]): { live: string[]; restart: string[] } {
    const { running, log } = this;
    const changes = diffConfig(running, next);
    this.filters = this.buildFilters(nextRules, next);
    // The pins file is read again: a changed definition the operator accepted there is served from now on.
    try {
      this.tools.pins?.reload();
    } catch (err) {
      log.error({ err: (err as Error).message }, 'tool pins not reloaded; the pins in memory stay');
    }
    // A modern section that changed beyond its cache needs a restart: nothing of it applies now.
    if (changes.live.includes('modern.cache')) this.modern?.handler.setCache(next.modern.cache);
    log.level = next.logLevel;
    if (JSON.stringify(next.contentNegotiation.tokens) !== JSON.stringify(running.contentNegotiation.tokens)) {
      this.ops.observers
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
    const { counters } = this.ops.metrics;
    return createFilters(rules, settings, {
      counters,
      observers: this.ops.observers,
      tools: this.tools,
      extra: this.deps.filters,
    });
  }

  private checkAtStart(): Promise<void> {
    const { config, deps, log, target } = this;
    return checkUpstreamAtStart(this.connector, this.ops.readiness, {
      target,
      initializeMs: config.timeouts.initializeMs,
      failFast: deps.failFast,
      log,
    });
  }

  private startStdio(): void {
    const { deps } = this;
    const input = deps.stdin ?? process.stdin;
    const output = deps.stdout ?? process.stdout;
    this.stdio = startStdio(this.config, { input, output, relays: this.relays, modern: this.modern, log: this.log });
    void this.stdio.done.then(this.settle);
  }

  private async startHttp(): Promise<{ url: string }> {
    const { config, log, replica } = this;
    const limits = createClientLimits(config, this.authenticator.enabled, log);
    const slowReaders = { ...config.listen.slowReaders, log };
    this.legacySessions = createLegacySessions(config, this.relays, replica, {
      held: this.held,
      counters: this.ops.metrics.counters,
      limits,
      slowReaders,
      log,
    });
    this.http = await startHttp(config, {
      legacy: this.legacySessions,
      modern: this.modern,
      limits,
      slowReaders,
      authenticator: this.authenticator,
      replica,
      connector: this.connector,
      ops: this.ops,
      log,
    });
    replica.address.listening(this.http.url);
    log.info({ url: this.http.url }, 'listening');
    return { url: this.http.url };
  }
}
