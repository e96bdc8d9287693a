import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { GATHER_MS, logDestination } from './log-destination.js';

function sink(): { out: Writable; writes: string[] } {
  const writes: string[] = [];
  const out = new Writable({ write: (chunk: Buffer, _encoding, done) => (writes.push(chunk.toString()), done()) });
  return { out, writes };
}

describe('logDestination', () => {
  it('writes the lines of the next few milliseconds together, and what waits at once on drain', async () => {
    const { out, writes } = sink();
    const lines = logDestination(out);
    lines.write('a\n');
    lines.write('b\n');
    expect(writes).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, GATHER_MS * 3));
    expect(writes).toEqual(['a\nb\n']);
    lines.write('c\n');
    lines.drain();
    expect(writes).toEqual(['a\nb\n', 'c\n']);
  });

  it('writes at once when many lines wait, and stops writing once the stream failed', async () => {
    const { out, writes } = sink();
    const lines = logDestination(out);
    const line = `${'x'.repeat(1023)}\n`;
    for (let i = 0; i < 16; i++) lines.write(line);
    expect(writes).toHaveLength(1);
    out.emit('error', Object.assign(new Error('write EPIPE'), { code: 'EPIPE' }));
    lines.write('lost\n');
    lines.drain();
    expect(writes).toHaveLength(1);
  });
});

describe('logDestination, lines that keep coming', () => {
  it('writes what waited with the first line that comes after GATHER_MS, without waiting for its timer', async () => {
    const { out, writes } = sink();
    const lines = logDestination(out);
    lines.write('a\n');
    await new Promise((resolve) => setImmediate(resolve));
    const started = Date.now();
    while (Date.now() - started < GATHER_MS) {
      /* the event loop is busy: the timer cannot fire */
    }
    lines.write('b\n');
    expect(writes).toEqual(['a\nb\n']);
  });
});
