import { describe, expect, it } from 'vitest';
import { decodeHeaderValue, encodeHeaderValue, modernRequestHeaders, paramHeadersOf } from './http-headers.js';

describe('modern request headers', () => {
  it('writes plain printable values as they are and the rest in the base64 sentinel, which decodes back', () => {
    for (const value of ['get_weather', 'a b', '', ' lead', 'trail ', 'café', 'line\nbreak', 'tab\there', '=?base64?looks?=', '日本']) {
      const encoded = encodeHeaderValue(value);
      expect(decodeHeaderValue(encoded)).toBe(value);
      expect(/^[\x20-\x7e]*$/.test(encoded)).toBe(true);
    }
    expect(encodeHeaderValue('get_weather')).toBe('get_weather');
    expect(encodeHeaderValue('')).toBe('=?base64??=');
  });

  it('mirrors the body: version, method, name and the tool arguments its schema names', () => {
    const req = {
      jsonrpc: '2.0' as const,
      id: 1,
      method: 'tools/call',
      params: {
        name: 'lookup',
        arguments: { region: 'eu west', n: 3, skip: null, obj: { a: 1 } },
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
      },
    };
    const headers = modernRequestHeaders(
      req,
      new Map([
        ['mcp-param-region', ['region']],
        ['mcp-param-n', ['n']],
        ['mcp-param-skip', ['skip']],
        ['mcp-param-obj', ['obj']],
      ]),
    );
    expect(headers).toEqual({
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'lookup',
      'mcp-param-region': 'eu west',
      'mcp-param-n': '3',
    });
    const read = modernRequestHeaders({
      jsonrpc: '2.0',
      id: 2,
      method: 'resources/read',
      params: { uri: 'file:///tmp/ä.txt', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } },
    });
    expect(decodeHeaderValue(read['mcp-name'])).toBe('file:///tmp/ä.txt');
  });

  it('finds x-mcp-header on properties reached through properties only, nested ones with their path, and mirrors them', () => {
    const schema = {
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        target: { type: 'object', properties: { host: { type: 'string', 'x-mcp-header': 'Host-Name' } } },
        list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Ignored' } },
      },
    };
    const found = paramHeadersOf(schema)!;
    expect([...found]).toEqual([
      ['mcp-param-region', ['region']],
      ['mcp-param-host-name', ['target', 'host']],
    ]);
    const req = {
      jsonrpc: '2.0' as const,
      id: 3,
      method: 'tools/call',
      params: {
        name: 't',
        arguments: { region: 'eu', target: { host: 'db1' } },
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' },
      },
    };
    expect(modernRequestHeaders(req, found)).toMatchObject({ 'mcp-param-region': 'eu', 'mcp-param-host-name': 'db1' });
    let deep: Record<string, unknown> = { type: 'string', 'x-mcp-header': 'Deep' };
    for (let i = 0; i < 100; i++) deep = { type: 'object', properties: { a: deep } };
    expect(paramHeadersOf(deep)).toBeUndefined(); // nested beyond what is read
  });
});
