/**
 * The filter chain both eras run through: built once from the config (and again on a reload),
 * bound to a legacy session at `initialize` or to one modern request from its `_meta`. Requests
 * pass the filters in order (each sees the request the previous one rewrote), results the same
 * way (server variants' view, then content negotiation, then any filter added after them), and
 * a result no filter changed stays the upstream's bytes. Beside the filters, the tool pins
 * (src/upstream/tool-pins.ts) refuse calls to a tool whose changed definition is refused and
 * take it out of listings: here, because every request of every cell passes this chain.
 */
import type { Logger } from 'pino';
import { toJsonRpcError } from '../jsonrpc/errors.js';
import { isObject, type JsonRpcErrorObject, type JsonRpcNotification, type JsonRpcRequest } from '../jsonrpc/message.js';
import {
  CONTENT_NEGOTIATION,
  contentNegotiationFilter,
  declaredSettings,
  type ContentNegotiationSetup,
} from '../extensions/content-negotiation/filter.js';
import { extensionsOf, type Filter, type FilterContext, type RequestVerdict, type UpstreamAsk } from '../extensions/contract.js';
import { serverVariantsFilter } from '../extensions/server-variants/filter.js';
import type { VariantCatalog } from '../extensions/server-variants/scope.js';
import { SERVER_VARIANTS } from '../extensions/server-variants/variants.js';
import type { Era } from '../mcp/era.js';
import { MAX_TAGS, NOTHING_ASSIGNED, parseFeatures, parseTag, type Assigned } from '../mcp/features.js';
import type { RequestContext } from '../mcp/request-context.js';
import { targetOf } from '../mcp/requests.js';
import type { Metrics } from '../ops/metrics.js';
import type { McpResult } from '../transformers/contract.js';
import type { TagsNote } from '../ops/access-log.js';
import { resultOf, type UpstreamCall } from '../upstream/call.js';
import { ToolCatalog, type ToolView } from '../upstream/tool-catalog.js';
import { clientNameOf, Profiles, tagsInEffect, type Arrival } from './profiles.js';
import { ToolSearch } from './tool-search.js';

/**
 * What another replica needs to rebind a session's filters: the parts of the client's
 * capabilities they read, and the extensions the upstream implements itself.
 */
export interface FiltersSnapshot {
  client: Record<string, unknown>;
  upstream?: Record<string, unknown>;
  /** The tags and variant assigned at initialize (the header and the profile are not read again). */
  assigned?: Pick<Assigned, 'tags' | 'variant' | 'profile'>;
}

/**
 * The chain's verdict on a request: an error to answer, or the request rewritten, the variant (`scope`) its result
 * is viewed in, and (`finish`) the client's answer made of the shaped result of the request sent in its place.
 */
export type ChainVerdict =
  { error: JsonRpcErrorObject } | { request?: JsonRpcRequest; scope?: string; finish?(result: McpResult): McpResult } | undefined;

/**
 * The built-in filters (server variants, then content negotiation) over the config's rules and variants, then
 * `extra`; `profiles` assign tags and variants; `tools`: the upstream's tool catalog (kept across reloads).
 */
export function builtinChain(
  o: ContentNegotiationSetup & { variants: VariantCatalog; profiles?: Profiles; extra?: Filter[]; tools?: ToolCatalog },
): FilterChain {
  const filters = [serverVariantsFilter(o.variants), contentNegotiationFilter(o), ...(o.extra ?? [])];
  return new FilterChain(filters, o.counters, o.profiles, o.tools);
}

export class FilterChain {
  constructor(
    readonly filters: Filter[],
    private readonly counters?: Metrics['counters'],
    readonly profiles: Profiles = Profiles.NONE,
    /** What the filters know of the upstream's tools. */
    readonly tools: ToolCatalog = new ToolCatalog(),
  ) {}

  /**
   * The chain for a legacy session: negotiated again when its initialize passes (see
   * BoundFilters.onInitialize), with what `arrival` is assigned.
   */
  forSession(log: Logger, arrival?: Arrival): BoundFilters {
    return new BoundFilters(this, 'legacy', log, {}, NOTHING_ASSIGNED, arrival);
  }

  /** The tags and variant a modern request is assigned (its header, its profile). */
  assign(arrival: Arrival): Assigned {
    return this.profiles.assign(arrival);
  }

