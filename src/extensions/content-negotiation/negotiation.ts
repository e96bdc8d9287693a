/**
 * The negotiated context of one session and what it does to results. Built once at initialize
 * (legacy era) from the client's extension settings and capabilities; `shape` then returns a
 * replacement result, or undefined to relay the upstream's bytes untouched. A client that did
 * not declare the extension gets nothing changed, not even the initialize result.
 */
import type { Logger } from 'pino';
import { runPipeline, type PipelineLimits, type PipelineOutcome, type StepObserver } from '../../rules/run.js';
import type { CompiledRule } from '../../rules/compile.js';
import type { McpResult } from '../../transformers/contract.js';
import type { JsonRpcErrorObject, JsonRpcNotification, JsonRpcRequest } from '../../jsonrpc/message.js';
import type { Metrics } from '../../ops/metrics.js';
import { FeatureSet, parseFeatures } from '../../mcp/features.js';
import { VariantScope, type VariantCatalog } from '../server-variants/scope.js';
import { SERVER_VARIANTS } from '../server-variants/variants.js';
import { modalityTags, samplingModalities } from './modalities.js';

export const CONTENT_NEGOTIATION = 'io.modelcontextprotocol/content-negotiation';
const MAX_SETTINGS_BYTES = 4096;

/** Sees each negotiated result: as the upstream sent it, and the replacement (undefined: unchanged). */
export type TokenObserver = (method: string, name: string | undefined, before: McpResult, after: McpResult | undefined) => void;

export interface NegotiationSetup {
  rules: CompiledRule[];
  /** The configured server variants (possibly none). */
  variants: VariantCatalog;
  /** Size and time limits for reshaping one result. */
  limits?: PipelineLimits;
  /** Shared by every session: which tools were already reported as relayed unshaped (logged once each). */
  unshapedNotices?: Set<string>;
  /** Counters for /metrics. */
  counters?: Metrics['counters'];
  /** Transformer durations and failures, for /metrics and traces (with the request's traceparent). */
  observeStep?: (transformer: string, seconds: number, failed: boolean, traceparent?: string) => void;
  /** Token counts of negotiated results, for /metrics (before, and after when it changed). */
  observeTokens?: TokenObserver;
  /** Output schemas by tool name, shared by modern requests (a session keeps its own). */
  outputSchemas?: Map<string, Record<string, unknown>>;
  log: Logger;
}

/**
 * What another replica needs to rebuild a session's context: the parts of the client's
 * capabilities negotiation reads, and the extensions the upstream implements itself.
 */
export interface NegotiationSnapshot {
  client: Record<string, unknown>;
  upstream?: Record<string, unknown>;
}

/** Tools whose output schema is remembered, at most. */
const MAX_OUTPUT_SCHEMAS = 10_000;

/** Tools named in unshaped-result warnings, at most; later ones are counted but not logged. */
const MAX_NOTICES = 1000;

export class Negotiation {
  features: FeatureSet = FeatureSet.EMPTY;
  modalities: string[] = ['text'];
  /** The client declared the extension (with valid settings). */
  declared = false;
  /** The upstream speaks the extension itself: pass through, never transform twice. */
  upstreamNative = false;
  private readonly outputSchemas: Map<string, Record<string, unknown>>;
  private readonly variants: VariantScope;
  /** The server-variants payload for the initialize result, when the client declared the extension. */
  private variantsOffer: Record<string, unknown> | undefined;
  /** The upstream offers variants itself and the proxy has none configured: pass the key through. */
  private upstreamVariants = false;
  private readonly snapshotted: NegotiationSnapshot = { client: {} };

  constructor(private readonly setup: NegotiationSetup) {
    this.variants = new VariantScope(setup.variants, setup.log);
    this.outputSchemas = setup.outputSchemas ?? new Map();
  }

  /**
   * The context of one modern request: its declared capabilities (from `_meta`) and what the
   * upstream said at the pooled session's initialize. Nothing is carried between requests.
   */
  static forRequest(setup: NegotiationSetup, capabilities: Record<string, unknown>, upstream: McpResult): Negotiation {
    const n = new Negotiation(setup);
    n.onInitialize({ capabilities });
    n.learnUpstream(upstream);
    return n;
  }

  /** A session's context as another replica rebuilds it (see `snapshot`). */
  static restore(setup: NegotiationSetup, snapshot: NegotiationSnapshot): Negotiation {
    const n = new Negotiation(setup);
    n.onInitialize({ capabilities: isObject(snapshot.client) ? snapshot.client : {} });
    n.learnUpstream({ capabilities: { extensions: isObject(snapshot.upstream) ? snapshot.upstream : {} } });
    return n;
  }

  /** What rebuilds this session's context elsewhere: small, and only what was read from the wire. */
  snapshot(): NegotiationSnapshot {
    return this.snapshotted;
  }

