/**
 * What the proxy knows of one upstream's tools, learnt once from each tools/list page the upstream
 * answers (a client's listing or the proxy's own) and forgotten when the list changes: per tool
 * name, the arguments its input schema mirrors into `Mcp-Param-*` headers (`x-mcp-header`, which
 * the HTTP front checks and the proxy writes for a 2026-07-28 upstream), its
 * `execution.taskSupport` (which calls may become tasks), and its outputSchema (what content
 * negotiation's shaping must keep). The Mcp-Param check and task support never depend on a client
 * having listed: the proxy lists the upstream's tools itself when nothing has yet (at most 50
 * pages), and a listing that fails refuses the call (the header would go unchecked).
 *
 * What is known is held per holder: one legacy session's content negotiation learns from that
 * session's own listings (its upstream session may list other tools than its neighbours'); modern
 * requests, the bridge and the Mcp-Param checks share one view of the upstream, learnt from any
 * listing that is not a legacy session's own (one listing serves everyone, as a per-principal one
 * would cost each principal a pooled session). All holders share one bound: 10,000 tools and 8 MiB
 * (characters of tool names, output schemas as JSON, header names and paths, and 256 a holder);
 * past it the sessions' holders least recently used are forgotten (never the shared view), and tools that do not fit beside their
 * holder's are not kept (unknown: no header mirrored, and content negotiation treats them as tools
 * that may declare an outputSchema).
 *
 * Every page learnt, in every holder, is also shown to the tool pins (tool-pins.ts), whatever the catalog keeps.
 */
import { isObject, type JsonRpcRequest, type JsonRpcResponse } from '../jsonrpc/message.js';
import type { RequestContext } from '../mcp/request-context.js';
import { paramHeadersOf, type ParamHeaders } from '../mcp/http-headers.js';
import type { McpResult } from '../transformers/contract.js';
import type { UpstreamCall } from './call.js';
import type { ToolPins } from './tool-pins.js';

/** Tools kept, in all holders. */
export const MAX_TOOLS = 10_000;
/** Bytes kept, in all holders (see the file comment for what counts). */
export const MAX_BYTES = 8 * 1024 * 1024;
/** What one holder counts for beside its tools: an upstream that lists nothing still costs something to remember. */
const HOLDER_BYTES = 256;
/** Pages of the upstream's tools/list the proxy reads itself, at most. */
const MAX_TOOL_PAGES = 50;

/** What the proxy knows of one tool. */
export interface ToolFacts {
  /** Mcp-Param-* header (lower case) → argument path; absent: the tool mirrors none. */
  headers?: ParamHeaders;
  /** `execution.taskSupport` (`forbidden`, `optional`, `required`); absent: the tool says nothing. */
  taskSupport?: string;
  /** The declared outputSchema; null: the tool declares none. */
  outputSchema: Record<string, unknown> | null;
}

/** Who asks: the upstream's tools are listed as that principal sees them. */
export type ToolAsker = Partial<Pick<RequestContext, 'principal' | 'clientKey'>>;

/** The upstream's tool list, page by page, on one upstream session held until `release`. */
export interface ToolLister {
  page(cursor: string | undefined): Promise<McpResult | undefined>;
  release(): void;
}

/** One holder's tools, as the catalog sees them through it. */
export interface ToolView {
  /** What is known of a tool; undefined: it was not listed (or did not fit). */
  known(name: string): ToolFacts | undefined;
  /** A page of tools/list the upstream answered this holder; `fresh`: the first page of a whole listing (forgets the rest). */
  learn(result: McpResult | undefined, fresh?: boolean): void;
  /** The holder's list changed: forget it. */
  changed(): void;
}

interface Kept {
  facts: ToolFacts;
  bytes: number;
}

class Known {
  readonly tools = new Map<string, Kept>();
  bytes = HOLDER_BYTES;
  /** Whether `tools` holds the holder's whole current list, and the proxy's listing under way. */
  listed = false;
  listing: Promise<void> | undefined;
  /** Bumped by every change of the list: a listing that started before one is stale. */
  generation = 0;
}

