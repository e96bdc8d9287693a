/**
 * What operators scrape at /metrics (Prometheus text format, prom-client): request and
 * upstream latency histograms, transformer durations and failures, sessions and upstream
 * processes, event-loop delay and the process metrics. One registry per gateway, no global
 * state. Label values come from fixed sets (MCP methods, eras, status classes, configured
 * transformer names), so cardinality stays bounded whatever clients send; the one exception,
 * the tool of token counts, is capped (src/ops/token-counts.ts).
 *
 * The counters the hot paths bump stay plain numbers (`counters`), read when scraped.
 */
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import { FastHistogram } from './histogram.js';
import type { TokenCount } from './token-counts.js';

/** How an upstream call ended: answered (ok or error), timed out, or its session gone. */
export type UpstreamOutcome = 'ok' | 'error' | 'timeout' | 'closed';

/** How a request to one of several servers ended: answered, answered with an error, or not answered. */
export type ServerOutcome = 'ok' | 'error' | 'failed';

/** Methods that get their own label value; anything else is counted as "other". */
const KNOWN_METHODS = new Set([
  'initialize',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/templates/list',
  'resources/read',
  'resources/subscribe',
  'resources/unsubscribe',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'logging/setLevel',
  'server/discover',
  'subscriptions/listen',
  'notifications',
  'response',
  'GET stream',
  'DELETE',
]);
const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The `outcome` label of an HTTP status, by its hundreds. */
const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

export type RefusalReason = 'connections' | 'per_address' | 'auth_failures' | 'rate' | 'in_flight';

export function methodLabel(method: string | undefined): string {
  if (method === undefined) return 'none';
  if (method.startsWith('batch')) return 'batch';
  if (method.startsWith('notifications/')) return 'notifications';
  return KNOWN_METHODS.has(method) ? method : 'other';
}

export class Metrics {
  readonly counters = {
    sessionsStarted: 0,
    /** Idle sessions ended to make room for a new one. */
    sessionsEvicted: 0,
    requestsRelayed: 0,
    requestTimeouts: 0,
    upstreamClosed: 0,
    resultsShaped: 0,
    transformFailures: 0,
    /** Results relayed unshaped because of contentNegotiation.limits. */
    resultsUnshaped: { size: 0, budget: 0 },
    /** Connections and requests refused by a cap before they were served, by cap. */
    refusals: {} as Partial<Record<RefusalReason, number>>,
    /** Changes of a pinned tool's definition, by the upstream.toolChanges mode that handled them. */
    toolDefinitionChanges: {} as Partial<Record<'allow' | 'announce' | 'refuse', number>>,
  };
  readonly registry = new Registry();
  private readonly requestSeconds: FastHistogram<'method' | 'era' | 'outcome'>;
  private readonly upstreamSeconds: FastHistogram<'method' | 'outcome'>;
  private readonly transformerSeconds: FastHistogram<'transformer'>;
  private readonly transformerFailures: Counter<'transformer'>;
  private readonly tokens: Counter<'direction' | 'method' | 'tool'>;
  private readonly tokensSkipped: Counter;
  private readonly serverRequests: Counter<'server' | 'method' | 'outcome'>;

