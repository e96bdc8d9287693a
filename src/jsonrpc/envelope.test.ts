import { describe, expect, it } from 'vitest';
import { readAnswer, undecodedResult, withId, type Answer } from './envelope.js';
import { parseUpstream, type Frame, type JsonRpcId, type JsonRpcResponse } from './message.js';

const DEPTH = 256;
const lazyFrame = (bytes: Buffer): Frame | undefined => {
  const answer = readAnswer(bytes, DEPTH);
  return answer && 'frame' in answer ? answer.frame : undefined;
};
const lazyResponse = (bytes: Buffer) => lazyFrame(bytes)?.msg as JsonRpcResponse | undefined;
const responseId = (bytes: Buffer): JsonRpcId | null | undefined => lazyResponse(bytes)?.id;
const unusable = (bytes: Buffer): Answer | undefined => readAnswer(bytes, DEPTH);

const b = (text: string) => Buffer.from(text);

describe('readAnswer', () => {
  it('reads the id of a success response, members in any order, with any whitespace', () => {
    expect(responseId(b('{"jsonrpc":"2.0","id":7,"result":{}}'))).toBe(7);
    expect(responseId(b('{"result":{"content":[{"type":"text","text":"a \\" } ] {"}]},"jsonrpc":"2.0","id":"x\\"y"}'))).toBe('x"y');
    expect(responseId(b(' \t{ "id" : 0 , "result" : { "a" : [1, {"b": "\\\\"}] } , "jsonrpc" : "2.0" }\r\n'))).toBe(0);
    expect(responseId(b('{"jsonrpc":"2.0","id":-3,"result":{}}'))).toBe(-3);
    expect(responseId(b('{"jsonrpc":"2.0","id":"é🌍","result":{}}'))).toBe('é🌍');
    // eslint-disable-next-line no-loss-of-precision -- an id past 2^53 is read as JSON.parse reads it, rounded
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
      '{"jsonrpc":"2.0","\\u0069d":1,"result":{}}', // an envelope key with an escape: decoded by the caller
      '{"jsonrpc":"2.0","id":1,"result":{}} trailing',
      '{"jsonrpc":"2.0","id":1,"result":{}',
      '{"jsonrpc":"2.0","id":1e999,"result":{}}',
      '{"jsonrpc":"2.0","id":true,"result":{}}',
      '[{"jsonrpc":"2.0","id":1,"result":{}}]',
      'Starting server on stdio…',
      '',
      '{"jsonrpc":"2',
    ])
      expect(responseId(b(text)), text).toBeUndefined();
  });

  it('proves the result one JSON object, and names the request of one that is not, wherever its id is', () => {
    for (const result of ['{"a":nope}', '{"a":1,}', '{"a":NaN}', "{'a':1}", '{"a":1 /* c */}', '{"a" 1}', '{"a":"x\ty"}', '{"a":01}']) {
      expect(unusable(b(`{"jsonrpc":"2.0","id":7,"result":${result}}`)), result).toEqual({
        unusable: 7,
        why: "The upstream's answer is not valid JSON",
      });
      expect(unusable(b(`{"result":${result},"jsonrpc":"2.0","id":"x"}`)), result).toEqual({
        unusable: 'x',
        why: "The upstream's answer is not valid JSON",
      });
    }
    expect(readAnswer(Buffer.from([...b('{"jsonrpc":"2.0","id":1,"result":{"a":"'), 0xff, ...b('"}}')]), DEPTH)).toBeUndefined(); // not UTF-8: decoded by the caller
  });

  it('reads a deeply nested result without recursion, and refuses one nested deeper than the limit', () => {
    const depth = 200_000;
    const text = `{"jsonrpc":"2.0","id":1,"result":{"a":${'['.repeat(depth)}${']'.repeat(depth)}}}`;
    expect(readAnswer(b(text), Infinity)).toMatchObject({ frame: { raw: b(text) } });
    expect(unusable(b(text))).toEqual({ unusable: 1, why: expect.stringContaining('upstream.maxJsonDepth') });
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

  it("knows the result's own members as they read", () => {
    expect(lazyFrame(b('{"jsonrpc":"2.0","id":4,"result":{"a":{"b":1},"\\u0072esultType":"x","c\\"d":[]}}'))!.result!.members).toEqual([
      'a',
      'resultType',
      'c"d',
    ]);
  });

  it('takes a result nesting up to the limit (the envelope counts as a level), and not one deeper', () => {
    const nested = (levels: number) => b(`{"jsonrpc":"2.0","id":1,"result":{"a":${'['.repeat(levels)}${']'.repeat(levels)}}}`);
    expect(lazyFrame(nested(DEPTH - 2))).toBeDefined();
    expect(unusable(nested(DEPTH - 1))).toMatchObject({ unusable: 1 });
  });
});

describe('parseUpstream', () => {
  it('keeps the bytes as the frame text, lazy for answers and decoded otherwise', () => {
    const answer = b('{"jsonrpc":"2.0","id":1,"result":{"ok":true}}');
    const parsed = parseUpstream(answer, DEPTH);
    expect(parsed.ok && parsed.frames[0].raw).toBe(answer);
    const request = b('{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{"maxTokens":5}}');
    const other = parseUpstream(request, DEPTH);
    expect(other.ok && other.frames[0]).toEqual({ msg: JSON.parse(request.toString()), raw: request });
    expect(parseUpstream(b('not json'), DEPTH).ok).toBe(false);
  });

  it('refuses a message nesting deeper than the limit, naming the request an answer was for', () => {
    const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    // 8,000 levels would overflow the stack where the message is written again; the parser itself does not recurse.
    const cases: Array<[string, string | number | undefined]> = [
      [`{"jsonrpc":"2.0","id":1,"result":{"a":${deep(8000)}}}`, 1],
      [`{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m","data":${deep(300)}}}`, 'x'],
      [`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1,"x":${deep(8000)}}}`, undefined],
      [`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"x":${deep(300)}}}`, undefined],
      [`[{"jsonrpc":"2.0","id":6,"result":{"x":${deep(300)}}}]`, undefined],
    ];
    for (const [text, answerTo] of cases) {
      const parsed = parseUpstream(b(text), DEPTH);
      expect(parsed.ok, text.slice(0, 60)).toBe(false);
      if (!parsed.ok) {
        expect(parsed.answerTo).toBe(answerTo);
        expect(parsed.error.error?.message).toContain('upstream.maxJsonDepth');
      }
    }
    expect(parseUpstream(b(`{"jsonrpc":"2.0","method":"m","params":{"x":${deep(DEPTH - 2)}}}`), DEPTH).ok).toBe(true);
  });
});

describe('withId', () => {
  it('gives an undecoded answer another id without decoding it, and a decoded one too', () => {
    const frame = lazyFrame(b('{"id":"p-7","jsonrpc":"2.0","result":{"a":1.50}}'))!;
    const renamed = withId(frame, 3);
    expect(String(renamed.raw)).toBe('{"jsonrpc":"2.0","id":3,"result":{"a":1.50}}');
    expect(String(undecodedResult(renamed))).toBe('{"a":1.50}');
    expect(renamed.result?.members).toEqual(['a']);
    expect((renamed.msg as JsonRpcResponse).result).toEqual({ a: 1.5 });
    expect(withId({ msg: { jsonrpc: '2.0', id: 1, error: { code: 1, message: 'm' } } }, 'x')).toEqual({
      msg: { jsonrpc: '2.0', id: 'x', error: { code: 1, message: 'm' } },
    });
  });
});