  /** The proxy's extensions for `server/discover`: content negotiation, and the variants ranked for this request. */
  discoverExtensions(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    if (!this.upstreamNative && this.setup.rules.length > 0) out[CONTENT_NEGOTIATION] = {};
    const variants = this.variantsOffer ?? this.variants.offer();
    if (variants && !this.upstreamVariants) out[SERVER_VARIANTS] = variants;
    return out;
  }

  /**
   * An error the upstream raised for a request made in a variant names that variant
   * (`data.activeVariant`, SEP-2053), unless the upstream implements variants and speaks for itself.
   */
  annotateError(error: JsonRpcErrorObject, variant: string | undefined): JsonRpcErrorObject | undefined {
    if (variant === undefined || this.variants.upstreamNative) return undefined;
    const data = error.data ?? {};
    if (typeof data !== 'object' || data === null || Array.isArray(data) || 'activeVariant' in data) return undefined;
    return { ...error, data: { ...data, activeVariant: variant } };
  }

  onNotification(msg: JsonRpcNotification): JsonRpcNotification[] | undefined {
    return this.variants.listChanged(msg);
  }

  /** Server-variant checks for a request; see VariantScope.check. */
  onRequest(req: JsonRpcRequest): { error: JsonRpcErrorObject } | { request?: JsonRpcRequest; scope?: string } | undefined {
    if (this.upstreamVariants) return undefined;
    const check = this.variants.check(req);
    if (check && 'variant' in check) return { request: check.request, scope: check.variant };
    return check;
  }

  /** Reads the client's initialize params (untrusted: every field is checked). */
  onInitialize(params: Record<string, unknown> | undefined): void {
    const capabilities = isObject(params?.capabilities) ? params.capabilities : {};
    const settings = isObject(capabilities.extensions) ? capabilities.extensions[CONTENT_NEGOTIATION] : undefined;
    this.snapshotted.client = negotiatedCapabilities(capabilities);
    this.variantsOffer = this.variants.onInitialize(capabilities);
    const { modalities, problem } = samplingModalities(capabilities);
    this.modalities = modalities;
    if (problem) this.setup.log.warn({ problem }, 'client sampling modalities ignored');
    if (settings === undefined) return;
    if (!isObject(settings) || JSON.stringify(settings).length > MAX_SETTINGS_BYTES) {
      this.setup.log.warn('content-negotiation settings ignored: not an object, or larger than 4 KiB');
      return;
    }
    const parsed = parseFeatures(settings.features, capabilities, modalityTags(modalities));
    this.declared = true;
    this.features = parsed.features;
    for (const { tag, reason } of parsed.ignored) this.setup.log.warn({ tag, reason }, 'invalid feature tag ignored');
    this.setup.log.debug(
      {
        version: settings.version,
        requested: settings.features,
        accepted: parsed.accepted,
        ignored: parsed.ignored.map((i) => i.tag),
        features: this.features.toTags(),
        rules: this.setup.rules.filter((r) => r.features.every((f) => this.features.satisfies(f))).map((r) => r.label),
      },
      'content negotiation',
    );
  }

  /** A replacement for `result`, or undefined to keep the upstream's bytes. `variant`: the request's server variant. */
  shape(method: string, name: string | undefined, result: McpResult, variant?: string, traceparent?: string): McpResult | undefined | Promise<McpResult | undefined> {
    if (method === 'initialize') return this.initializeResult(result);
    const viewed = variant === undefined ? undefined : this.variants.view(method, result, variant);
    const current = viewed ?? result;
    if (method === 'tools/list' && this.declared) this.rememberOutputSchemas(current); // only negotiation uses them
    // Rules run for a client that negotiates content, and for any request made in a variant
    // (rules may name variants); a client with neither gets the upstream's bytes.
    const negotiating = this.declared && !this.upstreamNative && !this.features.isEmpty;
    if (!negotiating && variant === undefined) return viewed;
    const features = negotiating ? this.features : FeatureSet.EMPTY;
    const ctx = { method, name, features, variant, era: 'legacy' as const, outputSchema: name ? this.outputSchemas.get(name) : undefined, log: this.setup.log };
    const observeStep = this.setup.observeStep;
    const observe: StepObserver | undefined = observeStep && ((transformer, seconds, failed) => observeStep(transformer, seconds, failed, traceparent));
    return runPipeline(this.setup.rules, current, ctx, this.setup.limits, observe).then((o) => {
      if (o.applied.length) this.setup.log.debug({ method, name, variant, applied: o.applied }, 'result shaped');
      if (o.skipped) this.noteUnshaped(o.skipped, method, name);
      const shaped = o.result ?? viewed;
      this.setup.observeTokens?.(method, name, result, shaped);
      const counters = this.setup.counters;
      if (counters) {
        counters.transformFailures += o.failures;
        if (shaped) counters.resultsShaped++;
      }
      return shaped;
    });
  }