export class ToolCatalog {
  /** By holder (an object standing for a legacy session, or `shared`), least recently used first. */
  private readonly holders = new Map<object, Known>();
  /** The holder of what modern requests, the bridge and the Mcp-Param checks share. */
  private readonly shared = {};
  private tools = 0;
  private bytes = 0;

  /**
   * `lister`: lists the upstream's tools as the asking principal (none: only what clients listed is known);
   * `pins`: where each listed tool's definition is pinned (none: nothing is).
   */
  constructor(private readonly o: { lister?(who: ToolAsker): Promise<ToolLister>; pins?: ToolPins } = {}) {}

  /** Where listed definitions are pinned (see tool-pins.ts). */
  get pins(): ToolPins | undefined {
    return this.o.pins;
  }

  /** Tools and bytes kept now, in all holders. */
  get size(): { tools: number; bytes: number } {
    return { tools: this.tools, bytes: this.bytes };
  }

  /** Mcp-Param-* header → argument for a tools/call (undefined for other requests, or a tool that mirrors nothing). */
  async paramHeaders(req: JsonRpcRequest, who: ToolAsker): Promise<ParamHeaders | undefined> {
    if (req.method !== 'tools/call') return undefined;
    return (await this.toolOf(req, who))?.headers;
  }

  /** A tools/call's tool's `execution.taskSupport` (undefined when it says nothing). */
  async taskSupport(req: JsonRpcRequest, who: ToolAsker): Promise<string | undefined> {
    return (await this.toolOf(req, who))?.taskSupport;
  }

  /** A page of tools/list the upstream answered a modern request, the bridge or the proxy (see ToolView.learn). */
  learn(result: McpResult | undefined, fresh = false): void {
    this.learnFor(this.shared, result, fresh);
  }

  /**
   * The upstream's tool list changed for modern requests or the bridge: the shared view is learnt again before it is
   * needed (a legacy session hears its own upstream session's changes, and forgets through its view).
   */
  changed(): void {
    this.changedFor(this.shared);
  }

  /** What a legacy session (`session`: an object standing for it) knows, or (none) the shared view. */
  view(session?: object): ToolView {
    const holder = session ?? this.shared;
    return {
      known: (name) => this.holder(holder, false)?.tools.get(name)?.facts,
      learn: (result, fresh) => this.learnFor(holder, result, fresh),
      changed: () => this.changedFor(holder),
    };
  }

  private learnFor(holder: object, result: McpResult | undefined, fresh = false): void {
    const tools = result?.tools;
    if (!Array.isArray(tools)) return;
    this.o.pins?.see(tools);
    const known = this.holder(holder, true)!;
    if (fresh) this.clear(known);
    for (const tool of tools as unknown[]) {
      if (!isObject(tool) || typeof tool.name !== 'string') continue;
      const kept = keptOf(tool);
      this.forget(known, tool.name);
      if (!kept || !this.room(known, kept.bytes)) continue;
      known.tools.set(tool.name, kept);
      known.bytes += kept.bytes;
      this.tools++;
      this.bytes += kept.bytes;
    }
  }

  private changedFor(holder: object): void {
    const known = this.holders.get(holder);
    if (!known) return;
    known.listed = false;
    known.generation++;
    this.clear(known);
  }

  /** What is known of a tools/call's tool, the upstream's tools listed first (as `who`) when they are not. */
  private async toolOf(req: JsonRpcRequest, who: ToolAsker): Promise<ToolFacts | undefined> {
    const name = req.params?.name;
    if (typeof name !== 'string') return undefined;
    let known = this.holder(this.shared, true)!;
    if (!known.listed && this.o.lister) {
      const listing = (known.listing ??= this.listUpstream(known, who).finally(() => (known.listing = undefined)));
      await listing;
      known = this.holder(this.shared, true)!;
    }
    return known.tools.get(name)?.facts;
  }

