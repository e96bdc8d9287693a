/**
 * Legacy session ids as sealed tokens: everything a replica needs to go on with a session it
 * did not start (the upstream session, the negotiated context, who may use it), readable only
 * by replicas that share the secret. A session over a stdio upstream lives in one replica's
 * process; its token still names that replica, so the others can say where it is.
 */
import type { Sealer } from '../sealing/sealer.js';

export interface SessionClaims {
  /** The replica that started the session. */
  replica: string;
  /** Who the session was issued to ('' without authentication): nobody else may use it. */
  principal: string;
  /** Issue time, seconds since the epoch. */
  issued: number;
  /** The upstream HTTP session (absent for stdio upstreams). */
  upstream?: { id?: string; protocolVersion?: string };
  /** The negotiated context (src/negotiation/session.ts NegotiationSnapshot). */
  negotiation?: object;
}

/** Ended sessions remembered, so a token that is known dead is not resumed again. */
const ENDED_LIMIT = 10_000;

export class SessionTokens {
  private readonly ended = new Set<string>();

  constructor(
    private readonly sealer: Sealer,
    readonly replica: string,
  ) {}

  mint(claims: Omit<SessionClaims, 'replica' | 'issued'>): string {
    const full: SessionClaims = { replica: this.replica, issued: Math.floor(Date.now() / 1000), ...claims };
    return this.sealer.seal('session', full);
  }

  /** The claims of a token this replica can read and that has not ended here, else undefined. */
  open(token: string): SessionClaims | undefined {
    if (this.ended.has(token)) return undefined;
    const claims = this.sealer.open<SessionClaims>('session', token);
    return claims && typeof claims.replica === 'string' && typeof claims.principal === 'string' ? claims : undefined;
  }

  /** The session ended for good (DELETE, upstream expiry): never resume it from its token. */
  markEnded(token: string): void {
    if (this.ended.size >= ENDED_LIMIT) this.ended.delete(this.ended.values().next().value!);
    this.ended.add(token);
  }
}
