/**
 * One session's server variants: the ranked list it was offered at initialize, and per request
 * the active variant, its namespace checks, its cursors, and its view of list results (items
 * filtered, titles and descriptions overridden, input schemas simplified). The variant key is
 * stripped before a request goes upstream, or, when the upstream implements variants itself,
 * replaced by the variant's `upstreamVariant` (or its own id) for the backend to apply.
 */
import type { Logger } from 'pino';
import { isObject, type JsonRpcErrorObject, type JsonRpcNotification, type JsonRpcRequest } from '../../jsonrpc/message.js';
import { ProxyError, toJsonRpcError } from '../../jsonrpc/errors.js';
import { globMatcher } from '../../rules/glob.js';
import type { McpResult } from '../../transformers/contract.js';
import type { RequestVerdict } from '../contract.js';
import { CursorSigner } from './cursors.js';
import {
  advertise,
  parseVariantHints,
  rankVariants,
  SERVER_VARIANTS,
  VARIANT_META_KEY,
  variantSchema,
  type ServerVariantsConfig,
  type VariantConfig,
  type VariantHints,
} from './variants.js';

interface CompiledVariant {
  config: VariantConfig;
  tools: (name: string) => boolean;
  resources: (uri: string) => boolean;
  prompts: (name: string) => boolean;
}

const LIST_CHANGED = new Set([
  'notifications/tools/list_changed',
  'notifications/resources/list_changed',
  'notifications/prompts/list_changed',
]);

const LISTS: Record<string, { key: string; kind: 'tools' | 'resources' | 'prompts'; field: string }> = {
  'tools/list': { key: 'tools', kind: 'tools', field: 'name' },
  'prompts/list': { key: 'prompts', kind: 'prompts', field: 'name' },
  'resources/list': { key: 'resources', kind: 'resources', field: 'uri' },
  'resources/templates/list': { key: 'resourceTemplates', kind: 'resources', field: 'uriTemplate' },
};

/** Shared by every session: compiled globs and the cursor key. */
export class VariantCatalog {
  readonly variants: CompiledVariant[];
  readonly signer: CursorSigner;

  constructor(readonly config: ServerVariantsConfig) {
    this.signer = new CursorSigner(config.cursorSecret);
    this.variants = config.variants.map((v) => ({
      config: v,
      tools: matcher(v.tools),
      resources: matcher(v.resources),
      prompts: matcher(v.prompts),
    }));
  }

  get enabled(): boolean {
    return this.variants.length > 0;
  }
}

const all = () => true;

/** The fields of an upstream's ServerVariant that a variant config takes (hints: strings only). */
function pick(raw: unknown): Record<string, unknown> {
  const v = (raw ?? {}) as Record<string, unknown>;
  const hints = Object.fromEntries(Object.entries(v.hints ?? {}).filter(([, x]) => typeof x === 'string'));
  return { id: v.id, description: v.description || String(v.id), hints, status: v.status, deprecationInfo: v.deprecationInfo };
}

function matcher(g: { include: string[]; exclude: string[] }): (name: string) => boolean {
  const include = g.include.map(globMatcher);
  const exclude = g.exclude.map(globMatcher);
  return (name) => include.some((matches) => matches(name)) && !exclude.some((matches) => matches(name));
}

export class VariantScope {
  private ranked: CompiledVariant[];
  private offered: string[];
  private hints: VariantHints = { hints: {} };
  /** The client declared the extension: the default variant applies even without a key. */
  private declared = false;
  /** The upstream implements variants itself: forward each request's variant (mapped) to it. */
  upstreamNative = false;
  private readonly warned = new Set<string>();

  /** `assigned`: the variant a profile gives the client, ranked first and used when a request names none. */
  constructor(
    private readonly catalog: VariantCatalog,
    private readonly log: Logger,
    private readonly assigned?: string,
  ) {
    this.ranked = catalog.variants;
    this.offered = this.ranked.map((v) => v.config.id);
  }

  /** Ranks the variants for the client's hints; returns the payload to advertise to a client that declared the extension. */
  onInitialize(capabilities: Record<string, unknown>): Record<string, unknown> | undefined {
    if (!this.catalog.enabled) return undefined;
    const extensions = capabilities?.extensions;
    const settings = isObject(extensions) ? extensions[SERVER_VARIANTS] : undefined;
    this.hints = parseVariantHints(isObject(settings) ? settings.variantHints : undefined);
    this.declared = settings !== undefined;
    return this.rank(this.catalog.variants);
  }

