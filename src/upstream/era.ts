/**
 * Which protocol era the upstream speaks: legacy (the initialize handshake), modern (2026-07-28
 * only) or dual (both). A Streamable HTTP upstream is asked `server/discover` first: a discover
 * result that lists the modern version means it speaks 2026-07-28, and then one `initialize` of
 * the proxy's own says whether it speaks legacy too (dual) or refuses it (modern); a JSON-RPC
 * error or a refusal that is not modern makes it legacy (it is then initialized as before). An
 * upstream that cannot be reached, or answers with an error status, says nothing: nothing is
 * kept, it counts as legacy for 30 s, and a later use asks again. A stdio upstream is not asked
 * (a process started only to ask costs every legacy server a start, and some exit on any
 * request before initialize): it is legacy until it refuses the legacy handshake with
 * UnsupportedProtocolVersion, which only a modern server does. Once known, the era is kept until
 * something shows it changed.
 */
import type { Logger } from 'pino';
import { ProxyError, UNSUPPORTED_PROTOCOL_VERSION } from '../jsonrpc/errors.js';
import { isObject } from '../jsonrpc/message.js';
import type { ServerEra } from '../mcp/era.js';
import { META, MODERN_VERSIONS } from '../mcp/eras.js';
import type { McpResult } from '../transformers/contract.js';
import type { UpstreamAnswer } from './call.js';

/** `auto`: ask the upstream; otherwise taken as configured. */
export type EraSetting = ServerEra | 'auto';

/** Whether modern clients are passed through to an upstream of this era (it answers them itself). */
export function speaksModern(era: ServerEra | undefined): boolean {
  return era === 'modern' || era === 'dual';
}

/** What the upstream said about itself, in the shape of an initialize result (capabilities, serverInfo, instructions). */
export type UpstreamServer = McpResult;

/**
 * Whether the upstream refused the legacy handshake as only a 2026-07-28 server does
 * (UnsupportedProtocolVersion): its JSON-RPC error to a client's `initialize`, or the failure
 * an `initialize` of the proxy's own ended in.
 */
export function refusedAsModern(refusal: unknown): boolean {
  const code =
    refusal instanceof Error
      ? refusal instanceof ProxyError
        ? refusal.details?.upstreamCode
        : undefined
      : isObject(refusal)
        ? refusal.code
        : undefined;
  return code === UNSUPPORTED_PROTOCOL_VERSION;
}

/**
 * Whether a failed `initialize` of the proxy's own is a refusal of the legacy handshake by a
 * server that answered discover as a 2026-07-28 one: a JSON-RPC error (the revision leaves its
 * code to the server), or HTTP 400, 404 or 405 without one. Anything else (unreachable, refused
 * credentials, busy, failing, silent) says nothing.
 */
export function refusedHandshake(err: unknown): boolean {
  if (!(err instanceof ProxyError)) return false;
  return err.details?.upstreamCode !== undefined || [400, 404, 405].includes(err.details?.status as number);
}

/** What a discover exchange shows: modern (with the server), legacy, or nothing (an error status of the server itself). */
export function classifyDiscover(answer: UpstreamAnswer): { era: 'modern'; server: UpstreamServer } | { era: 'legacy' } | undefined {
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
  era: ServerEra;
  server?: UpstreamServer;
  /** Dual only because the upstream said nothing to the proxy's initialize: the next question tries again. */
  tentative?: boolean;
}

export interface UpstreamEraOptions {
  setting: EraSetting;
  /** One server/discover exchange (rejects when the upstream cannot be reached). */
  discover(): Promise<UpstreamAnswer>;
  /**
   * One initialize of the proxy's own, its session ended at once: true when the upstream took
   * it, false when it refused it (see refusedHandshake); rejects when it said nothing.
   */
  takesInitialize(): Promise<boolean>;
  /** Ask before the first use (HTTP), or take the upstream as legacy until it shows otherwise (stdio). */
  askFirst: boolean;
  log: Logger;
}

export class UpstreamEra {
  private known: Known | undefined;
  private asking: Promise<Known> | undefined;
  /** When the last question got no answer (then new sessions do not each pay for another). */
  private failedAt = -Infinity;

