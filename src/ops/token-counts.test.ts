import { describe, expect, it } from 'vitest';
import { loadTokenizer, readableText, TokenMeter, type TokenCount } from './token-counts.js';

const count = await loadTokenizer();
const nextTurn = () => new Promise((r) => setImmediate(r));

describe('readableText', () => {
  it('reads text blocks, prompt messages, resource texts and list entries, not binary content or _meta', () => {
    expect(
      readableText('tools/call', {
        content: [
          { type: 'text', text: 'a' },
          { type: 'image', data: 'AAAA' },
          { type: 'text', text: 'b' },
        ],
        _meta: { x: 'hidden' },
      }),
    ).toBe('a\nb');
    expect(readableText('prompts/get', { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] })).toBe('hi');
    expect(
      readableText('resources/read', {
        contents: [
          { uri: 'x', text: 'doc' },
          { uri: 'y', blob: 'AAAA' },
        ],
      }),
    ).toBe('doc');
    expect(readableText('tools/call', { content: [], structuredContent: { a: 1 } })).toBe('{"a":1}');
    expect(readableText('tools/list', { tools: [{ name: 't' }] })).toBe('[{"name":"t"}]');
  });
});

describe('TokenMeter', () => {
  it('counts in and out after the current work, once when the result is unchanged', async () => {
    const seen: TokenCount[] = [];
    const meter = new TokenMeter(
      count,
      1000,
      (c) => seen.push(c),
      () => undefined,
    );
    meter.observe(
      'tools/call',
      'get',
      { content: [{ type: 'text', text: '## Title\n\n**bold** words here' }] },
      { content: [{ type: 'text', text: 'Title\n\nbold words here' }] },
    );
    meter.observe('tools/call', 'get', { content: [{ type: 'text', text: 'same text' }] }, undefined);
    expect(seen).toEqual([]);
    await nextTurn();
    expect(seen[0]).toMatchObject({ method: 'tools/call', tool: 'get' });
    expect(seen[0].out).toBeLessThan(seen[0].in);
    expect(seen[1].in).toBe(count('same text'));
    expect(seen[1].out).toBe(seen[1].in);
  });

  it('skips results over maxChars and folds tool names past the label limit into "other"', async () => {
    const seen: TokenCount[] = [];
    let skipped = 0;
    const meter = new TokenMeter(
      count,
      10,
      (c) => seen.push(c),
      () => skipped++,
    );
    meter.observe('tools/call', 'big', { content: [{ type: 'text', text: 'x'.repeat(11) }] }, undefined);
    for (let i = 0; i < 201; i++) meter.observe('tools/call', `tool-${i}`, { content: [{ type: 'text', text: 'ok' }] }, undefined);
    await nextTurn();
    expect(skipped).toBe(1);
    expect(new Set(seen.map((c) => c.tool)).size).toBe(201); // 200 names, then "other"
    expect(seen.at(-1)!.tool).toBe('other');
  });
});