  /**
   * `held`: the bytes held now for absent clients, and the items let go of to stay within
   * listen.heldBytes, by kind (task_result, stream, input_round).
   */
  constructor(gauges: {
    sessions: () => number;
    upstreamProcesses: () => number;
    held?: () => Array<{ kind: string; bytes: number; dropped: number }>;
    /** Requests answered from the list cache (hit) or with an upstream request (miss), per method. */
    lists?: () => Record<string, { hit: number; miss: number }>;
    toolPins?: () => { pinned: number; refused: number } | undefined;
    /** With several servers behind the endpoint: each one's name and whether it is usable (undefined: not known yet). */
    servers?: () => Array<{ name: string; up: boolean | undefined }>;
  }) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'mcp_proxy_' });
    const c = this.counters;
    const fromCounter = (name: string, help: string, read: () => number) =>
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(read());
        },
      });
    fromCounter('mcp_proxy_sessions_started_total', 'Client sessions started.', () => c.sessionsStarted);
    fromCounter(
      'mcp_proxy_sessions_evicted_total',
      'Idle HTTP sessions ended to make room for a new one (listen.maxSessions or upstream.maxProcesses reached).',
      () => c.sessionsEvicted,
    );
    fromCounter('mcp_proxy_requests_total', 'Client requests relayed upstream.', () => c.requestsRelayed);
    fromCounter('mcp_proxy_request_timeouts_total', 'Requests answered with a timeout error.', () => c.requestTimeouts);
    fromCounter(
      'mcp_proxy_upstream_closed_total',
      'Upstream sessions that ended under a client (exit, crash, expiry).',
      () => c.upstreamClosed,
    );
    fromCounter('mcp_proxy_results_shaped_total', 'Results changed by content negotiation or a server variant.', () => c.resultsShaped);
    fromCounter(
      'mcp_proxy_transform_failures_total',
      'Transformer errors (the result passed on unchanged unless onError: fail).',
      () => c.transformFailures,
    );
    this.serverRequests = new Counter({
      name: 'mcp_proxy_server_requests_total',
      help:
        'With several servers behind the endpoint: requests sent to each (by server name, method, and outcome: ' +
        'ok, error (the server answered with an error), failed (no answer: gone, unreachable, timed out)).',
      labelNames: ['server', 'method', 'outcome'],
      registers,
    });
    if (gauges.servers) {
      const servers = gauges.servers;
      new Gauge({
        name: 'mcp_proxy_server_up',
        help: 'With several servers behind the endpoint: 1 when a server answered last time, 0 when it could not be used, by name.',
        labelNames: ['server'],
        registers,
        collect() {
          this.reset();
          for (const { name, up } of servers()) if (up !== undefined) this.set({ server: name }, up ? 1 : 0);
        },
      });
    }
    new Counter({
      name: 'mcp_proxy_results_unshaped_total',
      help: 'Results relayed unchanged because of a shaping limit: size (maxResultBytes) or budget (timeBudgetMs).',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(c.resultsUnshaped)) this.inc({ reason }, n);
      },
    });
    new Counter({
      name: 'mcp_proxy_refusals_total',
      help:
        'Connections and requests refused by a limit before they were served: ' +
        'connections (listen.connections.max), per_address (listen.connections.perAddress), ' +
        'auth_failures (auth.failuresPerAddress), ' +
        'rate (listen.perClient.requestsPerSecond), in_flight (listen.perClient.inFlight).',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(c.refusals)) this.inc({ reason }, n);
      },
    });
    new Counter({
      name: 'mcp_proxy_tool_definition_changes_total',
      help:
        "Listings that showed a pinned tool's definition changed, by the upstream.toolChanges mode that " +
        'handled them: allow (pinned anew), announce (pinned anew, clients told), refuse (calls refused until accepted).',
      labelNames: ['mode'],
      registers,
      collect() {
        this.reset();
        for (const [mode, n] of Object.entries(c.toolDefinitionChanges)) this.inc({ mode }, n);
      },
    });
    const pins = gauges.toolPins;
    new Gauge({
      name: 'mcp_proxy_tool_pins',
      help: 'Tools whose definition is pinned (state pinned), and those of them whose calls are refused now (state refused).',
      labelNames: ['state'],
      registers,
      collect() {
        const now = pins?.() ?? { pinned: 0, refused: 0 };
        this.set({ state: 'pinned' }, now.pinned);
        this.set({ state: 'refused' }, now.refused);
      },
    });
    const connections = () => this.openConnections();
    new Gauge({
      name: 'mcp_proxy_connections',
      help: 'Open client connections to the HTTP front.',
      registers,
      collect() {
        this.set(connections());
      },
    });
    new Gauge({
      name: 'mcp_proxy_sessions',
      help: 'Open HTTP sessions.',
      registers,
      collect() {
        this.set(gauges.sessions());
      },
    });
    new Gauge({
      name: 'mcp_proxy_upstream_processes',
      help: 'Running stdio upstream processes.',
      registers,
      collect() {
        this.set(gauges.upstreamProcesses());
      },
    });
    const lists = gauges.lists;
    if (lists) {
      new Counter({
        name: 'mcp_proxy_list_cache_requests_total',
        help:
          'List requests (tools/list, prompts/list, resources/list, resources/templates/list) that may be ' +
          'answered from the list cache (upstream.listCache), by method and outcome: hit (answered from ' +
          'the cache, or by the upstream request another client started) or miss (an upstream request).',
        labelNames: ['method', 'outcome'],
        registers,
        collect() {
          this.reset();
          for (const [method, n] of Object.entries(lists())) {
            this.inc({ method, outcome: 'hit' }, n.hit);
            this.inc({ method, outcome: 'miss' }, n.miss);
          }
        },
      });
    }
    const held = gauges.held;
    if (held) {
      new Gauge({
        name: 'mcp_proxy_held_bytes',
        help:
          'Bytes held for clients that are away (listen.heldBytes), by kind: ' +
          'task_result (finished tasks not fetched), stream (resumable streams waiting ' +
          "for their client), input_round (calls waiting for the client's input).",
        labelNames: ['kind'],
        registers,
        collect() {
          for (const k of held()) this.set({ kind: k.kind }, k.bytes);
        },
      });
      new Counter({
        name: 'mcp_proxy_held_dropped_total',
        help: 'Items let go of to stay within listen.heldBytes, by kind: a task result dropped, a stream or a call given up.',
        labelNames: ['kind'],
        registers,
        collect() {
          this.reset();
          for (const k of held()) this.inc({ kind: k.kind }, k.dropped);
        },
      });
    }
    this.requestSeconds = new FastHistogram(
      'mcp_proxy_request_duration_seconds',
      'Time to answer a request to the MCP endpoint (a streamed answer: ' +
        'until its stream ended), by JSON-RPC method, protocol era and HTTP status class.',
      ['method', 'era', 'outcome'],
      LATENCY_BUCKETS,
      registers,
    );
    this.upstreamSeconds = new FastHistogram(
      'mcp_proxy_upstream_request_duration_seconds',
      'Time the upstream took to answer a request, by method and outcome (ok, error, timeout, closed).',
      ['method', 'outcome'],
      LATENCY_BUCKETS,
      registers,
    );
    this.transformerSeconds = new FastHistogram(
      'mcp_proxy_transformer_duration_seconds',
      'Time one transformer step took on one result.',
      ['transformer'],
      [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25],
      registers,
    );
    this.tokens = new Counter({
      name: 'mcp_proxy_result_tokens_total',
      help:
        'Tokens (o200k_base) of negotiated results: direction "in" as the upstream sent them, ' +
        '"out" as the client got them; by method and tool (contentNegotiation.tokens.count).',
      labelNames: ['direction', 'method', 'tool'],
      registers,
    });
    this.tokensSkipped = new Counter({
      name: 'mcp_proxy_result_tokens_skipped_total',
      help: 'Negotiated results not counted because they hold more text than contentNegotiation.tokens.maxChars.',
      registers,
    });
    this.transformerFailures = new Counter({
      name: 'mcp_proxy_transformer_failures_total',
      help: 'Transformer steps that threw, by transformer.',
      labelNames: ['transformer'],
      registers,
    });
  }

  observeRequest(method: string | undefined, era: string | undefined, status: number, seconds: number): void {
    this.requestSeconds
      .child(methodLabel(method), era ?? 'none', STATUS_CLASSES[Math.floor(status / 100)] ?? `${Math.floor(status / 100)}xx`)
      .observe(seconds);
  }

  /** Where the open client connections are counted (the HTTP front, once listening). */
  countConnections(read: () => number): void {
    this.openConnections = read;
  }

  private openConnections: () => number = () => 0;

  refused(reason: RefusalReason): void {
    this.counters.refusals[reason] = (this.counters.refusals[reason] ?? 0) + 1;
  }

  /** One request sent to one of several servers (labels: configured names and known methods only). */
  countServer(server: string, method: string, outcome: ServerOutcome): void {
    this.serverRequests.inc({ server, method: methodLabel(method), outcome });
  }

  observeUpstream(method: string, outcome: UpstreamOutcome, seconds: number): void {
    this.upstreamSeconds.child(methodLabel(method), outcome).observe(seconds);
  }

  observeTransformer(transformer: string, seconds: number, failed: boolean): void {
    this.transformerSeconds.child(transformer).observe(seconds);
    if (failed) this.transformerFailures.inc({ transformer });
  }

  observeTokens(c: TokenCount): void {
    const labels = { method: methodLabel(c.method), tool: c.tool };
    this.tokens.inc({ ...labels, direction: 'in' }, c.in);
    this.tokens.inc({ ...labels, direction: 'out' }, c.out);
  }

  tokensNotCounted(): void {
    this.tokensSkipped.inc();
  }

  /** The Prometheus text exposition. */
  render(): Promise<string> {
    return this.registry.metrics();
  }
}
