import { describe, expect, it } from 'vitest';
import { Sealer } from '../../sealing/sealer.js';
import { openClient, sealClient } from './replica-client.js';

const SECRET = 'replica-client-test-secret-0123456789';

describe('the sealed client address', () => {
  const sealer = new Sealer([SECRET]);
  const now = 1_800_000_000_000;

  it('opens at the replica it was sealed for, within a minute', () => {
    const token = sealClient(sealer, '203.0.113.5', 'alpha', now);
    expect(openClient(sealer, token, 'alpha', now + 59_000)).toBe('203.0.113.5');
    expect(openClient(new Sealer([SECRET]), token, 'alpha', now)).toBe('203.0.113.5'); // any replica holding the secret
  });

  it('does not open at another replica, after a minute, with another secret, altered, or as another sealed value', () => {
    const token = sealClient(sealer, '203.0.113.5', 'alpha', now);
    expect(openClient(sealer, token, 'beta', now)).toBeUndefined();
    expect(openClient(sealer, token, 'alpha', now + 61_000)).toBeUndefined();
    expect(openClient(sealer, token, 'alpha', now - 61_000)).toBeUndefined();
    expect(openClient(new Sealer(['another-secret-entirely-0123456789ab']), token, 'alpha', now)).toBeUndefined();
    expect(openClient(sealer, `${token.slice(0, -3)}AAA`, 'alpha', now)).toBeUndefined();
    expect(openClient(sealer, '203.0.113.5', 'alpha', now)).toBeUndefined();
    expect(openClient(sealer, sealer.seal('task', { a: '203.0.113.5', to: 'alpha', t: now }), 'alpha', now)).toBeUndefined();
  });
});