  /**
   * The chain for one modern request: its capabilities, what it is assigned, and what the upstream said at the
   * pooled session's initialize.
   */
  forRequest(ctx: Pick<RequestContext, 'era' | 'capabilities' | 'assigned' | 'log'>, upstream: McpResult): BoundFilters {
    const bound = new BoundFilters(this, ctx.era, ctx.log, ctx.capabilities, ctx.assigned);
    bound.learnUpstream(upstream);
    return bound;
  }

  /** A session's chain as another replica rebuilds it (see BoundFilters.snapshot). */
  restore(snapshot: FiltersSnapshot, log: Logger): BoundFilters {
    const bound = new BoundFilters(
      this,
      'legacy',
      log,
      isObject(snapshot.client) ? snapshot.client : {},
      restoredAssignment(snapshot.assigned),
    );
    bound.learnUpstream({ capabilities: { extensions: isObject(snapshot.upstream) ? snapshot.upstream : {} } });
    return bound;
  }

  countShaped(): void {
    if (this.counters) this.counters.resultsShaped++;
  }
}

/** The chain bound to one session's (or request's) negotiated state: one state per filter. */
export class BoundFilters {
  private states: unknown[] = [];
  private readonly snapshotted: FiltersSnapshot = { client: {} };
  private ask?: UpstreamAsk;
  /** What the session or request was assigned beside its own declaration (see Profiles). */
  assigned: Assigned = NOTHING_ASSIGNED;
  private inEffect: TagsNote | undefined | null = null;
  /** The upstream's tools as this session's upstream session lists them (a legacy session's own), or as modern requests share them. */
  private readonly tools: ToolView;
  /** Search instead of the catalog, for a client that asked for it (`tools=search`). */
  private search?: ToolSearch;

  /** `arrival`: how a legacy session's client came, for the assignment made at its initialize. */
  constructor(
    private readonly chain: FilterChain,
    private readonly era: Era,
    private readonly log: Logger,
    capabilities: Record<string, unknown>,
    assigned: Assigned = NOTHING_ASSIGNED,
    private readonly arrival?: Arrival,
  ) {
    this.tools = chain.tools.view(era === 'legacy' ? {} : undefined);
    this.negotiate(capabilities, assigned);
  }

  /** Reads the client's initialize params (untrusted): what it is assigned, then each filter negotiates its state. */
  onInitialize(params: Record<string, unknown> | undefined): void {
    const assigned = this.arrival
      ? this.chain.profiles.assign({ ...this.arrival, clientName: clientNameOf(params?.clientInfo) })
      : NOTHING_ASSIGNED;
    this.negotiate(isObject(params?.capabilities) ? params.capabilities : {}, assigned);
    noteAssigned(assigned, this.log);
  }

  /** What the upstream's initialize result teaches the filters (every session and modern request; nothing is sent). */
  learnUpstream(result: McpResult): void {
    const implemented = pick(extensionsOf(result), [CONTENT_NEGOTIATION, SERVER_VARIANTS]);
    if (Object.keys(implemented).length) this.snapshotted.upstream = implemented;
    this.chain.filters.forEach(
      (f, i) => f.learnUpstream && this.guarded(f, 'learnUpstream', () => f.learnUpstream!(result, this.states[i])),
    );
  }

  /** Lets the filters send requests of the proxy's own to the session's upstream (see FilterContext.ask). */
  bindUpstream(upstream: UpstreamCall, timeoutMs: number): void {
    this.ask = async (method, params) => resultOf(await upstream.call({ jsonrpc: '2.0', id: 0, method, params }, { timeoutMs }), method);
  }

  /** The tags in effect and the profile, for the access log (worked out once per negotiation). */
  tagsInEffect(): TagsNote | undefined {
    if (this.inEffect === null) this.inEffect = tagsInEffect(this.snapshotted.client, this.assigned);
    return this.inEffect;
  }

  /** What rebuilds this session's state elsewhere: small, and only what was read from the wire. */
  snapshot(): FiltersSnapshot {
    return this.snapshotted;
  }

  /** The filters' entries for `server/discover`'s `capabilities.extensions`. */
  discoverExtensions(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    this.chain.filters.forEach((f, i) => Object.assign(out, f.discover?.(this.states[i])));
    return out;
  }

