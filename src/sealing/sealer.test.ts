import { describe, expect, it } from 'vitest';
import { Sealer, TokenTooLarge } from './sealer.js';

const SECRET = 'a-shared-secret-of-enough-length-0001';
const OLD = 'the-previous-secret-still-accepted-0002';

describe('Sealer', () => {
  it('opens what any sealer with the same secret sealed, for the same purpose only', () => {
    const token = new Sealer([SECRET]).seal('session', { u: 'abc', n: 1 });
    expect(new Sealer([SECRET]).open('session', token)).toEqual({ u: 'abc', n: 1 });
    expect(new Sealer([SECRET]).open('requestState', token)).toBeUndefined();
    expect(new Sealer(['another-secret-entirely-0000000000']).open('session', token)).toBeUndefined();
    expect(new Sealer([]).open('session', token)).toBeUndefined();
  });

  it('rotates: the newest secret seals, older ones still open', () => {
    const old = new Sealer([OLD]).seal('session', { v: 'old' });
    const rotated = new Sealer([SECRET, OLD]);
    expect(rotated.open('session', old)).toEqual({ v: 'old' });
    const fresh = rotated.seal('session', { v: 'new' });
    expect(fresh.split('.')[0]).not.toBe(old.split('.')[0]);
    expect(new Sealer([SECRET]).open('session', fresh)).toEqual({ v: 'new' });
    expect(new Sealer([OLD]).open('session', fresh)).toBeUndefined();
  });

  it('refuses altered, truncated and made-up tokens without throwing', () => {
    const sealer = new Sealer([SECRET]);
    const token = sealer.seal('session', { u: 'abc' });
    const [id, body] = token.split('.');
    const flipped = `${id}.${body.slice(0, 20)}${body[20] === 'A' ? 'B' : 'A'}${body.slice(21)}`;
    for (const bad of [
      flipped,
      `${id}.${body.slice(0, -4)}`,
      `${id}.`,
      id,
      '',
      '.',
      'x'.repeat(10_000),
      `${id}.${'A'.repeat(40)}`,
      `zzzzzzzz.${body}`,
    ]) {
      expect(sealer.open('session', bad)).toBeUndefined();
    }
    expect(sealer.open('session', 42 as unknown as string)).toBeUndefined();
  });

  it('refuses to seal what it would not open, saying how much fits; the largest that fits opens', () => {
    const sealer = new Sealer([SECRET]);
    let refusal: TokenTooLarge | undefined;
    try {
      sealer.seal('upstreamState', { s: 'x'.repeat(800 * 1024) });
    } catch (err) {
      refusal = err as TokenTooLarge;
    }
    expect(refusal).toBeInstanceOf(TokenTooLarge);
    expect(refusal).toMatchObject({ purpose: 'upstreamState', bytes: 800 * 1024 + 8 });
    const fits = { s: 'x'.repeat(refusal!.maxBytes - 8) };
    expect(sealer.open('upstreamState', sealer.seal('upstreamState', fits))).toEqual(fits);
    expect(() => sealer.seal('upstreamState', { s: 'x'.repeat(refusal!.maxBytes - 7) })).toThrow(TokenTooLarge);
    // Tokens that travel in headers are smaller.
    expect(() => sealer.seal('session', { s: 'x'.repeat(8192) })).toThrow(/too large to seal/);
  });

  it('never repeats a token for the same payload (random IV)', () => {
    const sealer = new Sealer([SECRET]);
    expect(sealer.seal('session', { a: 1 })).not.toBe(sealer.seal('session', { a: 1 }));
  });
});
