import { describe, expect, it } from 'vitest';
import { ProxyError } from '../jsonrpc/errors.js';
import { httpStatusOf } from './http-status.js';

describe('the HTTP status of an answer', () => {
  it("is a refusal's own, 500 for a failure that is not the proxy's, 400 for an unreadable body", () => {
    expect(httpStatusOf({ refused: new ProxyError('RATE_LIMITED', 'slow down') })).toBe(429);
    expect(httpStatusOf({ refused: new ProxyError('METHOD_NOT_FOUND', 'no') })).toBe(404);
    expect(httpStatusOf({ refused: new Error('bug') })).toBe(500);
    expect(httpStatusOf({ refused: undefined })).toBe(500);
    expect(httpStatusOf({ unreadable: true })).toBe(400);
  });

  it('keeps a passed-through rejection, and follows the revision for the rest', () => {
    expect(httpStatusOf({})).toBe(200);
    expect(httpStatusOf({ error: { code: -32021 } })).toBe(400);
    expect(httpStatusOf({ error: { code: -32601 } })).toBe(404);
    expect(httpStatusOf({ error: { code: -32601 }, upstreamStatus: 200 })).toBe(404);
    expect(httpStatusOf({ error: { code: -32602 }, upstreamStatus: 422 })).toBe(422);
    expect(httpStatusOf({ error: { code: -32021 }, upstreamStatus: 500 })).toBe(400);
    expect(httpStatusOf({ error: { code: -32603 }, upstreamStatus: 500 })).toBe(200);
  });
});
