/**
 * What the revision adds to every complete result: `resultType`, the server's info in `_meta`,
 * and cache hints on cacheable methods. A result nothing reshapes is completed on its bytes (the
 * members written before its closing brace) and never decoded: a strict scan proved them one
 * JSON object when they were read (envelope.ts), and none of those members is there in any
 * spelling. Any other result is decoded and merged, as a reshaped one is.
 */
import { lazyAnswer, undecodedResult } from '../../jsonrpc/envelope.js';
import type { Frame, JsonRpcId } from '../../jsonrpc/message.js';
import { CACHEABLE_METHODS, META } from '../../mcp/eras.js';
import type { McpResult } from '../../transformers/contract.js';

export interface CacheHint {
  ttlMs: number;
  cacheScope: 'public' | 'private';
}

/** Cache hints per method; `default` for the others. */
export type CacheHints = Record<string, CacheHint> & { default: CacheHint };

const NEVER_CACHE: CacheHint = { ttlMs: 0, cacheScope: 'private' };
const ADDED = new Set(['resultType', '_meta', 'ttlMs', 'cacheScope']);
const CLOSE = Buffer.from('}}');

export class Completion {
  /** The server's info as JSON, per initialize result (written into every answer). */
  private readonly serverInfoJson = new WeakMap<McpResult, string>();

  constructor(public cache: CacheHints) {}

  /** The result completed; `afterInput`: shaped by the client's input, so never cached. */
  result(method: string, result: McpResult, server: McpResult, afterInput = false): McpResult {
    const out: McpResult = {
      ...result,
      resultType: 'complete',
      _meta: { ...(result._meta as object), [META.serverInfo]: server.serverInfo },
    };
    const hint = this.hint(method, afterInput);
    if (hint) {
      out.ttlMs = hint.ttlMs;
      out.cacheScope = hint.cacheScope;
    }
    return out;
  }

  /** The whole answer to request `id`, completed on the bytes of the upstream's undecoded result; undefined when it must be decoded. */
  answer(id: JsonRpcId, method: string, upstream: Frame, server: McpResult, afterInput = false): Frame | undefined {
    // An undecoded result was proven one JSON object when it was read; its members are known as they read.
    const result = undecodedResult(upstream);
    const keys = result && upstream.result!.members;
    if (!keys || keys.some((key) => ADDED.has(key))) return undefined;
    const hint = this.hint(method, afterInput);
    const cache = hint ? `,"ttlMs":${hint.ttlMs},"cacheScope":"${hint.cacheScope}"` : '';
    const added = `${keys.length === 0 ? '' : ','}"resultType":"complete","_meta":{${this.serverInfo(server)}}${cache}`;
    const bytes = Buffer.concat([
      Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":`),
      result.subarray(0, result.length - 1),
      Buffer.from(added),
      CLOSE,
    ]);
    return { msg: lazyAnswer(id, bytes), raw: bytes };
  }

  private hint(method: string, afterInput: boolean): CacheHint | undefined {
    if (!CACHEABLE_METHODS.has(method)) return undefined;
    // What a client's input shaped is never served to anyone again from a cache.
    return afterInput ? NEVER_CACHE : (this.cache[method] ?? this.cache.default);
  }

  private serverInfo(server: McpResult): string {
    let json = this.serverInfoJson.get(server);
    if (json === undefined) {
      json = server.serverInfo === undefined ? '' : `${JSON.stringify(META.serverInfo)}:${JSON.stringify(server.serverInfo)}`;
      this.serverInfoJson.set(server, json);
    }
    return json;
  }
}
