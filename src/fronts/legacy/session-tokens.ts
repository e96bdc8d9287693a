/**
 * Legacy session ids as sealed tokens: everything a replica needs to go on with a session it
 * did not start (the upstream session, the negotiated context, who may use it), readable only
 * by replicas that share the secret. A session over a stdio upstream (or emulated by the proxy,
 * in front of a 2026-07-28 server) lives in one replica's process; its token names that replica
 * and its URL (`replicas.url`), so the others forward the session's requests there.
 */
import { TokenTooLarge, type Sealer } from '../../sealing/sealer.js';

export interface SessionClaims {
  /** The replica that started the session. */
  replica: string;
  /** Its URL as other replicas reach it (absent: it knew none). */
  url?: string;
  /** Who the session was issued to ('' without authentication): nobody else may use it. */
  principal: string;
  /** Issue time, seconds since the epoch. */
  issued: number;
  /** The upstream HTTP session (absent for stdio upstreams). */
  upstream?: { id?: string; protocolVersion?: string };
  /** The negotiated context (src/core/filters.ts FiltersSnapshot). */
  negotiation?: object;
}

type WireClaims = [
  replica: string,
  principal: string,
  issued: number,
  upstreamId: string | null,
  protocolVersion: string | null,
  negotiation: object | null,
  url?: string | null,
];

/** Ended sessions remembered, so a token that is known dead is not resumed again. */
const ENDED_LIMIT = 10_000;

export class SessionTokens {
  private readonly ended = new Set<string>();

  constructor(
    private readonly sealer: Sealer,
    readonly replica: string,
    /** This replica's URL as the others reach it, once known (it may be learnt when listening). */
    readonly url: () => string | undefined = () => undefined,
  ) {}

  /** A token for a session issued at `issued` (seconds since the epoch: what its age is counted from, here and elsewhere). */
  mint(claims: Omit<SessionClaims, 'replica' | 'issued' | 'url'>, issued = Math.floor(Date.now() / 1000)): string {
    const url = this.url() ?? null;
    // An array, not an object: the token travels in a header on every request.
    const wire: WireClaims = [
      this.replica,
      claims.principal,
      issued,
      claims.upstream?.id ?? null,
      claims.upstream?.protocolVersion ?? null,
      claims.negotiation ?? null,
      url,
    ];
    try {
      return this.sealer.seal('session', wire);
    } catch (err) {
      if (!(err instanceof TokenTooLarge)) throw err;
      // Too much to carry (a client's very large capabilities): the session stays here, and its token says where it lives.
      return this.sealer.seal('session', [this.replica, claims.principal, issued, null, null, null, url] satisfies WireClaims);
    }
  }

  /** The claims of a token this replica can read and that has not ended here, else undefined. */
  open(token: string): SessionClaims | undefined {
    if (this.ended.has(token)) return undefined;
    const wire = this.sealer.open<WireClaims>('session', token);
    if (!Array.isArray(wire) || typeof wire[0] !== 'string' || typeof wire[1] !== 'string') return undefined;
    const [replica, principal, issued, upstreamId, protocolVersion, negotiation, url] = wire;
    return {
      replica,
      ...(typeof url === 'string' ? { url } : {}),
      principal,
      issued: Number(issued),
      ...(typeof upstreamId === 'string'
        ? { upstream: { id: upstreamId, ...(typeof protocolVersion === 'string' ? { protocolVersion } : {}) } }
        : {}),
      ...(negotiation && typeof negotiation === 'object' ? { negotiation } : {}),
    };
  }

  /** The session ended for good (DELETE, upstream expiry): never resume it from its token. */
  markEnded(token: string): void {
    if (this.ended.size >= ENDED_LIMIT) this.ended.delete(this.ended.values().next().value!);
    this.ended.add(token);
  }
}
