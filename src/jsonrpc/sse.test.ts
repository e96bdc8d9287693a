import { describe, expect, it } from 'vitest';
import { createSseReader, type SseEvent } from './sse.js';

describe('createSseReader', () => {
  it('parses events across arbitrary chunk boundaries, with ids, retry, comments and CRLF', () => {
    const events: SseEvent[] = [];
    const reader = createSseReader((e) => events.push(e));
    const stream = ': keep-alive\r\nid: 1\r\ndata:\r\n\r\nretry: 2500\nevent: message\ndata: {"a":\ndata: 1}\nid: 2\n\ndata: x\n\n';
    for (let i = 0; i < stream.length; i += 3) reader.feed(stream.slice(i, i + 3));
    expect(events).toEqual([
      { event: 'message', data: '', id: '1' },
      { event: 'message', data: '{"a":\n1}', id: '2' },
      { event: 'message', data: 'x', id: undefined },
    ]);
    expect(reader.lastEventId).toBe('2');
    expect(reader.retryMs).toBe(2500);
  });
});
