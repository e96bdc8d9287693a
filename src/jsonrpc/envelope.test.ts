import { describe, expect, it } from 'vitest';
import { hasMember, lazyFrame, responseId, undecodedResult } from './envelope.js';
import type { JsonRpcResponse } from './message.js';

const lazyResponse = (bytes: Buffer) => lazyFrame(bytes)?.msg as JsonRpcResponse | undefined;
import { parseUpstream } from './message.js';

const b = (text: string) => Buffer.from(text);

describe('responseId', () => {
  it('reads the id of a success response, members in any order, with any whitespace', () => {
    expect(responseId(b('{"jsonrpc":"2.0","id":7,"result":{}}'))).toBe(7);
    expect(responseId(b('{"result":{"content":[{"type":"text","text":"a \\" } ] {"}]},"jsonrpc":"2.0","id":"x\\"y"}'))).toBe('x"y');
    expect(responseId(b(' \t{ "id" : 0 , "result" : { "a" : [1, {"b": "\\\\"}] } , "jsonrpc" : "2.0" }\r\n'))).toBe(0);
    expect(responseId(b('{"jsonrpc":"2.0","id":-3,"result":{}}'))).toBe(-3);
    expect(responseId(b('{"jsonrpc":"2.0","id":"é🌍","result":{}}'))).toBe('é🌍');
    expect(responseId(b('{"jsonrpc":"2.0","id":12345678901234567,"result":{}}'))).toBe(12345678901234567);
  });

  it('leaves everything else to the full decoder', () => {
    for (const text of [
      '{"jsonrpc":"2.0","id":1,"method":"ping"}', // a request
      '{"jsonrpc":"2.0","method":"notifications/progress","params":{}}',
      '{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}',
      '{"jsonrpc":"2.0","id":null,"result":{}}',
      '{"jsonrpc":"1.0","id":1,"result":{}}',
      '{"id":1,"result":{}}',
      '{"jsonrpc":"2.0","id":1,"result":[]}',
      '{"jsonrpc":"2.0","id":1,"result":"text"}',
      '{"jsonrpc":"2.0","id":1,"result":{},"extra":true}',
      '{"jsonrpc":"2.0","id":1,"id":2,"result":{}}',
      '{"jsonrpc":"2.0","id":1,"result":{"a":[}}', // brackets that do not match
      '{"jsonrpc":"2.0","id":1,"result":{"a":"open}', // a string that does not close
      '{"jsonrpc":"2.0","id":1,"result":{"a":"b\\"}}', // the quote is escaped
      '{"jsonrpc":"2.0","id":1,"result":{}} trailing',
      '{"jsonrpc":"2.0","id":1,"result":{}',
      '{"jsonrpc":"2.0","id":1e999,"result":{}}',
      '{"jsonrpc":"2.0","id":true,"result":{}}',
      '[{"jsonrpc":"2.0","id":1,"result":{}}]',
      'Starting server on stdio…',
      '',
      '{"jsonrpc":"2',
    ]) expect(responseId(b(text)), text).toBeUndefined();
  });

  it('reads a deeply nested result without recursion', () => {
    const depth = 200_000;
    expect(responseId(b(`{"jsonrpc":"2.0","id":1,"result":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`))).toBe(1);
  });
});

describe('lazyResponse', () => {
  it('decodes the result on first use, and then behaves as a plain message', () => {
    const text = '{"result":{"content":[{"type":"text","text":"hi"}]},"jsonrpc":"2.0","id":4}';
    const msg = lazyResponse(b(text))!;
    expect(msg.id).toBe(4);
    expect('result' in msg && !('method' in msg) && !('error' in msg)).toBe(true);
    expect(msg.result).toEqual({ content: [{ type: 'text', text: 'hi' }] });
    expect(msg.result).toBe(msg.result);
    expect(JSON.parse(JSON.stringify(msg))).toEqual(JSON.parse(text));
    expect(JSON.stringify({ ...msg, result: { other: 1 } })).toBe('{"jsonrpc":"2.0","id":4,"result":{"other":1}}');
  });

  it('gives its result bytes while undecoded, and not after', () => {
    const frame = lazyFrame(b('{"jsonrpc":"2.0","id":4,"result":{"a":[1]} }'))!;
    expect(String(undecodedResult(frame))).toBe('{"a":[1]}');
    void (frame.msg as JsonRpcResponse).result;
    expect(undecodedResult(frame)).toBeUndefined();
    expect(undecodedResult({ msg: { jsonrpc: '2.0', id: 1, result: {} } })).toBeUndefined();
  });

  it('fails when a result whose brackets balance is not JSON is decoded', () => {
    const msg = lazyResponse(b('{"jsonrpc":"2.0","id":1,"result":{"a":nope}}'))!;
    expect(msg.id).toBe(1);
    expect(() => msg.result).toThrow(SyntaxError);
  });
});

describe('parseUpstream', () => {
  it('keeps the bytes as the frame text, lazy for answers and decoded otherwise', () => {
    const answer = b('{"jsonrpc":"2.0","id":1,"result":{"ok":true}}');
    const parsed = parseUpstream(answer);
    expect(parsed.ok && parsed.frames[0].raw).toBe(answer);
    const request = b('{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"maxTokens":5}}');
    const other = parseUpstream(request);
    expect(other.ok && other.frames[0]).toEqual({ msg: JSON.parse(request.toString()), raw: request });
    expect(parseUpstream(b('not json')).ok).toBe(false);
  });
});

describe('hasMember', () => {
  const names = [Buffer.from('_meta'), Buffer.from('ttlMs')];
  it('looks at the top-level members only', () => {
    expect(hasMember(b('{"content":[{"_meta":{}}],"x":"\\"_meta\\":1"}'), names)).toBe(false);
    expect(hasMember(b('{}'), names)).toBe(false);
    expect(hasMember(b('{ "a" : 1 , "b" : true, "c":null, "d":{"ttlMs":1} }'), names)).toBe(false);
    expect(hasMember(b('{"a":1,"_meta":{}}'), names)).toBe(true);
    expect(hasMember(b('{ "ttlMs" : 0 }'), names)).toBe(true);
    expect(hasMember(b('{"a":[1,2],"b":{"c":[]},"_meta":1}'), names)).toBe(true);
  });
});
