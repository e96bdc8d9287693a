/**
 * OpenTelemetry spans, exported over OTLP/HTTP when `tracing.otlpEndpoint` is set (off by
 * default: then there is no tracer and every caller skips tracing at the cost of one check).
 * A request span at the front is the child of the client's trace context (the `traceparent`
 * header, else `_meta.traceparent`) and the parent of what follows: the upstream call and each
 * transformer step, recorded from their measured start and duration, and the upstream's own
 * spans (its `traceparent` names the request span). Trace context travels as W3C
 * `traceparent` strings (src/ops/trace-context.ts), so nothing below the front imports this.
 */
import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, TraceFlags, type Attributes, type Span, type Tracer } from '@opentelemetry/api';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { TraceContext } from './trace-context.js';

export interface TracingConfig {
  otlpEndpoint?: string;
  serviceName: string;
}

/** One request's span at the front. */
export interface RequestSpan {
  /** Its own context, for the upstream and the child spans. */
  readonly context: TraceContext;
  end(name: string, attributes: Attributes, failed: boolean): void;
}

export class Tracing {
  private readonly tracer: Tracer;

  private constructor(
    private readonly provider: BasicTracerProvider,
    version: string,
  ) {
    this.tracer = provider.getTracer('mcp-negotiate-proxy', version);
  }

  /**
   * A tracer when an endpoint is configured; undefined (tracing off) otherwise. The OpenTelemetry
   * SDK is loaded only then: it is a fifth of the proxy's start-up time.
   */
  static async create(config: TracingConfig, version: string): Promise<Tracing | undefined> {
    if (!config.otlpEndpoint) return undefined;
    const [{ OTLPTraceExporter }, { resourceFromAttributes }, { BasicTracerProvider, BatchSpanProcessor }] = await Promise.all([
      import('@opentelemetry/exporter-trace-otlp-http'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
    ]);
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': config.serviceName, 'service.version': version }),
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: config.otlpEndpoint }), { scheduledDelayMillis: 1000 })],
    });
    return new Tracing(provider, version);
  }

  startRequest(parent: TraceContext | undefined): RequestSpan {
    const span = this.tracer.startSpan('mcp request', { kind: SpanKind.SERVER }, contextOf(parent));
    return {
      context: traceContextOfSpan(span),
      end(name, attributes, failed) {
        span.updateName(name);
        span.setAttributes(attributes);
        if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      },
    };
  }

  /** A finished child span, from when it started (performance.now()) and how long it took. */
  record(
    name: string,
    parent: TraceContext | undefined,
    startedAt: number,
    seconds: number,
    attributes: Attributes,
    failed: boolean,
  ): void {
    if (!parent) return; // only work that belongs to a traced request
    const start = performance.timeOrigin + startedAt;
    const span = this.tracer.startSpan(
      name,
      { kind: name.startsWith('upstream') ? SpanKind.CLIENT : SpanKind.INTERNAL, startTime: start, attributes },
      contextOf(parent),
    );
    if (failed) span.setStatus({ code: SpanStatusCode.ERROR });
    span.end(start + seconds * 1000);
  }

  /** Sends what is buffered and stops. */
  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }
}

function contextOf(parent: TraceContext | undefined) {
  if (!parent) return ROOT_CONTEXT;
  const [, traceId, spanId, flags] = parent.traceparent.split('-');
  return trace.setSpanContext(ROOT_CONTEXT, { traceId, spanId, traceFlags: parseInt(flags, 16) & TraceFlags.SAMPLED, isRemote: true });
}

function traceContextOfSpan(span: Span): TraceContext {
  const { traceId, spanId, traceFlags } = span.spanContext();
  return { traceparent: `00-${traceId}-${spanId}-${traceFlags.toString(16).padStart(2, '0')}` };
}
