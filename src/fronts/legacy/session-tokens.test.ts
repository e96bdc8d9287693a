import { describe, expect, it } from 'vitest';
import { Sealer } from '../../sealing/sealer.js';
import { SessionTokens } from './session-tokens.js';

describe('SessionTokens', () => {
  const tokens = new SessionTokens(new Sealer(['session-tokens-test-secret-0123456789']), 'alpha');

  it('carries the upstream session and the negotiated context', () => {
    const token = tokens.mint(
      { principal: 'p', upstream: { id: 'u1', protocolVersion: '2025-11-25' }, negotiation: { client: { elicitation: {} } } },
      100,
    );
    expect(tokens.open(token)).toEqual({
      replica: 'alpha',
      principal: 'p',
      issued: 100,
      upstream: { id: 'u1', protocolVersion: '2025-11-25' },
      negotiation: { client: { elicitation: {} } },
    });
  });

  it('never mints a token no replica can open: with too much to carry, the token names only where the session lives', () => {
    const huge = { client: { extensions: { x: { settings: 'x'.repeat(20_000) } } } };
    const token = tokens.mint({ principal: 'p', upstream: { id: 'u1' }, negotiation: huge }, 100);
    expect(token.length).toBeLessThanOrEqual(8192);
    expect(tokens.open(token)).toEqual({ replica: 'alpha', principal: 'p', issued: 100 });
  });
});

describe('SessionTokens with a known URL', () => {
  const sealer = new Sealer(['session-tokens-test-secret-0123456789']);
  const tokens = new SessionTokens(sealer, 'alpha', () => 'http://10.0.0.5:8080/mcp');

  it('names the URL of the replica the session lives on, also when the token carries nothing else', () => {
    const token = tokens.mint({ principal: 'p' }, 100);
    expect(tokens.open(token)).toEqual({ replica: 'alpha', url: 'http://10.0.0.5:8080/mcp', principal: 'p', issued: 100 });
    const huge = { client: { extensions: { x: { settings: 'x'.repeat(20_000) } } } };
    const bare = tokens.mint({ principal: 'p', negotiation: huge }, 100);
    expect(tokens.open(bare)).toMatchObject({ replica: 'alpha', url: 'http://10.0.0.5:8080/mcp' });
  });

  it('opens a token sealed before URLs were sealed into it', () => {
    const old = sealer.seal('session', ['beta', 'p', 100, null, null, null]);
    expect(tokens.open(old)).toEqual({ replica: 'beta', principal: 'p', issued: 100 });
  });
});
