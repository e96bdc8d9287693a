import { describe, expect, it } from 'vitest';
import { lineSplitter } from './lines.js';

describe('lineSplitter', () => {
  it('splits lines across chunks, drops CR and empty lines, and keeps split characters whole', () => {
    const lines: string[] = [];
    const feed = lineSplitter((l) => lines.push(l));
    const bytes = Buffer.from('{"a":"héllo 🌍"}\r\n\n{"b":2}\n{"c"');
    for (let i = 0; i < bytes.length; i++) feed(bytes.subarray(i, i + 1)); // one byte at a time
    feed(':3}\n');
    expect(lines).toEqual(['{"a":"héllo 🌍"}', '{"b":2}', '{"c":3}']);
  });
});
