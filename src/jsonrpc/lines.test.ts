import { describe, expect, it } from 'vitest';
import { byteLineSplitter, lineSplitter } from './lines.js';

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

describe('byteLineSplitter', () => {
  it('splits byte lines across chunks, drops CR and empty lines, and copies short lines out of their chunk', () => {
    const lines: Buffer[] = [];
    const feed = byteLineSplitter((l) => lines.push(l));
    const bytes = Buffer.from('{"a":"héllo 🌍"}\r\n\n{"b":2}\n{"c"');
    for (let i = 0; i < bytes.length; i++) feed(bytes.subarray(i, i + 1));
    const text = ':3}\n{"d":4}\n' + 'x'.repeat(100);
    const chunk = Buffer.alloc(text.length, text); // its own memory, as a pipe's read is
    feed(chunk);
    feed(Buffer.from('\n'));
    expect(lines.map(String)).toEqual(['{"a":"héllo 🌍"}', '{"b":2}', '{"c":3}', '{"d":4}', 'x'.repeat(100)]);
    expect(lines[3].buffer).not.toBe(chunk.buffer);
  });
});
