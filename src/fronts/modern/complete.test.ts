import { describe, expect, it } from 'vitest';
import { parseUpstream, serialize, type Frame } from '../../jsonrpc/message.js';
import { Completion } from './complete.js';

const server = { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'up', version: '1.0' } };
const cache = { default: { ttlMs: 0, cacheScope: 'private' as const }, 'tools/list': { ttlMs: 60_000, cacheScope: 'public' as const } };

/** The upstream's answer as the proxy reads it (result undecoded). */
function upstream(text: string): Frame {
  const parsed = parseUpstream(Buffer.from(text), 256);
  if (!parsed.ok) throw new Error('not parsed');
  return parsed.frames[0];
}

describe('Completion', () => {
  const completion = new Completion(cache);

  it('completes an undecoded result on its bytes, exactly as it completes the decoded one', () => {
    for (const [method, result] of [
      ['tools/call', '{"content":[{"type":"text","text":"1.50 \\u00e9 } \\" {"}],"isError":false}'],
      ['tools/call', '{}'],
      ['tools/call', '{ \n }'],
      ['tools/list', '{"tools":[]}'],
      ['resources/read', '{"contents":[{"uri":"file:///a","text":"x","_meta":{"k":1}}]}'], // _meta deeper down is the content's own
    ] as const) {
      for (const afterInput of [false, true]) {
        const frame = completion.answer('req-1', method, upstream(`{"jsonrpc":"2.0","id":9,"result":${result}}`), server, afterInput)!;
        expect(frame, result).toBeDefined();
        const expected = { jsonrpc: '2.0', id: 'req-1', result: completion.result(method, JSON.parse(result), server, afterInput) };
        expect(JSON.parse(String(serialize(frame)))).toEqual(expected);
        expect(JSON.stringify(JSON.parse(String(serialize(frame)))), 'member order').toBe(JSON.stringify(expected));
        expect(JSON.stringify(frame.msg)).toBe(JSON.stringify(expected)); // decoded on demand from the same bytes
      }
    }
  });

  it('keeps the upstream bytes of the result as they were', () => {
    const result = '{"content":[{"type":"text","text":"1.50"}],"n":1.50,"s":"\\u00e9"}';
    const frame = completion.answer(3, 'tools/call', upstream(`{"jsonrpc":"2.0","id":9,"result":${result}}`), server)!;
    expect(String(serialize(frame))).toBe(
      `{"jsonrpc":"2.0","id":3,"result":${result.slice(0, -1)},"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"up","version":"1.0"}}}}`,
    );
  });

  it('leaves a result that has any member it adds to the decoder, and one already decoded', () => {
    for (const result of ['{"_meta":{"a":1}}', '{"content":[],"resultType":"x"}', '{"ttlMs":5}', '{"x":1, "cacheScope" :"public"}']) {
      expect(completion.answer(1, 'tools/list', upstream(`{"jsonrpc":"2.0","id":9,"result":${result}}`), server), result).toBeUndefined();
    }
    const decoded = upstream('{"jsonrpc":"2.0","id":9,"result":{"content":[]}}');
    void (decoded.msg as { result: unknown }).result;
    expect(completion.answer(1, 'tools/call', decoded, server)).toBeUndefined();
    expect(completion.answer(1, 'tools/call', { msg: { jsonrpc: '2.0', id: 9, result: {} } }, server)).toBeUndefined();
  });

  it('splices only into a result a strict scan proved one JSON object without any member it adds, in any spelling', () => {
    for (const result of [
      '{"\\u0072esultType":"input_required"}',
      '{"content":[],"\\u005fmeta":{"io.modelcontextprotocol/serverInfo":{"name":"EVIL"}}}',
      '{"contents":[],"\\u0074tlMs":86400000,"\\u0063acheScope":"public"}',
    ]) {
      expect(
        completion.answer(1, 'resources/read', upstream(`{"jsonrpc":"2.0","id":9,"result":${result}}`), server),
        result,
      ).toBeUndefined();
    }
    // What is not JSON never becomes a frame to splice into: it fails its request where it is read.
    for (const result of [
      '{"content":[],}',
      '{"content":[NaN]}',
      '{"content":[] /* c */}',
      "{'content':[]}",
      '{"content":[nope]}',
      '{"content" []}',
      '{"content":["a\tb"]}',
    ]) {
      expect(parseUpstream(Buffer.from(`{"jsonrpc":"2.0","id":9,"result":${result}}`), 256), result).toMatchObject({
        ok: false,
        answerTo: 9,
      });
    }
    const invalidUtf8 = Buffer.concat([
      Buffer.from('{"jsonrpc":"2.0","id":9,"result":{"content":"'),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}}'),
    ]);
    const parsed = parseUpstream(invalidUtf8, 256);
    expect(parsed.ok && completion.answer(1, 'tools/call', parsed.frames[0], server)).toBeUndefined();
  });

  it('writes no serverInfo member when the server named none', () => {
    const frame = completion.answer(1, 'tools/call', upstream('{"jsonrpc":"2.0","id":9,"result":{"a":true,"b":null,"c":-1e3}}'), {
      capabilities: {},
    })!;
    expect(JSON.parse(String(serialize(frame)))).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { a: true, b: null, c: -1000, resultType: 'complete', _meta: {} },
    });
  });
});
