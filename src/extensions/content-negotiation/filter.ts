/**
 * Content negotiation as a filter: the feature tags and sampling modalities a client declares
 * (at initialize, or in a modern request's `_meta`), the extension advertised back, and results
 * reshaped by the rules. A client that declared nothing, or an upstream that implements the
 * extension itself, gets results unchanged; a request made in a server variant runs the rules
 * too (rules may name variants).
 */
import type { Logger } from 'pino';
import { isObject } from '../../jsonrpc/message.js';
import { FeatureSet, parseFeatures, parseTag } from '../../mcp/features.js';
import type { Metrics } from '../../ops/metrics.js';
import type { CompiledRule } from '../../rules/compile.js';
import { ruleMatches, runPipeline, type PipelineLimits, type PipelineOutcome, type StepObserver } from '../../rules/run.js';
import { actedOn, tagsNotActedOn } from '../../rules/tags.js';
import type { McpResult } from '../../transformers/contract.js';
import type { ToolView } from '../../upstream/tool-catalog.js';
import { extensionsOf, type Filter, type FilterContext, type UpstreamAsk } from '../contract.js';
import { modalityTags, samplingModalities } from './modalities.js';
import { shownSchemas } from './shown-schemas.js';

export const CONTENT_NEGOTIATION = 'io.modelcontextprotocol/content-negotiation';
const MAX_SETTINGS_BYTES = 4096;
/** Tools named in unshaped-result warnings, at most; later ones are counted but not logged. */
const MAX_NOTICES = 1000;
/** Pages of the upstream's tools/list the proxy reads itself to learn a session's output schemas, at most. */
const MAX_TOOL_PAGES = 10;
/** How long a result waits for that listing: the upstream has answered the call already, and its client is waiting. */
const LISTING_WAIT_MS = 5000;
const LISTED = Promise.resolve();

export interface ContentNegotiationSetup {
  rules: CompiledRule[];
  /** Size and time limits for reshaping one result. */
  limits?: PipelineLimits;
  /** Counters for /metrics. */
  counters?: Metrics['counters'];
  /** Transformer durations and failures, for /metrics and traces (with the request's traceparent). */
  observeStep?: (transformer: string, seconds: number, failed: boolean, traceparent?: string) => void;
  /** Token counts of negotiated results, for /metrics (before, and after when it changed). */
  observeTokens?: TokenObserver;
}

/** Sees each negotiated result: as the rules got it, and the replacement (undefined: unchanged). */
export type TokenObserver = (method: string, name: string | undefined, before: McpResult, after: McpResult | undefined) => void;

export interface NegotiatedContent {
  features: FeatureSet;
  modalities: string[];
  /** The client declared the extension (with valid settings). */
  declared: boolean;
  /** The upstream speaks the extension itself: pass through, never transform twice. */
  upstreamNative: boolean;
  /** The proxy's own listing of the session's tools, once started (one per session, whatever it found). */
  listing?: Promise<void>;
}

