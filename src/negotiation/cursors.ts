/**
 * Variant-bound pagination cursors: the upstream's cursor wrapped in an opaque token that names
 * the variant it was minted for, signed with an HMAC so that a client can neither forge one nor
 * reuse it with another variant.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type CursorCheck = { ok: true; cursor: string } | { ok: false; reason: 'tampered' } | { ok: false; reason: 'variant'; cursorVariant: string };

export class CursorSigner {
  private readonly key: Buffer;

  /** With no secret, a random key: cursors then live as long as the process. */
  constructor(secret?: string) {
    this.key = secret ? Buffer.from(secret, 'utf8') : randomBytes(32);
  }

  wrap(upstreamCursor: string, variant: string): string {
    const body = Buffer.from(JSON.stringify([variant, upstreamCursor]), 'utf8').toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  unwrap(token: string, variant: string): CursorCheck {
    const dot = token.lastIndexOf('.');
    if (dot <= 0) return { ok: false, reason: 'tampered' };
    const body = token.slice(0, dot);
    const signature = token.slice(dot + 1);
    const given = Buffer.from(signature, 'base64url');
    const expected = Buffer.from(this.sign(body), 'base64url');
    // The decoder skips characters outside the alphabet: only the canonical spelling counts.
    if (given.length !== expected.length || !timingSafeEqual(given, expected) || given.toString('base64url') !== signature) return { ok: false, reason: 'tampered' };
    const [cursorVariant, cursor] = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as [string, string];
    return cursorVariant === variant ? { ok: true, cursor } : { ok: false, reason: 'variant', cursorVariant };
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }
}
