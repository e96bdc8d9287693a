/**
 * Process-wide counters for operators, served at /metrics in the Prometheus text format.
 * One object created by the gateway and handed to the parts that count; no global state.
 */
export class Metrics {
  readonly counters = {
    sessionsStarted: 0,
    requestsRelayed: 0,
    requestTimeouts: 0,
    upstreamClosed: 0,
    resultsShaped: 0,
    transformFailures: 0,
    /** Results relayed unshaped because of contentNegotiation.limits. */
    resultsUnshaped: { size: 0, budget: 0 },
  };

  constructor(private readonly gauges: { sessions: () => number; upstreamProcesses: () => number }) {}

  /** The Prometheus text exposition (version 0.0.4). */
  render(): string {
    const c = this.counters;
    const lines: string[] = [];
    const metric = (name: string, type: 'counter' | 'gauge', help: string, value: number | Record<string, number>, label = 'reason') =>
      lines.push(
        `# HELP ${name} ${help}`,
        `# TYPE ${name} ${type}`,
        ...(typeof value === 'number' ? [`${name} ${value}`] : Object.entries(value).map(([k, v]) => `${name}{${label}="${k}"} ${v}`)),
      );
    metric('mcp_proxy_sessions_started_total', 'counter', 'Client sessions started.', c.sessionsStarted);
    metric('mcp_proxy_requests_total', 'counter', 'Client requests relayed upstream.', c.requestsRelayed);
    metric('mcp_proxy_request_timeouts_total', 'counter', 'Requests answered with a timeout error.', c.requestTimeouts);
    metric('mcp_proxy_upstream_closed_total', 'counter', 'Upstream sessions that ended under a client (exit, crash, expiry).', c.upstreamClosed);
    metric('mcp_proxy_results_shaped_total', 'counter', 'Results changed by content negotiation or a server variant.', c.resultsShaped);
    metric('mcp_proxy_transform_failures_total', 'counter', 'Transformer errors (the result passed on unchanged unless onError: fail).', c.transformFailures);
    metric('mcp_proxy_results_unshaped_total', 'counter', 'Results relayed unchanged because of a shaping limit: size (maxResultBytes) or budget (timeBudgetMs).', c.resultsUnshaped);
    metric('mcp_proxy_sessions', 'gauge', 'Open HTTP sessions.', this.gauges.sessions());
    metric('mcp_proxy_upstream_processes', 'gauge', 'Running stdio upstream processes.', this.gauges.upstreamProcesses());
    return lines.join('\n') + '\n';
  }
}