export function contentNegotiationFilter(setup: ContentNegotiationSetup): Filter<NegotiatedContent> {
  const shape = resultShaper(setup);

  return {
    name: 'content-negotiation',
    negotiate(capabilities, era, log, assigned) {
      const state: NegotiatedContent = {
        features: FeatureSet.EMPTY,
        modalities: ['text'],
        declared: false,
        upstreamNative: false,
      };
      const { modalities, problem } = samplingModalities(capabilities);
      state.modalities = modalities;
      if (problem) log.warn({ problem }, 'client sampling modalities ignored');
      const { settings, ignored } = declaredSettings(capabilities);
      if (ignored) log.warn('content-negotiation settings ignored: not an object, or larger than 4 KiB');
      // Tags its host or the operator assigned put a client that declared nothing in the extension too.
      if (!settings && assigned.tags.length === 0) return state;
      const parsed = parseFeatures(settings?.features, capabilities, modalityTags(modalities), assigned.tags);
      state.declared = true;
      state.features = parsed.features;
      for (const { tag, reason } of parsed.ignored) log.warn({ tag, reason }, 'invalid feature tag ignored');
      // A legacy session says it once; modern requests would say it on every request, so only in debug (and only then is it worked out).
      const level = era === 'legacy' ? 'info' : 'debug';
      const unused = log.isLevelEnabled(level) ? tagsNotActedOn(setup.rules, parsed.accepted) : [];
      if (unused.length) log[level]({ tags: unused }, 'feature tags no rule acts on: results are not shaped for them');
      log.debug(
        {
          version: settings?.version,
          requested: settings?.features,
          accepted: parsed.accepted,
          ignored: parsed.ignored.map((i) => i.tag),
          assigned: assigned.tags,
          overridden: parsed.overridden,
          features: state.features.toTags(),
          rules: setup.rules.filter((r) => r.features.every((f) => state.features.satisfies(f))).map((r) => r.label),
        },
        'content negotiation',
      );
      return state;
    },
    learnUpstream(result, state) {
      if (extensionsOf(result)[CONTENT_NEGOTIATION] !== undefined) state.upstreamNative = true;
    },
    onInitializeResult(result, state, log) {
      if (!state.declared) return undefined;
      if (state.upstreamNative) {
        log.info('upstream supports content negotiation itself; passing through');
        return undefined;
      }
      return advertise(result, state.features, setup.rules);
    },
    discover(state) {
      return !state.upstreamNative && setup.rules.length > 0 ? { [CONTENT_NEGOTIATION]: {} } : undefined;
    },
    wantsResult({ state, method, variant }) {
      return (
        (method === 'tools/list' && state.declared) ||
        (state.declared && !state.upstreamNative && !state.features.isEmpty) ||
        variant !== undefined
      );
    },
    onResult(result, ctx) {
      const { state, method, name } = ctx;
      // Rules run for a client that negotiates content, and for any request made in a variant.
      const negotiating = state.declared && !state.upstreamNative && !state.features.isEmpty;
      if (!negotiating && ctx.variant === undefined) return undefined;
      // Whether a tool declares an outputSchema decides what shaping may drop: a session that never
      // listed its tools learns them first, once (modern requests: the proxy lists them before any call).
      // (Only when a rule would transform the result; waiting at most LISTING_WAIT_MS, once.)
      if (
        negotiating &&
        method === 'tools/call' &&
        name !== undefined &&
        ctx.ask &&
        !ctx.tools.known(name) &&
        setup.rules.some((r) => r.steps.length > 0 && ruleMatches(r, method, name, state.features, ctx.variant))
      ) {
        const listing = (state.listing ??= learnSchemas(ctx.ask, ctx.tools, ctx.log));
        const stopWaiting = () => {
          state.listing = LISTED;
        };
        return atMost(listing, LISTING_WAIT_MS, stopWaiting).then(() => shape(result, ctx, negotiating));
      }
      return shape(result, ctx, negotiating);
    },
  };
}

/**
 * The client's content-negotiation settings, when it declared the extension with an object of at most 4 KiB;
 * `ignored` when it declared something else.
 */
export function declaredSettings(capabilities: Record<string, unknown>): { settings?: Record<string, unknown>; ignored?: true } {
  const settings = isObject(capabilities.extensions) ? capabilities.extensions[CONTENT_NEGOTIATION] : undefined;
  if (settings === undefined) return {};
  return isObject(settings) && JSON.stringify(settings).length <= MAX_SETTINGS_BYTES ? { settings } : { ignored: true };
}