  /** Each filter's verdict in order: the first error ends it; rewrites accumulate; the variant is kept as `scope`. */
  onRequest(req: JsonRpcRequest): ChainVerdict {
    // A search's own tools become the requests they stand for first: the filters check those.
    const search = this.search?.onRequest(req);
    if (search && 'error' in search) return search;
    let request = search?.request === req ? undefined : search?.request;
    let scope: string | undefined;
    const filters = this.chain.filters;
    for (let i = 0; i < filters.length; i++) {
      if (!filters[i].onRequest) continue;
      const current = request ?? req;
      const verdict: RequestVerdict = filters[i].onRequest!(current, this.context(i, current.method, targetOf(current.params), scope));
      if (!verdict) continue;
      if ('error' in verdict) return verdict;
      request = verdict.request ?? request;
      scope = verdict.variant ?? scope;
    }
    // A tool whose changed definition is refused (upstream.toolChanges: refuse), by the name the call goes upstream with.
    const call = request ?? search?.request ?? req;
    const refused = call.method === 'tools/call' ? this.chain.tools.pins?.refusal(call.params?.name) : undefined;
    if (refused) return { error: toJsonRpcError(refused, this.era) };
    // A searching session's list shows the tools it found: never one whose changed definition is refused.
    const pins = this.chain.tools.pins;
    const found = search?.finish;
    const finish =
      found && pins && req.method === 'tools/list'
        ? (result: McpResult) => {
            const listed = found(result);
            return pins.unlisted(listed) ?? listed;
          }
        : found;
    return request || scope !== undefined || finish ? { request, scope, finish } : undefined;
  }

  /** A notification the session is owed before its next answer (a search changed its list), if any. */
  announcement(): JsonRpcNotification | undefined {
    return this.search?.announce();
  }

  /** A replacement for an upstream error to a request made in `scope`, or undefined to relay it as is. */
  annotateError(error: JsonRpcErrorObject, scope: string | undefined): JsonRpcErrorObject | undefined {
    let out: JsonRpcErrorObject | undefined;
    this.chain.filters.forEach((f, i) => {
      if (f.onError) out = this.guarded(f, 'onError', () => f.onError!(out ?? error, this.context(i, '', undefined, scope))) ?? out;
    });
    return out;
  }

  /** Notifications to send instead of one that belongs to no request, or undefined to relay it as is. */
  onNotification(n: JsonRpcNotification): JsonRpcNotification[] | undefined {
    if (this.era === 'legacy' && n.method === 'notifications/tools/list_changed') this.tools.changed();
    let out: JsonRpcNotification[] | undefined;
    this.chain.filters.forEach((f, i) => {
      if (!f.onNotification) return;
      let changed = false;
      const next = (out ?? [n]).flatMap((m) => {
        const replaced = this.guarded(f, 'onNotification', () => f.onNotification!(m, this.states[i]));
        if (replaced) changed = true;
        return replaced ?? [m];
      });
      if (changed) out = next;
    });
    return out;
  }

  /**
   * Whether `learn` reads this method's results: a legacy session's every listing, as its upstream session answered
   * it, shaped or not (the pins see each definition; modern listings are learnt where they arrive).
   */
  learns(method: string): boolean {
    return method === 'tools/list' && this.era === 'legacy';
  }

  learn(method: string, result: McpResult): void {
    if (this.learns(method)) this.tools.learn(result);
  }

  /** Whether any filter would look at this request's result (an initialize result always: the filters learn from it). */
  wantsResult(method: string, name: string | undefined, scope?: string): boolean {
    if (method === 'initialize') return true;
    // A tool whose changed definition is refused is taken out of every listing.
    if (method === 'tools/list' && this.chain.tools.pins?.size.refused) return true;
    return this.chain.filters.some((f, i) => f.onResult && (f.wantsResult?.(this.context(i, method, name, scope)) ?? true));
  }

  /** A replacement result, or undefined to relay the upstream's bytes; `scope`: the request's variant. */
  shape(
    method: string,
    name: string | undefined,
    result: McpResult,
    scope?: string,
    traceparent?: string,
  ): McpResult | undefined | Promise<McpResult | undefined> {
    if (method === 'initialize') return this.initializeResult(result);
    const filters = this.chain.filters;
    let current: McpResult | undefined;
    const step = (i: number): McpResult | undefined | Promise<McpResult | undefined> => {
      for (; i < filters.length; i++) {
        const f = filters[i];
        if (!f.onResult) continue;
        const out = f.onResult(current ?? result, this.context(i, method, name, scope, traceparent, result));
        if (out instanceof Promise) {
          const next = i + 1;
          return out.then((r) => {
            current = r ?? current;
            return step(next);
          });
        }
        current = out ?? current;
      }
      if (current) this.chain.countShaped();
      return (method === 'tools/list' && this.chain.tools.pins?.unlisted(current ?? result)) || current;
    };
    return step(0);
  }