  /**
   * Adds the upstream's own variants (those no configured variant maps to) as pass-through
   * views, and ranks again; returns the new payload for a client that declared the extension.
   */
  mergeUpstream(available: unknown): Record<string, unknown> | undefined {
    if (!this.catalog.config.mergeUpstream || !Array.isArray(available)) return undefined;
    const taken = new Set(this.catalog.variants.flatMap((v) => [v.config.id, v.config.upstreamVariant ?? v.config.id]));
    const extra = available.flatMap((raw) => {
      const parsed = variantSchema.safeParse({ ...pick(raw), upstreamVariant: (raw as { id?: unknown })?.id });
      return parsed.success && !taken.has(parsed.data.id) ? [{ config: parsed.data, tools: all, resources: all, prompts: all }] : [];
    });
    return extra.length ? this.rank([...this.catalog.variants, ...extra]) : undefined;
  }

  /** The ranked variants as `availableVariants` (server/discover advertises them to every client). */
  offer(): Record<string, unknown> | undefined {
    if (!this.catalog.enabled) return undefined;
    return advertise(
      this.ranked.map((v) => v.config),
      this.catalog.config.maxAdvertised,
    );
  }

  private rank(variants: CompiledVariant[]): Record<string, unknown> | undefined {
    const order = rankVariants(
      variants.map((v) => v.config),
      this.hints,
    );
    // The operator's choice for this client comes before the ranking of its hints.
    const mine = order.findIndex((v) => v.id === this.assigned);
    if (mine > 0) order.unshift(...order.splice(mine, 1));
    this.ranked = order.map((c) => variants.find((v) => v.config === c)!);
    // A client that declared the extension may use what it was shown; one that did not, any.
    if (!this.declared) {
      this.offered = this.ranked.map((v) => v.config.id);
      return undefined;
    }
    const payload = advertise(order, this.catalog.config.maxAdvertised);
    this.offered = (payload.availableVariants as Array<{ id: string }>).map((v) => v.id);
    this.log.debug({ hints: this.hints.hints, ranked: order.map((v) => v.id) }, 'server variants ranked');
    return payload;
  }

  /** Validates the variant and the names a request uses; strips the variant key before it goes upstream. */
  check(req: JsonRpcRequest): RequestVerdict {
    const meta = req.params?._meta as Record<string, unknown> | undefined;
    const requested = meta?.[VARIANT_META_KEY];
    if (!this.catalog.enabled) {
      return requested === undefined ? undefined : invalid('Server variants not supported');
    }
    // A client that knows nothing of variants gets the upstream as it is (backward compatibility), unless a profile gives it one.
    if (requested === undefined && !this.declared && this.assigned === undefined) return undefined;
    if (requested !== undefined && (typeof requested !== 'string' || !this.offered.includes(requested))) {
      return invalid('Invalid server variant', { requestedVariant: requested, availableVariants: this.offered });
    }
    const active = this.ranked.find((v) => v.config.id === (requested ?? this.ranked[0].config.id))!;
    const id = active.config.id;
    if (active.config.status === 'deprecated' && !this.warned.has(id)) {
      this.warned.add(id);
      this.log.warn({ variant: id, replacement: active.config.deprecationInfo?.replacement }, 'client uses a deprecated variant');
    }
    const unknown = this.outsideNamespace(req, active);
    if (unknown) return invalid(unknown, { activeVariant: id, hint: 'This may be available in other variants' });
    let params = req.params ?? {};
    if (typeof params.cursor === 'string' && LISTS[req.method]) {
      const c = this.catalog.signer.unwrap(params.cursor, id);
      if (!c.ok && c.reason === 'variant') {
        return invalid('Cursor invalid for requested variant', { cursorVariant: c.cursorVariant, requestedVariant: id });
      }
      if (!c.ok) return invalid('Invalid cursor', { activeVariant: id });
      params = { ...params, cursor: c.cursor };
    }
    if (this.upstreamNative) {
      // Carry the selection through, as the backend knows it.
      params = { ...params, _meta: { ...meta, [VARIANT_META_KEY]: active.config.upstreamVariant ?? id } };
    } else if (requested !== undefined) {
      const { [VARIANT_META_KEY]: _drop, ...rest } = meta!;
      params = { ...params, _meta: rest };
      if (Object.keys(rest).length === 0) delete (params as { _meta?: unknown })._meta;
    }
    return { request: params === req.params ? undefined : { ...req, params }, variant: id };
  }