/** Runs the rules over one result, with the counters, logs and observers around it. */
function resultShaper(
  setup: ContentNegotiationSetup,
): (result: McpResult, ctx: FilterContext<NegotiatedContent>, negotiating: boolean) => Promise<McpResult | undefined> {
  /** Which tools were already reported as relayed unshaped (logged once each). */
  const unshapedNotices = new Set<string>();
  const noteUnshaped = (reason: NonNullable<PipelineOutcome['skipped']>, method: string, name: string | undefined, log: Logger) => {
    if (setup.counters) setup.counters.resultsUnshaped[reason]++;
    const key = `${reason} ${method} ${name ?? ''}`;
    if (unshapedNotices.has(key) || unshapedNotices.size >= MAX_NOTICES) return;
    unshapedNotices.add(key);
    const why =
      reason === 'size'
        ? `it is larger than contentNegotiation.limits.maxResultBytes (${setup.limits?.maxResultBytes})`
        : `reshaping it took longer than contentNegotiation.limits.timeBudgetMs (${setup.limits?.timeBudgetMs} ms)`;
    log.warn({ method, name, reason }, `result relayed unshaped: ${why}; further ones for this tool are only counted`);
  };

  const shownSchema = shownSchemas(setup.rules, setup.limits);

  return (result: McpResult, ctx: FilterContext<NegotiatedContent>, negotiating: boolean): Promise<McpResult | undefined> => {
    const { state, method, name } = ctx;
    const features = negotiating ? state.features : FeatureSet.EMPTY;
    const pipelineCtx = { method, name, features, variant: ctx.variant, era: ctx.era, log: ctx.log };
    const declared = name ? ctx.tools.known(name)?.outputSchema : undefined;
    // A result must satisfy the outputSchema its client is shown, which the list rules may have changed.
    const schema =
      method === 'tools/call' && name !== undefined && declared !== undefined
        ? shownSchema(name, declared, pipelineCtx)
        : Promise.resolve(declared);
    const observeStep = setup.observeStep;
    const observe: StepObserver | undefined =
      observeStep && ((transformer, seconds, failed) => observeStep(transformer, seconds, failed, ctx.traceparent));
    return schema
      .then((outputSchema) => runPipeline(setup.rules, result, { ...pipelineCtx, outputSchema }, setup.limits, observe))
      .then((o) => {
        if (o.applied.length) ctx.log.debug({ method, name, variant: ctx.variant, applied: o.applied }, 'result shaped');
        if (o.skipped) noteUnshaped(o.skipped, method, name, ctx.log);
        if (setup.counters) setup.counters.transformFailures += o.failures;
        const upstream = ctx.upstreamResult ?? result;
        setup.observeTokens?.(method, name, upstream, o.result ?? (result === upstream ? undefined : result));
        return o.result;
      });
  };
}

/**
 * The initialize result with the extension, and a note in the instructions of the tags the
 * rules act on (only those: a tag nothing honours is not announced as honoured).
 */
function advertise(result: McpResult, features: FeatureSet, rules: CompiledRule[]): McpResult {
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  const advertised = { ...result, capabilities: { ...capabilities, extensions: { ...extensionsOf(result), [CONTENT_NEGOTIATION]: {} } } };
  const honoured = features.toTags().filter((raw) => {
    const tag = parseTag(raw);
    return !('invalid' in tag) && actedOn(rules, tag);
  });
  if (honoured.length === 0) return advertised;
  const note = `Content negotiation: ${honoured.join(', ')} in effect for this session.`;
  const instructions = typeof result.instructions === 'string' && result.instructions ? `${result.instructions}\n\n${note}` : note;
  return { ...advertised, instructions };
}

/** `work`, or `ms` later whatever it did (then `onTimeout`): the work goes on, nobody waits for it. */
function atMost(work: Promise<void>, ms: number, onTimeout: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => (timer = setTimeout(() => (onTimeout(), resolve()), ms)));
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/** Every page of the upstream's tools/list (at most MAX_TOOL_PAGES), learnt by `tools`; a failure only means less is known. */
async function learnSchemas(ask: UpstreamAsk, tools: ToolView, log: Logger): Promise<void> {
  let cursor: unknown;
  try {
    for (let page = 0; page < MAX_TOOL_PAGES; page++) {
      const result = await ask('tools/list', cursor === undefined ? {} : { cursor });
      tools.learn(result, page === 0);
      cursor = result.nextCursor;
      if (typeof cursor !== 'string') return;
    }
  } catch (err) {
    log.debug({ err: (err as Error)?.message }, 'could not list the upstream tools; tools not listed keep their structuredContent');
  }
}