  constructor(private readonly o: UpstreamEraOptions) {}

  /** Whether the era is found out (`auto`), not configured. */
  get found(): boolean {
    return this.o.setting === 'auto';
  }

  /** The era when it is known without asking. */
  get now(): ServerEra | undefined {
    if (this.o.setting !== 'auto') return this.o.setting;
    return this.known?.era ?? (this.o.askFirst ? undefined : 'legacy');
  }

  /**
   * The upstream's era, asking it when not known; an upstream that cannot be asked counts as legacy this once
   * (its own errors then tell).
   */
  async resolve(): Promise<ServerEra> {
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

  /** A modern or dual upstream's discover result, asked again with `fresh` (readiness); rejects with the cause when it cannot be had. */
  async server(fresh = false): Promise<UpstreamServer> {
    const known = fresh || !this.known?.server ? await this.ask() : this.known;
    if (!known.server)
      throw new ProxyError('UPSTREAM_PROTOCOL', 'The upstream does not answer server/discover as a 2026-07-28 server does');
    return known.server;
  }

  /**
   * The one reaction to a refusal of the legacy handshake (see refusedAsModern): when the era is
   * found out and `refusal` is one, the era learns it (refusedLegacy) and the caller speaks to the
   * upstream in the 2026-07-28 era (moves the session to the bridge, or asks again); false
   * otherwise, and the refusal stands.
   */
  tookRefusal(refusal: unknown): boolean {
    if (!this.found || !refusedAsModern(refusal)) return false;
    this.refusedLegacy();
    return true;
  }

  /** The upstream refused the legacy handshake as only a modern server does: ask it again (HTTP), or take it as modern (stdio). */
  refusedLegacy(): void {
    if (this.o.setting !== 'auto') return;
    this.o.log.info(
      { was: this.now ?? 'unknown' },
      'the upstream refused initialize as a 2026-07-28 server does; speaking to it in that era',
    );
    this.known = this.o.askFirst ? undefined : { era: 'modern' };
    this.failedAt = -Infinity;
  }

  private ask(): Promise<Known> {
    return (this.asking ??= this.askOnce().finally(() => (this.asking = undefined)));
  }

  private async askOnce(): Promise<Known> {
    let answer: UpstreamAnswer | undefined;
    try {
      answer = await this.o.discover();
    } catch (err) {
      // A server that leaves an unknown method unanswered is a legacy one (if it was only slow, its
      // refusal of initialize asks again); one known to speak 2026-07-28 stays so.
      if (!(err instanceof ProxyError && err.code === 'REQUEST_TIMEOUT') || speaksModern(this.known?.era)) throw err;
    }
    const outcome = answer ? classifyDiscover(answer) : { era: 'legacy' as const };
    if (!outcome) throw new ProxyError('UPSTREAM_UNREACHABLE', `The upstream answered server/discover with HTTP ${answer!.status}`);
    const { setting } = this.o;
    if (setting === 'legacy') return { era: 'legacy' };
    if (outcome.era === 'legacy') return this.keep({ era: 'legacy' });
    if (setting !== 'auto') return this.keep({ era: setting, server: outcome.server });
    const before = this.known;
    // Whether it speaks legacy too is asked once, when it is found to speak 2026-07-28.
    if (before && speaksModern(before.era) && !before.tentative) return this.keep({ era: before.era, server: outcome.server });
    return this.keep({ ...(await this.legacyToo()), server: outcome.server });
  }

  /** Whether an upstream that speaks 2026-07-28 takes the legacy handshake too; when it says nothing, dual until asked again. */
  private async legacyToo(): Promise<{ era: 'modern' | 'dual'; tentative?: boolean }> {
    try {
      return { era: (await this.o.takesInitialize()) ? 'dual' : 'modern' };
    } catch (err) {
      this.o.log.warn(
        { err: (err as Error).message },
        'the upstream answers server/discover, and said nothing to initialize: legacy sessions try it themselves',
      );
      return { era: 'dual', tentative: true };
    }
  }

  private keep(known: Known): Known {
    if (this.o.setting === 'auto' && this.known?.era !== known.era) this.o.log.info({ era: known.era }, 'upstream era');
    this.known = known;
    return known;
  }
}