  /**
   * An upstream `list_changed` as one notification per variant offered to a client that declared
   * the extension, each naming its variant in `params._meta` (the upstream's change may touch
   * every view). Undefined: relay the notification as it is.
   */
  listChanged(msg: JsonRpcNotification): JsonRpcNotification[] | undefined {
    if (!this.declared || this.upstreamNative || !LIST_CHANGED.has(msg.method)) return undefined;
    const params = msg.params ?? {};
    return this.offered.map((id) => ({ ...msg, params: { ...params, _meta: { ...(params._meta as object), [VARIANT_META_KEY]: id } } }));
  }

  /** The variant's view of a result (lists filtered and rewritten, cursors wrapped, deprecation noted). */
  view(method: string, result: McpResult, variantId: string): McpResult | undefined {
    const variant = this.ranked.find((v) => v.config.id === variantId);
    if (!variant) return undefined;
    let out: McpResult | undefined;
    const list = LISTS[method];
    if (list && Array.isArray(result[list.key])) {
      const items = (result[list.key] as Array<Record<string, unknown>>)
        .filter((item) => variant[list.kind](String(item?.[list.field] ?? '')))
        .map((item) => rewrite(item, method, variant.config));
      out = { ...result, [list.key]: items };
      if (typeof result.nextCursor === 'string') out.nextCursor = this.catalog.signer.wrap(result.nextCursor, variantId);
    }
    const info = variant.config.deprecationInfo;
    if (variant.config.status === 'deprecated' && info) {
      const base = out ?? result;
      out = { ...base, _meta: { ...(base._meta as object), [`${SERVER_VARIANTS}/deprecation`]: { variant: variantId, ...info } } };
    }
    return out;
  }

  private outsideNamespace(req: JsonRpcRequest, v: CompiledVariant): string | undefined {
    const p = req.params ?? {};
    const ref = p.ref as { type?: string; name?: string; uri?: string } | undefined;
    if (req.method === 'tools/call' && typeof p.name === 'string' && !v.tools(p.name)) return `Unknown tool: ${p.name}`;
    if (req.method === 'prompts/get' && typeof p.name === 'string' && !v.prompts(p.name)) return `Unknown prompt: ${p.name}`;
    if ((req.method === 'resources/read' || req.method === 'resources/subscribe') && typeof p.uri === 'string' && !v.resources(p.uri))
      return `Unknown resource: ${p.uri}`;
    if (req.method === 'completion/complete' && ref?.type === 'ref/prompt' && ref.name && !v.prompts(ref.name))
      return `Unknown prompt: ${ref.name}`;
    if (req.method === 'completion/complete' && ref?.type === 'ref/resource' && ref.uri && !v.resources(ref.uri))
      return `Unknown resource: ${ref.uri}`;
    return undefined;
  }
}

/** A request the variant rules refuse (-32602, with the SEP's data fields). */
function invalid(message: string, data?: Record<string, unknown>): { error: JsonRpcErrorObject } {
  return { error: toJsonRpcError(new ProxyError('INVALID_PARAMS', message, data)) };
}

function rewrite(item: Record<string, unknown>, method: string, v: VariantConfig): Record<string, unknown> {
  const name = String(item.name ?? '');
  const override = method === 'tools/list' ? v.toolOverrides[name] : method === 'prompts/list' ? v.promptOverrides[name] : undefined;
  let out = override ? { ...item, ...override } : item;
  if (method === 'tools/list' && (v.simplifySchemas.dropOptional || v.simplifySchemas.dropDescriptions) && isObject(item.inputSchema)) {
    out = { ...out, inputSchema: simplify(item.inputSchema, v.simplifySchemas) };
  }
  return out;
}

function simplify(schema: Record<string, unknown>, how: { dropOptional: boolean; dropDescriptions: boolean }): Record<string, unknown> {
  if (!isObject(schema.properties)) return schema;
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const properties = Object.fromEntries(
    Object.entries(schema.properties as Record<string, Record<string, unknown>>)
      .filter(([key]) => !how.dropOptional || required.has(key))
      .map(([key, prop]) => {
        if (!how.dropDescriptions || !isObject(prop)) return [key, prop];
        const { description: _d, ...rest } = prop;
        return [key, rest];
      }),
  );
  return { ...schema, properties };
}
