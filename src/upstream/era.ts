/**
 * Which protocol era the upstream speaks. A Streamable HTTP upstream is asked `server/discover`
 * (2026-07-28) first: a discover result that lists the modern version makes it modern; a
 * JSON-RPC error or a refusal that is not modern makes it legacy (it is then initialized as
 * before). An upstream that cannot be reached, or answers with an error status, says nothing:
 * nothing is kept, it counts as legacy for 30 s, and a later use asks again. A stdio upstream is not asked (a process started only to ask costs every legacy
 * server a start, and some exit on any request before initialize): it is legacy until it refuses
 * the legacy handshake with UnsupportedProtocolVersion, which only a modern server does. Once
 * known, the era is kept until something shows it changed.
 */
import type { Logger } from 'pino';
import { ProxyError, UNSUPPORTED_PROTOCOL_VERSION } from '../jsonrpc/errors.js';
import { isObject } from '../jsonrpc/message.js';
import { META, MODERN_VERSIONS } from '../mcp/eras.js';
import type { McpResult } from '../transformers/contract.js';
import type { ModernExchange } from './modern-http.js';

export type Era = 'legacy' | 'modern';
/** `auto`: ask the upstream; otherwise taken as configured. */
export type EraSetting = Era | 'auto';

/** What the upstream said about itself, in the shape of an initialize result (capabilities, serverInfo, instructions). */
export type UpstreamServer = McpResult;

/** Whether a failure is the upstream refusing the legacy handshake as only a 2026-07-28 server does (UnsupportedProtocolVersion). */
export function refusedAsModern(err: unknown): boolean {
  return err instanceof ProxyError && err.details?.upstreamCode === UNSUPPORTED_PROTOCOL_VERSION;
}

/** What a discover exchange shows: modern (with the server), legacy, or nothing (an error status of the server itself). */
export function classifyDiscover(answer: ModernExchange): { era: 'modern'; server: UpstreamServer } | { era: 'legacy' } | undefined {
  const { status } = answer;
  // Refused credentials, a timeout or rate limit, a failing server: nothing said about the era.
  if (status === 401 || status === 403 || status === 408 || status === 429 || status >= 500) return undefined;
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

/** After a question that got no answer, how long the upstream counts as legacy without being asked again. */
const QUIET_AFTER_FAILURE_MS = 30_000;

interface Known {
  era: Era;
  server?: UpstreamServer;
}

export class UpstreamEra {
  private known: Known | undefined;
  private asking: Promise<Known> | undefined;
  /** When the last question got no answer (then new sessions do not each pay for another). */
  private failedAt = -Infinity;

  /**
   * `discover`: one server/discover exchange (rejects when the upstream cannot be reached);
   * `askFirst`: ask before the first use (HTTP), or take the upstream as legacy until it shows otherwise (stdio).
   */
  constructor(
    private readonly setting: EraSetting,
    private readonly discover: () => Promise<ModernExchange>,
    private readonly askFirst: boolean,
    private readonly log: Logger,
  ) {}

  /** Whether the era is found out (`auto`), not configured. */
  get found(): boolean {
    return this.setting === 'auto';
  }

  /** The era when it is known without asking. */
  get now(): Era | undefined {
    if (this.setting !== 'auto') return this.setting;
    return this.known?.era ?? (this.askFirst ? undefined : 'legacy');
  }

  /** The upstream's era, asking it when not known; an upstream that cannot be asked counts as legacy this once (its own errors then tell). */
  async resolve(): Promise<Era> {
    const now = this.now;
    if (now) return now;
    if (Date.now() - this.failedAt < QUIET_AFTER_FAILURE_MS) return 'legacy';
    try {
      return (await this.ask()).era;
    } catch {
      this.failedAt = Date.now();
      return 'legacy';
    }
  }

  /** A modern upstream's discover result, asked again with `fresh` (readiness); rejects with the cause when it cannot be had. */
  async server(fresh = false): Promise<UpstreamServer> {
    const known = fresh || !this.known?.server ? await this.ask() : this.known;
    if (!known.server) throw new ProxyError('UPSTREAM_PROTOCOL', 'The upstream does not answer server/discover as a 2026-07-28 server does');
    return known.server;
  }

  /** The upstream refused the legacy handshake as only a modern server does: ask it again (HTTP), or take it as modern (stdio). */
  refusedLegacy(): void {
    if (this.setting !== 'auto') return;
    this.log.info({ was: this.now ?? 'unknown' }, 'the upstream refused initialize as a 2026-07-28 server does; speaking to it in that era');
    this.known = this.askFirst ? undefined : { era: 'modern' };
    this.failedAt = -Infinity;
  }

  private ask(): Promise<Known> {
    return (this.asking ??= this.askOnce().finally(() => (this.asking = undefined)));
  }

  private async askOnce(): Promise<Known> {
    let answer: ModernExchange | undefined;
    try {
      answer = await this.discover();
    } catch (err) {
      // A server that leaves an unknown method unanswered is a legacy one (if it was only slow, its
      // refusal of initialize asks again); one known to be modern stays so.
      if (!(err instanceof ProxyError && err.code === 'REQUEST_TIMEOUT') || this.known?.era === 'modern') throw err;
    }
    const outcome = answer ? classifyDiscover(answer) : { era: 'legacy' as const };
    if (!outcome) throw new ProxyError('UPSTREAM_UNREACHABLE', `The upstream answered server/discover with HTTP ${answer!.status}`);
    if (this.setting === 'legacy') return { era: 'legacy' };
    const known: Known = outcome.era === 'modern' ? outcome : { era: 'legacy' };
    if (this.setting === 'auto' && this.known?.era !== known.era) this.log.info({ era: known.era }, 'upstream era');
    this.known = known;
    return known;
  }
}
