/**
 * Where the request core reports what it sees, for /metrics and traces: each upstream call
 * (method, outcome, duration), each transformer step, and, when `contentNegotiation.tokens.count`
 * is on, the token counts of negotiated results (the tokenizer is loaded only then).
 */
import { clip } from './log-text.js';
import type { Metrics, UpstreamOutcome } from './metrics.js';
import { loadTokenizer, TokenMeter, type TokenCountSettings } from './token-counts.js';
import type { Tracing } from './tracing.js';

type Result = Record<string, unknown>;

export class Observers {
  private tokenMeter: TokenMeter | undefined;

  constructor(
    private readonly metrics: Metrics,
    private readonly tracing: Tracing | undefined,
  ) {}

  /** An upstream call ended (with the request's traceparent, when traced). */
  readonly upstream = (method: string, outcome: UpstreamOutcome, seconds: number, traceparent?: string): void => {
    this.metrics.observeUpstream(method, outcome, seconds);
    if (!this.tracing) return;
    // A client's method goes upstream as it came: a span is no bigger for a long one.
    const name = clip(method, 200);
    this.tracing.record(
      `upstream ${name}`,
      traceparent ? { traceparent } : undefined,
      performance.now() - seconds * 1000,
      seconds,
      { 'mcp.method': name, 'mcp.outcome': outcome },
      outcome !== 'ok',
    );
  };

  /** A transformer step ran on one result. */
  readonly step = (transformer: string, seconds: number, failed: boolean, traceparent?: string): void => {
    this.metrics.observeTransformer(transformer, seconds, failed);
    this.tracing?.record(
      `transform ${transformer}`,
      traceparent ? { traceparent } : undefined,
      performance.now() - seconds * 1000,
      seconds,
      { 'mcp.transformer': transformer },
      failed,
    );
  };

  /** A negotiated result, as the rules got it and as the client gets it (undefined: unchanged). */
  readonly tokens = (method: string, name: string | undefined, before: Result, after: Result | undefined): void => {
    this.tokenMeter?.observe(method, name, before, after);
  };

  /** Token counting on or off, as the config says now. */
  async countTokens(settings: TokenCountSettings): Promise<void> {
    if (!settings.count) return void (this.tokenMeter = undefined);
    const count = await loadTokenizer();
    this.tokenMeter = new TokenMeter(
      count,
      settings.maxChars,
      (c) => this.metrics.observeTokens(c),
      () => this.metrics.tokensNotCounted(),
    );
  }
}
