import { describe, expect, it } from 'vitest';
import { readEvents, type StreamState } from './http-streams.js';

/** The bytes of `text` in pieces of `size`, as a stream body delivers them (multi-byte characters split too). */
async function* chunks(text: string, size: number): AsyncIterable<Buffer> {
  const bytes = Buffer.from(text, 'utf8');
  for (let i = 0; i < bytes.length; i += size) yield bytes.subarray(i, i + size);
}

describe('readEvents', () => {
  it('reads events across any chunk boundary, with ids, retry, comments and CRLF, skipping priming events', async () => {
    const stream =
      ': keep-alive\r\nid: 1\r\ndata:\r\n\r\nretry: 2500\nevent: message\ndata: {"a":\ndata: "é€"}\nid: 2\n\nevent: other\ndata: nope\n\ndata: x\n\n';
    for (const size of [1, 2, 3, 7, 1000]) {
      const state: StreamState = {};
      const data: string[] = [];
      await readEvents(chunks(stream, size), state, (d) => data.push(d));
      expect(data, `chunks of ${size}`).toEqual(['{"a":\n"é€"}', 'x']);
      expect(state).toEqual({ lastEventId: '2', retryMs: 2500 });
    }
  });

  it('keeps where to resume when the stream breaks off', async () => {
    const state: StreamState = {};
    async function* broken(): AsyncIterable<Buffer> {
      yield Buffer.from('id: 7\ndata: {}\n\n');
      throw new Error('socket hang up');
    }
    await expect(readEvents(broken(), state, () => undefined)).rejects.toThrow('socket hang up');
    expect(state.lastEventId).toBe('7');
  });
});
