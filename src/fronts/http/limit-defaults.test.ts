import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/load.js';
import { describeLimits, perClientLimits } from './limit-defaults.js';

const config = (overrides: Record<string, unknown> = {}) => loadConfig({ overrides, env: {} });
const STRICT = { requestsPerSecond: 100, inFlight: 64, sessions: 8, oneLocalUser: false };

describe('perClientLimits', () => {
  it('turns unset limits off on loopback without authentication, and says so', () => {
    const limits = perClientLimits(config(), false);
    expect(limits).toEqual({ requestsPerSecond: Infinity, inFlight: Infinity, sessions: Infinity, oneLocalUser: true });
    expect(describeLimits(limits).message).toMatch(
      /^per-client limits: requestsPerSecond off, inFlight off, sessions off \(loopback without authentication: /,
    );
    for (const host of ['localhost', '127.0.0.2', '::1', '[::1]'])
      expect(perClientLimits(config({ listen: { host } }), false).oneLocalUser).toBe(true);
  });

  it('keeps the strict defaults with authentication, on any other address, or behind a trusted balancer', () => {
    expect(perClientLimits(config(), true)).toEqual(STRICT);
    expect(perClientLimits(config({ listen: { host: '0.0.0.0' } }), false)).toEqual(STRICT);
    expect(perClientLimits(config({ listen: { host: '::' } }), false)).toEqual(STRICT);
    expect(perClientLimits(config({ listen: { trustProxy: ['127.0.0.1'] } }), false)).toEqual(STRICT);
    expect(perClientLimits(config({ upstream: { url: 'http://127.0.0.1:1/mcp' } }), true).sessions).toBe(32);
    expect(describeLimits(perClientLimits(config(), true)).message).toBe(
      'per-client limits: requestsPerSecond 100, inFlight 64, sessions 8',
    );
  });

  it('lets a configured value win over the loopback default', () => {
    const limits = perClientLimits(config({ listen: { perClient: { requestsPerSecond: 5, sessions: 3 } } }), false);
    expect(limits).toEqual({ requestsPerSecond: 5, inFlight: Infinity, sessions: 3, oneLocalUser: true });
    expect(describeLimits(limits).values).toEqual({ requestsPerSecond: 5, inFlight: 'off', sessions: 3 });
  });
});