  private negotiate(capabilities: Record<string, unknown>, assigned: Assigned): void {
    this.assigned = assigned;
    this.inEffect = null;
    this.snapshotted.client = snapshotCapabilities(capabilities);
    if (assigned.tags.length || assigned.variant !== undefined || assigned.profile) {
      this.snapshotted.assigned = {
        tags: assigned.tags,
        ...(assigned.variant !== undefined ? { variant: assigned.variant } : {}),
        ...(assigned.profile ? { profile: assigned.profile } : {}),
      };
    } else delete this.snapshotted.assigned;
    this.states = this.chain.filters.map((f) => f.negotiate(capabilities, this.era, this.log, assigned));
    this.search = searches(capabilities, assigned) ? new ToolSearch(this.era === 'legacy') : undefined;
  }

  /**
   * A legacy client's initialize result: what the filters learn from it, then the result for the client
   * (undefined when none changed it).
   */
  private initializeResult(result: McpResult): McpResult | undefined {
    this.learnUpstream(result);
    let current: McpResult | undefined;
    this.chain.filters.forEach((f, i) => {
      if (f.onInitializeResult)
        current =
          this.guarded(f, 'onInitializeResult', () => f.onInitializeResult!(current ?? result, this.states[i], this.log)) ?? current;
    });
    // A searching session's list changes as it finds tools: it is told so.
    return (this.search && withToolListChanges(current ?? result)) || current;
  }

  /**
   * A hook that throws counts as "unchanged" (logged): a broken filter must not cost a client its
   * answer or a notification. Requests and results are not guarded here: their callers answer the
   * request with the error.
   */
  private guarded<T>(f: Filter, hook: string, run: () => T): T | undefined {
    try {
      return run();
    } catch (err) {
      this.log.error({ filter: f.name, hook, err: (err as Error).message }, 'a filter failed; treated as unchanged');
      return undefined;
    }
  }

  private context(
    i: number,
    method: string,
    name: string | undefined,
    variant: string | undefined,
    traceparent?: string,
    upstreamResult?: McpResult,
  ): FilterContext<unknown> {
    const { era, ask, tools, log } = this;
    return { era, method, name, variant, traceparent, upstreamResult, ask, tools, state: this.states[i], log };
  }
}

/** Whether a client searches instead of listing: its own tags, or those it was assigned, say `tools=search`. */
function searches(capabilities: Record<string, unknown>, assigned: Assigned): boolean {
  const { settings } = declaredSettings(capabilities);
  if (!settings && assigned.tags.length === 0) return false;
  return ToolSearch.asked(parseFeatures(settings?.features, capabilities, [], assigned.tags).features);
}

/** An initialize result whose tools capability, where it has one, says the list changes. */
function withToolListChanges(result: McpResult): McpResult | undefined {
  const capabilities = isObject(result.capabilities) ? result.capabilities : {};
  if (!isObject(capabilities.tools)) return undefined;
  return { ...result, capabilities: { ...capabilities, tools: { ...capabilities.tools, listChanged: true } } };
}

/** A session's assignment, said once: which profile and why, the tags, and the header's tags that were ignored. */
function noteAssigned(assigned: Assigned, log: Logger): void {
  for (const { tag, reason } of assigned.header?.ignored ?? [])
    log.warn({ tag, reason }, 'MCP-Features header: invalid feature tag ignored');
  if (assigned.tags.length || assigned.variant !== undefined) {
    log.info(
      {
        profile: assigned.profile?.name,
        why: assigned.profile?.why,
        tags: assigned.tags,
        header: assigned.header?.tags,
        variant: assigned.variant,
      },
      'tags assigned to the session',
    );
  }
}

/** An assignment from a sealed session token (made by a replica, but checked as input): malformed parts are dropped. */
function restoredAssignment(raw: unknown): Assigned {
  if (!isObject(raw)) return NOTHING_ASSIGNED;
  const tags = Array.isArray(raw.tags) ? raw.tags.slice(0, 2 * MAX_TAGS).filter((t): t is string => !('invalid' in parseTag(t))) : [];
  const profile =
    isObject(raw.profile) && typeof raw.profile.name === 'string' && typeof raw.profile.why === 'string'
      ? { name: raw.profile.name, why: raw.profile.why }
      : undefined;
  return { tags, ...(typeof raw.variant === 'string' ? { variant: raw.variant } : {}), ...(profile ? { profile } : {}) };
}

/** The capabilities the filters read: presence tags, sampling modalities, the extensions' settings. */
function snapshotCapabilities(capabilities: Record<string, unknown>): Record<string, unknown> {
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
