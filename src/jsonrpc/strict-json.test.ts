import { isUtf8 } from 'node:buffer';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { INVALID, scanValue, skipSpace, TOO_DEEP } from './strict-json.js';

const b = (text: string) => Buffer.from(text);

/** The members of `bytes` when they are one JSON object (whitespace around it allowed) nesting at most `depth` levels; undefined otherwise. */
function strictObjectKeys(bytes: Buffer, depth: number): string[] | undefined {
  if (!isUtf8(bytes)) return undefined;
  const start = skipSpace(bytes, 0);
  if (bytes[start] !== 0x7b) return undefined;
  const members: string[] = [];
  const end = scanValue(bytes, start, depth, members);
  return end >= 0 && skipSpace(bytes, end) === bytes.length ? members : undefined;
}
const keys = (text: string, depth = 64) => strictObjectKeys(b(text), depth);

describe('strictObjectKeys', () => {
  it('reads the top-level member names of one JSON object, keys with escapes as they read', () => {
    expect(keys('{}')).toEqual([]);
    expect(keys(' { } \n')).toEqual([]);
    expect(keys('{"a":1,"b":{"c":[true,false,null,"x",-0.5e+3]},"d":[]}')).toEqual(['a', 'b', 'd']);
    expect(keys('{"\\u0072esultType":"input_required","\\u005fmeta":{},"t\\u0074lMs":1}')).toEqual(['resultType', '_meta', 'ttlMs']);
    expect(keys('{"a\\"b":1,"\\\\":2,"\\/":3,"é🌍":4}')).toEqual(['a"b', '\\', '/', 'é🌍']);
    expect(keys('{"a":1,"a":2}')).toEqual(['a', 'a']);
  });

  it('refuses what only lenient readers take, and never reads past the end', () => {
    for (const text of [
      '{"a":1,}', // trailing comma
      '{"a":[1,]}',
      '{"a":NaN}',
      '{"a":Infinity}',
      '{"a":1 /* comment */}',
      '{"a":1} // comment',
      "{'a':1}",
      '{"a":\'x\'}',
      '{a:1}', // bare word
      '{"a":undefined}',
      '{"a" 1}', // missing colon
      '{"a":1 "b":2}', // missing comma
      '{"a":"line\nbreak"}', // raw control character
      '{"a":"tab\there"}',
      '{"a":"\\x41"}', // not a JSON escape
      '{"a":"\\u00g1"}',
      '{"a":01}',
      '{"a":1.}',
      '{"a":.5}',
      '{"a":+1}',
      '{"a":1e}',
      '{"a":-}',
      '{"a":tru}',
      '{"a":1}}',
      '{"a":[1}',
      '{"a":1',
      '{"a":"open}',
      '[1]', // not an object
      '"x"',
      '{"a":1} {"b":2}',
      '{"a":"\\',
      '{"a":"\\u00',
      '{"a":-',
      '{"a":1e',
      '{"a":t',
      '{"a"',
      '{',
      '',
    ])
      expect(keys(text), JSON.stringify(text)).toBeUndefined();
  });

  it('bounds nesting without recursion', () => {
    const nested = (levels: number) => `{"a":${'['.repeat(levels)}${']'.repeat(levels)}}`;
    expect(keys(nested(63), 64)).toEqual(['a']);
    expect(keys(nested(64), 64)).toBeUndefined();
    expect(scanValue(b(nested(64)), 0, 64)).toBe(TOO_DEEP);
    expect(scanValue(b('{"a":1,}'), 0, 64)).toBe(INVALID);
    expect(scanValue(b('[1,2] tail'), 0, 64)).toBe(5); // one value; what follows is the caller's
    expect(strictObjectKeys(b(nested(200_000)), Infinity)).toEqual(['a']);
  });

  it('agrees with JSON.parse on every object JSON.stringify writes, and on those bytes with any one byte changed', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.string(), fc.jsonValue()), fc.nat(), fc.integer({ min: 0, max: 127 }), (object, at, byte) => {
        const text = JSON.stringify(object);
        expect(keys(text, Infinity)).toEqual(Object.keys(JSON.parse(text) as object));
        const changed = Buffer.from(text);
        changed[at % changed.length] = byte;
        let parsed: unknown;
        try {
          parsed = JSON.parse(changed.toString('utf8'));
        } catch {
          parsed = undefined;
        }
        // A byte changed inside a multi-byte character breaks the UTF-8, which the decoder would have replaced.
        const isObject = isUtf8(changed) && typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
        expect(strictObjectKeys(changed, Infinity) !== undefined, changed.toString()).toBe(isObject);
      }),
      { numRuns: 2000 },
    );
  });
});