  /** Every page of the upstream's tools/list (at most MAX_TOOL_PAGES), as the asking principal sees it. */
  private async listUpstream(known: Known, who: ToolAsker): Promise<void> {
    const lister = await this.o.lister!(who);
    const generation = known.generation;
    try {
      let cursor: unknown;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const result = await lister.page(cursor as string | undefined);
        if (!result) break; // no tools to list: nothing is mirrored
        this.learn(result, page === 0);
        cursor = result.nextCursor;
        if (typeof cursor !== 'string') break;
      }
      known.listed = generation === known.generation;
    } finally {
      lister.release();
    }
  }

  /** A holder's tools (made when `make`), now the most recently used. */
  private holder(holder: object, make: boolean): Known | undefined {
    let known = this.holders.get(holder);
    if (known) this.holders.delete(holder);
    else if (make) {
      known = new Known();
      this.evict(known, HOLDER_BYTES, 0);
      this.bytes += known.bytes;
    } else return undefined;
    this.holders.set(holder, known);
    return known;
  }

  /** Whether `bytes` more fit for `known`, once holders used less recently are forgotten. */
  private room(known: Known, bytes: number): boolean {
    // A tool that would not fit even alone with its holder costs nobody else what they know.
    if (known.tools.size + 1 > MAX_TOOLS || known.bytes + bytes > MAX_BYTES) return false;
    this.evict(known, bytes, 1);
    return this.tools + 1 <= MAX_TOOLS && this.bytes + bytes <= MAX_BYTES;
  }

  /**
   * Forgets the holders used least recently (never `keep`, never the shared view) until `bytes` and `tools` more
   * fit: sessions' own listings must not cost the Mcp-Param checks and task support the shared listing they need.
   */
  private evict(keep: Known, bytes: number, tools: number): void {
    for (const [key, known] of this.holders) {
      if (this.tools + tools <= MAX_TOOLS && this.bytes + bytes <= MAX_BYTES) return;
      if (known === keep || key === this.shared) continue;
      this.clear(known);
      known.listed = false;
      this.bytes -= known.bytes;
      this.holders.delete(key);
    }
  }

  private forget(known: Known, name: string): void {
    const kept = known.tools.get(name);
    if (!kept) return;
    known.tools.delete(name);
    known.bytes -= kept.bytes;
    this.tools--;
    this.bytes -= kept.bytes;
  }

  private clear(known: Known): void {
    this.tools -= known.tools.size;
    this.bytes -= known.bytes - HOLDER_BYTES;
    known.bytes = HOLDER_BYTES;
    known.tools.clear();
  }
}

/** A listed tool's facts and what they cost to keep; undefined for one that cannot be measured (a schema too deep to serialize). */
function keptOf(tool: Record<string, unknown>): Kept | undefined {
  const name = tool.name as string;
  const outputSchema = isObject(tool.outputSchema) ? tool.outputSchema : null;
  const headers = paramHeadersOf(tool.inputSchema);
  const support = isObject(tool.execution) ? tool.execution.taskSupport : undefined;
  let bytes = name.length;
  try {
    if (outputSchema) bytes += JSON.stringify(outputSchema).length;
  } catch {
    return undefined;
  }
  for (const [header, path] of headers ?? []) bytes += header.length + path.reduce((n, part) => n + part.length + 1, 0);
  if (typeof support === 'string') bytes += support.length;
  const facts: ToolFacts = { outputSchema };
  if (headers) facts.headers = headers;
  if (typeof support === 'string') facts.taskSupport = support;
  return { facts, bytes };
}

/**
 * Lists the upstream's tools through a call of the proxy's own: to a 2026-07-28 server (`meta`: the
 * request's envelope), or on a pooled legacy session (`release` gives it back). A refusal means no
 * tools to mirror, as from a server that offers none.
 */
export function toolLister(upstream: UpstreamCall, timeoutMs: number, o: { meta?: Record<string, unknown>; release?(): void }): ToolLister {
  return {
    async page(cursor) {
      const params = { ...(cursor === undefined ? {} : { cursor }), ...(o.meta ? { _meta: o.meta } : {}) };
      const req = { jsonrpc: '2.0' as const, id: 'mcp-negotiate-proxy-tools', method: 'tools/list', params };
      const { frame } = await upstream.call(req, { timeoutMs });
      return (frame.msg as JsonRpcResponse).result;
    },
    release: () => o.release?.(),
  };
}
