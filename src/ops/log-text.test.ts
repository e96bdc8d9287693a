import { describe, expect, it } from 'vitest';
import { boundedFields, clip, MAX_FIELD_CHARS } from './log-text.js';

describe('clip', () => {
  it('keeps a short string and cuts a long one, saying how much went', () => {
    expect(clip('tools/call')).toBe('tools/call');
    expect(clip('x'.repeat(250), 200)).toBe(`${'x'.repeat(200)}… (50 more characters)`);
  });
});

describe('boundedFields', () => {
  it('returns the same object when nothing is too long', () => {
    const fields = { method: 'tools/call', ms: 3, nested: { list: ['a', 'b'] }, err: new Error('x'.repeat(5000)) };
    expect(boundedFields(fields)).toBe(fields);
  });

  it('clips strings at any depth it walks, shortens arrays, and leaves the input as it was', () => {
    const long = 'y'.repeat(2_000_000);
    const fields = {
      method: long,
      nested: { reason: long, keep: 1 },
      tags: Array.from({ length: 1000 }, (_, i) => `t${i}`),
      deep: { a: { b: { c: { d: long } } } },
    };
    const out = boundedFields(fields) as any;
    expect(out.method).toHaveLength(MAX_FIELD_CHARS + ' (1997952 more characters)'.length + 1);
    expect(out.nested).toEqual({ reason: clip(long), keep: 1 });
    expect(out.tags).toHaveLength(65);
    expect(out.tags.at(-1)).toBe('… (936 more items)');
    expect(out.deep).toEqual({ a: { b: { c: '[object]' } } });
    expect(JSON.stringify(out).length).toBeLessThan(10_000);
    expect(fields.method).toBe(long);
  });
});
