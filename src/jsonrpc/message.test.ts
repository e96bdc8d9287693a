import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { isNotification, isRequest, isResponse, nestsDeeperThan, parsePayload, serialize } from './message.js';

describe('parsePayload', () => {
  it('keeps the exact text of a single message for byte-faithful relay', () => {
    const text = '{"jsonrpc":"2.0", "id":1,"method":"x","params":{"b":1,"a":2},"extra":true}';
    const r = parsePayload(text);
    expect(r.ok && serialize(r.frames[0])).toBe(text);
  });

  it('classifies requests, notifications and responses', () => {
    const kinds = [
      '{"jsonrpc":"2.0","id":"a","method":"m"}',
      '{"jsonrpc":"2.0","method":"m"}',
      '{"jsonrpc":"2.0","id":1,"result":{}}',
      '{"jsonrpc":"2.0","id":null,"error":{"code":1,"message":"x"}}',
    ].map((t) => {
      const r = parsePayload(t);
      if (!r.ok) throw new Error(t);
      const m = r.frames[0].msg;
      return [isRequest(m), isNotification(m), isResponse(m)];
    });
    expect(kinds).toEqual([
      [true, false, false],
      [false, true, false],
      [false, false, true],
      [false, false, true],
    ]);
  });

  it('answers bad JSON with -32700 and bad messages with -32600, keeping the id when there is one', () => {
    expect(parsePayload('{oops')).toMatchObject({ ok: false, error: { id: null, error: { code: -32700 } } });
    for (const [text, id] of [
      ['[]', null],
      ['42', null],
      ['{"jsonrpc":"1.0","id":1,"method":"m"}', 1],
      ['{"jsonrpc":"2.0","id":2,"method":7}', 2],
      ['{"jsonrpc":"2.0","id":{},"method":"m"}', null],
      ['{"jsonrpc":"2.0","id":3}', 3],
      ['{"jsonrpc":"2.0","id":4,"result":1,"error":{}}', 4],
      ['{"jsonrpc":"2.0","id":5,"error":{"code":"x"}}', 5],
      ['{"jsonrpc":"2.0","id":6,"method":"m","params":"s"}', 6],
    ] as const) {
      expect(parsePayload(text), text).toMatchObject({ ok: false, error: { id, error: { code: -32600 } } });
    }
  });

  it('accepts batches and rejects a batch with one bad member', () => {
    const ok = parsePayload('[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]');
    expect(ok.ok && ok.batch && ok.frames.length).toBe(2);
    expect(parsePayload('[{"jsonrpc":"2.0","id":1,"method":"a"},{"id":2}]')).toMatchObject({
      ok: false,
      error: { id: 2, error: { code: -32600 } },
    });
  });
});

describe('nestsDeeperThan', () => {
  /** The nesting depth of a parsed value, for comparison. */
  const depthOf = (v: unknown): number => (typeof v === 'object' && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 0);

  it('agrees with the depth of the value for any JSON document', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 12 }), fc.integer({ min: 0, max: 14 }), (value, max) => {
        expect(nestsDeeperThan(value, max)).toBe(depthOf(value) > max);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses deep client documents before anything serializes them, without recursion', () => {
    const deep = '['.repeat(1_000_000) + ']'.repeat(1_000_000);
    const out = parsePayload(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":${deep}}}`, { maxBatch: 10, maxDepth: 64 });
    expect(out).toMatchObject({ ok: false, error: { id: 1, error: { code: -32600, message: expect.stringContaining('64 levels') } } });
    expect(
      parsePayload(`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":"${'['.repeat(200_000)}"}}`, { maxBatch: 10, maxDepth: 64 }).ok,
    ).toBe(true);
  });
});
