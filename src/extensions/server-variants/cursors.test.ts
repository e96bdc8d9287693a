import { describe, expect, it } from 'vitest';
import { CursorSigner } from './cursors.js';

describe('CursorSigner', () => {
  const signer = new CursorSigner('test-secret');
  it('round-trips a cursor for its own variant only', () => {
    const token = signer.wrap('page-2', 'compact');
    expect(token).not.toContain('page-2');
    expect(signer.unwrap(token, 'compact')).toEqual({ ok: true, cursor: 'page-2' });
    expect(signer.unwrap(token, 'full')).toEqual({ ok: false, reason: 'variant', cursorVariant: 'compact' });
  });
  it('refuses forged and altered tokens', () => {
    const token = signer.wrap('page-2', 'compact');
    const forged = Buffer.from(JSON.stringify(['full', 'page-2'])).toString('base64url') + token.slice(token.lastIndexOf('.'));
    for (const bad of [forged, token.slice(0, -2) + 'xx', 'garbage', '', new CursorSigner('other').wrap('page-2', 'compact')]) {
      expect(signer.unwrap(bad, 'compact')).toEqual({ ok: false, reason: 'tampered' });
    }
  });
});
