/**
 * The era classifier against the official SDK's (`classifyInboundRequest`, @modelcontextprotocol/server):
 * for every single-message POST the SDK routes to an era, the proxy routes it to the same one. Where the SDK
 * rejects a message outright, the proxy routes it to the era whose handler refuses it (not compared here).
 */
import { classifyInboundRequest } from '@modelcontextprotocol/server';
import { describe, expect, it } from 'vitest';
import { eraOf, META, MODERN_VERSIONS } from './eras.js';

const V = MODERN_VERSIONS[0];
const envelope = { [META.protocolVersion]: V, [META.clientCapabilities]: {}, [META.clientInfo]: { name: 'c', version: '1' } };
const request = (method: string, params?: Record<string, unknown>) => ({ jsonrpc: '2.0', id: 1, method, ...(params ? { params } : {}) });
const notification = (method: string, params?: Record<string, unknown>) => ({ jsonrpc: '2.0', method, ...(params ? { params } : {}) });

/** Bodies and the version header sent with them. */
const CASES: Array<[string, unknown, string | undefined]> = [
  ['legacy initialize', request('initialize', { protocolVersion: '2025-06-18', capabilities: {} }), undefined],
  ['legacy initialize with a legacy header', request('initialize', { protocolVersion: '2025-11-25', capabilities: {} }), '2025-11-25'],
  ['legacy tools/call', request('tools/call', { name: 'x' }), '2025-11-25'],
  ['legacy tools/call, no header', request('tools/call', { name: 'x' }), undefined],
  ['legacy notification', notification('notifications/initialized'), '2025-11-25'],
  ['legacy response', { jsonrpc: '2.0', id: 3, result: {} }, '2025-11-25'],
  ['modern tools/call', request('tools/call', { name: 'x', _meta: envelope }), V],
  ['modern tools/call, no header', request('tools/call', { name: 'x', _meta: envelope }), undefined],
  ['modern server/discover', request('server/discover', { _meta: envelope }), V],
  ['modern notification with an envelope', notification('notifications/cancelled', { requestId: 1, _meta: envelope }), V],
  ['modern notification by its header', notification('notifications/cancelled', { requestId: 1 }), V],
  ['a legacy batch', [request('tools/list'), notification('notifications/initialized')], '2025-11-25'],
];

describe("the era classifier agrees with the SDK's", () => {
  // The one case where they part: an initialize that carries the modern envelope and no version header. The SDK
  // routes it to the modern era (where initialize does not exist); the proxy answers it as a legacy handshake, so a
  // legacy client with an extra _meta key is never refused. Kept here so that a change on either side shows.
  it('initialize with the modern envelope and no version header: the SDK says modern, the proxy legacy', () => {
    const body = request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, _meta: envelope });
    expect(classifyInboundRequest({ httpMethod: 'POST', body }).kind).toBe('modern');
    expect(eraOf([{ msg: body }])).toBe('legacy');
  });

  for (const [name, body, header] of CASES) {
    it(name, () => {
      const sdk = classifyInboundRequest({ httpMethod: 'POST', body, ...(header ? { protocolVersionHeader: header } : {}) });
      if (sdk.kind === 'reject') throw new Error(`the SDK rejects this case: ${JSON.stringify(sdk)}`);
      const frames = (Array.isArray(body) ? body : [body]).map((msg: unknown) => ({ msg }));
      expect(eraOf(frames, { versionHeader: header })).toBe(sdk.kind);
    });
  }
});