  /** A result relayed unshaped because of a limit: counted always, logged once per method and tool. */
  private noteUnshaped(reason: NonNullable<PipelineOutcome['skipped']>, method: string, name: string | undefined): void {
    if (this.setup.counters) this.setup.counters.resultsUnshaped[reason]++;
    const notices = this.setup.unshapedNotices;
    const key = `${reason} ${method} ${name ?? ''}`;
    if (!notices || notices.has(key) || notices.size >= MAX_NOTICES) return;
    notices.add(key);
    const limits = this.setup.limits;
    const why = reason === 'size' ? `it is larger than contentNegotiation.limits.maxResultBytes (${limits?.maxResultBytes})` : `reshaping it took longer than contentNegotiation.limits.timeBudgetMs (${limits?.timeBudgetMs} ms)`;
    this.setup.log.warn({ method, name, reason }, `result relayed unshaped: ${why}; further ones for this tool are only counted`);
  }

  /** What the upstream's initialize result says about the extensions it implements itself. */
  private learnUpstream(result: McpResult): void {
    const capabilities = isObject(result.capabilities) ? result.capabilities : {};
    const extensions = isObject(capabilities.extensions) ? capabilities.extensions : {};
    const implemented = pick(extensions, [CONTENT_NEGOTIATION, SERVER_VARIANTS]);
    if (Object.keys(implemented).length) this.snapshotted.upstream = implemented;
    const upstreamOffersVariants = extensions[SERVER_VARIANTS] !== undefined;
    this.upstreamVariants = upstreamOffersVariants && !this.setup.variants.enabled;
    this.variants.upstreamNative = upstreamOffersVariants;
    if (upstreamOffersVariants && this.setup.variants.enabled) {
      this.variantsOffer = this.variants.mergeUpstream(extensions[SERVER_VARIANTS]?.availableVariants) ?? this.variantsOffer;
    }
    if (extensions[CONTENT_NEGOTIATION] !== undefined) this.upstreamNative = true;
  }

  /** Adds what this session negotiated to the upstream's initialize result. */
  private initializeResult(result: McpResult): McpResult | undefined {
    this.learnUpstream(result);
    const withNegotiation = this.declared ? this.advertise(result) : undefined;
    if (!this.variantsOffer || this.upstreamVariants) return withNegotiation;
    const base = withNegotiation ?? result;
    const caps = base.capabilities as Record<string, any>;
    return { ...base, capabilities: { ...caps, extensions: { ...caps.extensions, [SERVER_VARIANTS]: this.variantsOffer } } };
  }

  private advertise(result: McpResult): McpResult | undefined {
    const capabilities = isObject(result.capabilities) ? result.capabilities : {};
    const extensions = isObject(capabilities.extensions) ? capabilities.extensions : {};
    if (this.upstreamNative) {
      this.setup.log.info('upstream supports content negotiation itself; passing through');
      return undefined;
    }
    const format = [...(this.features.values.get('format') ?? [])][0];
    const note = `Content negotiation: ${format ? `format=${format}` : 'default format'} in effect for this session (${this.features.toTags().join(', ')}).`;
    const instructions = typeof result.instructions === 'string' && result.instructions ? `${result.instructions}\n\n${note}` : note;
    return { ...result, capabilities: { ...capabilities, extensions: { ...extensions, [CONTENT_NEGOTIATION]: {} } }, instructions };
  }

  private rememberOutputSchemas(result: McpResult): void {
    if (!Array.isArray(result.tools)) return;
    for (const tool of result.tools as Array<Record<string, unknown>>) {
      if (typeof tool?.name !== 'string' || !isObject(tool.outputSchema)) continue;
      if (this.outputSchemas.size >= MAX_OUTPUT_SCHEMAS && !this.outputSchemas.has(tool.name)) continue;
      this.outputSchemas.set(tool.name, tool.outputSchema);
    }
  }
}

/** The capabilities the negotiated context is built from: presence tags, sampling modalities, the extensions' settings. */
function negotiatedCapabilities(capabilities: Record<string, any>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const name of ['elicitation', 'roots', 'tasks']) if (capabilities[name] !== undefined && capabilities[name] !== null) out[name] = {};
  if (isObject(capabilities.sampling)) out.sampling = pick(capabilities.sampling, ['supportedModalities']);
  else if (capabilities.sampling !== undefined && capabilities.sampling !== null) out.sampling = {};
  if (isObject(capabilities.extensions)) out.extensions = pick(capabilities.extensions, [CONTENT_NEGOTIATION, SERVER_VARIANTS]);
  return out;
}

function pick(from: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key of keys) if (from[key] !== undefined) out[key] = from[key];
  return out;
}

function isObject(v: unknown): v is Record<string, any> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
