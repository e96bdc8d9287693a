/**
 * Variant-bound pagination cursors: the upstream's cursor wrapped in an opaque token that names
 * the variant it was minted for, signed with an HMAC so that a client can neither forge one nor
 * reuse it with another variant.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

export type CursorCheck =
  { ok: true; cursor: string } | { ok: false; reason: 'tampered' } | { ok: false; reason: 'variant'; cursorVariant: string };

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
    // Compared as text, so only the canonical spelling of the signature opens.
    const given = Buffer.from(token.slice(dot + 1));
    const expected = Buffer.from(this.sign(body));
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { ok: false, reason: 'tampered' };
    const [cursorVariant, cursor] = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as [string, string];
    return cursorVariant === variant ? { ok: true, cursor } : { ok: false, reason: 'variant', cursorVariant };
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }
}
