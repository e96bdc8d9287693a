import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { modernUpstreamError, PROXY_ERROR_CODES, ProxyError, toJsonRpcError } from './errors.js';

describe('errors on the wire, per era', () => {
  it('gives modern clients the revision codes and never the legacy range for the proxy’s own failures', () => {
    const closed = new ProxyError('UPSTREAM_CLOSED', 'gone');
    expect(toJsonRpcError(closed).code).toBe(-32000);
    expect(toJsonRpcError(closed, 'modern')).toEqual({ code: -32603, message: 'gone', data: { code: 'UPSTREAM_CLOSED' } });
    const version = new ProxyError('UNSUPPORTED_PROTOCOL_VERSION', 'Unsupported protocol version', {
      supported: ['2026-07-28'],
      requested: 'x',
    });
    expect(toJsonRpcError(version, 'modern')).toEqual({
      code: -32022,
      message: 'Unsupported protocol version',
      data: { code: 'UNSUPPORTED_PROTOCOL_VERSION', supported: ['2026-07-28'], requested: 'x' },
    });
    expect(version.httpStatus).toBe(400);
    expect(new ProxyError('METHOD_NOT_FOUND', 'x').httpStatus).toBe(404);
  });

  it('renames upstream codes a modern client must not receive, keeping the original in data', () => {
    expect(modernUpstreamError({ code: -32002, message: 'Resource not found', data: { uri: 'a://b' } })).toEqual({
      code: -32602,
      message: 'Resource not found',
      data: { uri: 'a://b', upstreamCode: -32002 },
    });
    expect(modernUpstreamError({ code: -32042, message: 'URL elicitation required' })).toEqual({
      code: -32603,
      message: 'URL elicitation required',
      data: { upstreamCode: -32042 },
    });
    expect(modernUpstreamError({ code: -32050, message: 'custom', data: 'text' })).toEqual({
      code: -32603,
      message: 'custom',
      data: { value: 'text', upstreamCode: -32050 },
    });
    for (const code of [-32601, -32602, -32603, -32000, -32010, -32020, -32021, -32022, 42]) {
      const error = { code, message: 'm' };
      expect(modernUpstreamError(error)).toBe(error);
    }
  });
});

describe('the README', () => {
  it('lists every error code the proxy produces', () => {
    const readme = readFileSync(new URL('../../docs/error-codes.md', import.meta.url), 'utf8');
    const missing = PROXY_ERROR_CODES.filter((code) => !readme.includes(`| \`${code}\` |`));
    expect(missing).toEqual([]);
  });
});
