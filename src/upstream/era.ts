/**
 * Which protocol era the upstream speaks. A Streamable HTTP upstream is asked `server/discover`
 * (2026-07-28) first: a discover result that lists the modern version makes it modern; a
 * JSON-RPC error or a refusal that is not modern makes it legacy (it is then initialized as
 * before). An upstream that cannot be reached says nothing: nothing is kept, and the next use
 * asks again. Once known, the era is kept until something shows it changed (a legacy initialize
 * refused with UnsupportedProtocolVersion, a modern request refused as legacy).
 */
import type { Logger } from 'pino';
import { ProxyError } from '../jsonrpc/errors.js';
import { isObject } from '../jsonrpc/message.js';
import { META, MODERN_VERSIONS } from '../mcp/eras.js';
import type { McpResult } from '../transformers/contract.js';
import type { ModernExchange } from './modern-http.js';

export type Era = 'legacy' | 'modern';
/** `auto`: ask the upstream; otherwise taken as configured. */
export type EraSetting = Era | 'auto';

/** What the upstream said about itself, in the shape of an initialize result (capabilities, serverInfo, instructions). */
export type UpstreamServer = McpResult;

/** What a discover exchange shows: modern (with the server), legacy, or nothing (an error status of the server itself). */
export function classifyDiscover(answer: ModernExchange): { era: 'modern'; server: UpstreamServer } | { era: 'legacy' } | undefined {
  const { status } = answer;
  if (status === 401 || status === 403 || status >= 500) return undefined;
  const msg = answer.frame.msg as { result?: Record<string, unknown>; error?: { code: number } };
  const result = msg.result;
  if (isObject(result) && Array.isArray(result.supportedVersions) && result.supportedVersions.some((v) => MODERN_VERSIONS.includes(v))) {
    return { era: 'modern', server: serverOf(result) };
  }
  return { era: 'legacy' };
}

/** A discover result as the rest of the proxy reads an upstream (serverInfo lifted out of `_meta`). */
export function serverOf(discovered: Record<string, unknown>): UpstreamServer {
  const meta = isObject(discovered._meta) ? discovered._meta : {};
  return {
    protocolVersion: MODERN_VERSIONS[0],
    capabilities: isObject(discovered.capabilities) ? discovered.capabilities : {},
    ...(meta[META.serverInfo] !== undefined ? { serverInfo: meta[META.serverInfo] } : {}),
    ...(typeof discovered.instructions === 'string' ? { instructions: discovered.instructions } : {}),
  };
}

interface Known {
  era: Era;
  server?: UpstreamServer;
}

export class UpstreamEra {
  private known: Known | undefined;
  private asking: Promise<Known> | undefined;

  /** `discover`: one server/discover exchange (rejects when the upstream cannot be reached); absent: the upstream is never asked. */
  constructor(
    private readonly setting: EraSetting,
    private readonly discover: (() => Promise<ModernExchange>) | undefined,
    private readonly log: Logger,
  ) {}

  /** The era when it is known without asking. */
  get now(): Era | undefined {
    if (this.setting !== 'auto') return this.setting;
    return this.discover ? this.known?.era : 'legacy';
  }

  /** The upstream's era, asking it when not known; an upstream that cannot be asked counts as legacy this once (its own errors then tell). */
  async resolve(): Promise<Era> {
    const now = this.now;
    if (now) return now;
    try {
      return (await this.ask()).era;
    } catch {
      return 'legacy';
    }
  }

  /** A modern upstream's discover result, asked again with `fresh` (readiness); rejects with the cause when it cannot be had. */
  async server(fresh = false): Promise<UpstreamServer> {
    const known = fresh || !this.known?.server ? await this.ask() : this.known;
    if (!known.server) throw new ProxyError('UPSTREAM_PROTOCOL', 'The upstream does not answer server/discover as a 2026-07-28 server does (upstream.era is modern)');
    return known.server;
  }

  /** Something showed the era may have changed (or was guessed wrong): ask again next time. */
  forget(why: string): void {
    if (this.setting !== 'auto' || !this.known) return;
    this.log.info({ was: this.known.era, why }, 'upstream era forgotten; asking again');
    this.known = undefined;
  }

  private ask(): Promise<Known> {
    return (this.asking ??= this.askOnce().finally(() => (this.asking = undefined)));
  }

  private async askOnce(): Promise<Known> {
    if (!this.discover) throw new ProxyError('UPSTREAM_PROTOCOL', 'This upstream cannot be asked server/discover');
    let answer: ModernExchange | undefined;
    try {
      answer = await this.discover();
    } catch (err) {
      // A server that leaves an unknown method unanswered is a legacy one; if it was only slow, its refusal of initialize asks again.
      if (!(err instanceof ProxyError && err.code === 'REQUEST_TIMEOUT')) throw err;
    }
    const outcome = answer ? classifyDiscover(answer) : { era: 'legacy' as const };
    if (!outcome) throw new ProxyError('UPSTREAM_UNREACHABLE', 'The upstream refused server/discover with an error status');
    if (this.setting === 'legacy') return { era: 'legacy' };
    const known: Known = outcome.era === 'modern' ? outcome : { era: 'legacy' };
    if (this.setting === 'auto' && this.known?.era !== known.era) this.log.info({ era: known.era }, 'upstream era');
    this.known = known;
    return known;
  }
}
