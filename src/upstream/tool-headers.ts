/**
 * Which tool arguments are mirrored into `Mcp-Param-*` headers (`x-mcp-header` in a tool's input
 * schema), as the HTTP front checks them and as the proxy writes them for a 2026-07-28
 * upstream. The proxy lists the upstream's tools itself when
 * nothing has yet (and again after `list_changed`), so the check never depends on a client having
 * asked for tools/list; a listing that fails refuses the call (the header would go unchecked).
 */
import { ProxyError } from '../jsonrpc/errors.js';
import { isObject, type JsonRpcRequest, type JsonRpcResponse } from '../jsonrpc/message.js';
import { modernEnvelope } from '../mcp/eras.js';
import type { RequestContext } from '../mcp/request-context.js';
import { paramHeadersOf, type ParamHeaders } from '../mcp/http-headers.js';
import type { McpResult } from '../transformers/contract.js';
import type { ModernUpstream } from './modern-http.js';
import type { UpstreamPool } from './pool.js';

/** Who asks: the upstream's tools are listed as that principal sees them. */
export type ToolAsker = Partial<Pick<RequestContext, 'principal' | 'clientKey'>>;

/** The upstream's tool list, page by page, on one upstream session held until `release`. */
export interface ToolLister {
  page(cursor: string | undefined): Promise<McpResult | undefined>;
  release(): void;
}

/** Pages of the upstream's tools/list read for the header check, at most. */
const MAX_TOOL_PAGES = 50;

export class ToolHeaders {
  /** Header name (lower case) → argument, by tool. */
  private readonly byTool = new Map<string, ParamHeaders>();
  /** A legacy tool's `execution.taskSupport`, by tool (the tasks extension: which calls may become tasks). */
  private readonly taskSupportByTool = new Map<string, string>();
  /** Whether byTool holds the upstream's whole current tool list, and the listing under way. */
  private listed = false;
  private listing: Promise<void> | undefined;
  /** Bumped by every change of the upstream's tools: a listing that started before one is stale. */
  private generation = 0;

  /** `learnt`: every page of the proxy's own listing, for what else the tools tell (the filters' output schemas). */
  constructor(private readonly o: { lister(who: ToolAsker): Promise<ToolLister>; learnt?: (result: McpResult) => void }) {}

  /** Mcp-Param-* header → argument for a tools/call (undefined for other requests, or a tool that mirrors nothing). */
  async of(req: JsonRpcRequest, who: ToolAsker): Promise<ParamHeaders | undefined> {
    if (req.method !== 'tools/call' || typeof req.params?.name !== 'string') return undefined;
    if (!this.listed) await (this.listing ??= this.listUpstream(who).finally(() => (this.listing = undefined)));
    return this.byTool.get(req.params.name);
  }

  /** A tools/call's tool's `execution.taskSupport` (`forbidden`, `optional`, `required`; undefined when it says nothing). */
  async taskSupport(req: JsonRpcRequest, who: ToolAsker): Promise<string | undefined> {
    if (typeof req.params?.name !== 'string') return undefined;
    if (!this.listed) await (this.listing ??= this.listUpstream(who).finally(() => (this.listing = undefined)));
    return this.taskSupportByTool.get(req.params.name);
  }

  /** The upstream's tool list changed: learn it again before the next check (a listing under way does not count). */
  changed(): void {
    this.listed = false;
    this.generation++;
  }

  /**
   * Notes the header-mirrored arguments of listed tools. `fresh` (the first page of the proxy's
   * own listing) forgets earlier ones; a client's listing only adds and updates, so that it can
   * never make the proxy forget the tools on pages it did not ask for.
   */
  learn(result: McpResult | undefined, fresh = false): void {
    const tools = result?.tools;
    if (!Array.isArray(tools)) return;
    if (fresh) {
      this.byTool.clear();
      this.taskSupportByTool.clear();
    }
    for (const tool of tools as Array<Record<string, unknown>>) {
      if (typeof tool?.name !== 'string') continue;
      const headers = paramHeadersOf(tool.inputSchema);
      if (headers) this.byTool.set(tool.name, headers);
      else this.byTool.delete(tool.name);
      const support = isObject(tool.execution) ? tool.execution.taskSupport : undefined;
      if (typeof support === 'string') this.taskSupportByTool.set(tool.name, support);
      else this.taskSupportByTool.delete(tool.name);
    }
  }

  /** Every page of the upstream's tools/list (at most MAX_TOOL_PAGES), as the asking principal sees it. */
  private async listUpstream(who: ToolAsker): Promise<void> {
    const lister = await this.o.lister(who);
    const generation = this.generation;
    try {
      let cursor: unknown;
      for (let page = 0; page < MAX_TOOL_PAGES; page++) {
        const result = await lister.page(cursor as string | undefined);
        if (!result) break; // no tools to list: nothing is mirrored
        this.learn(result, page === 0);
        this.o.learnt?.(result);
        cursor = result.nextCursor;
        if (typeof cursor !== 'string') break;
      }
      this.listed = generation === this.generation;
    } finally {
      lister.release();
    }
  }
}

/** Lists a modern upstream's tools as the proxy itself (no session to hold). */
export function modernToolLister(upstream: ModernUpstream, timeoutMs: number, clientInfo: unknown): ToolLister {
  return {
    async page(cursor) {
      const _meta = modernEnvelope({}, clientInfo);
      const { frame } = await upstream.send(
        {
          jsonrpc: '2.0',
          id: 'mcp-negotiate-proxy-tools',
          method: 'tools/list',
          params: cursor === undefined ? { _meta } : { cursor, _meta },
        },
        { timeoutMs },
      );
      const msg = frame.msg as JsonRpcResponse;
      if (msg.error) throw new ProxyError('UPSTREAM_PROTOCOL', `The upstream refused tools/list: ${msg.error.message}`);
      return msg.result;
    },
    release() {},
  };
}

/** Lists a legacy upstream's tools on a pooled session of the asking principal. */
export async function pooledToolLister(pool: UpstreamPool, who: ToolAsker, timeoutMs: number): Promise<ToolLister> {
  const principal = who.principal ?? '';
  const lease = await pool.acquire({ principal, clientKey: who.clientKey ?? principal, capabilities: {} });
  return {
    async page(cursor) {
      const done = await lease.client.request('tools/list', cursor === undefined ? {} : { cursor }, {}, timeoutMs).outcome;
      if ('failure' in done) throw done.failure;
      return done.response.result;
    },
    release: () => lease.release(),
  };
}
