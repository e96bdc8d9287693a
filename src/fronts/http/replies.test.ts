/**
 * How a POST is answered (PostReply) and the session's GET stream (SseStream), on a real HTTP
 * server on 127.0.0.1 read with fetch: plain JSON when the answer comes at once and alone, SSE
 * when there is more, a JSON array for a batch in JSON mode, and multi-line JSON split into
 * `data:` lines.
 */
import { createServer, type Server, type ServerResponse } from 'node:http';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { PostReply, SseStream } from './replies.js';

const slowReaders = { maxUnreadBytes: 8 * 1024 * 1024, stallMs: 30_000, log: pino({ level: 'silent' }) };
let server: Server | undefined;

/** Serves one request with `handle` and returns what fetch saw. */
async function exchange(
  handle: (res: ServerResponse) => void,
): Promise<{ status: number; type: string | null; length: string | null; body: string }> {
  server = createServer((_req, res) => handle(res));
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
  const res = await fetch(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
  return { status: res.status, type: res.headers.get('content-type'), length: res.headers.get('content-length'), body: await res.text() };
}

afterEach(async () => {
  await new Promise((r) => server?.close(r));
  server = undefined;
});

describe('PostReply', () => {
  it('auto: answers a lone message that comes at once as plain JSON, with its status', async () => {
    const got = await exchange((res) =>
      new PostReply(res, () => ({ 'x-extra': '1' }), 'auto', false, 1000, slowReaders).send('{"id":1}', true, 202),
    );
    expect(got).toEqual({ status: 202, type: 'application/json', length: '8', body: '{"id":1}' });
  });

  it('auto: streams as SSE once a message is not the last, and ends with the last', async () => {
    const got = await exchange((res) => {
      const reply = new PostReply(res, () => ({}), 'auto', false, 1000, slowReaders);
      reply.send('{"method":"notifications/progress"}', false);
      reply.send('{"id":1}', true);
    });
    expect(got.type).toBe('text/event-stream');
    expect(got.body).toBe('event: message\ndata: {"method":"notifications/progress"}\n\nevent: message\ndata: {"id":1}\n\n');
  });

  it('auto: starts streaming when the answer takes longer than streamAfterMs', async () => {
    const got = await exchange((res) => {
      const reply = new PostReply(res, () => ({}), 'auto', false, 10, slowReaders);
      setTimeout(() => reply.send('{"id":2}', true), 50);
    });
    expect(got.type).toBe('text/event-stream');
    expect(got.body).toBe('event: message\ndata: {"id":2}\n\n');
  });

  it('json: collects a batch into one array, whatever came first', async () => {
    const got = await exchange((res) => {
      const reply = new PostReply(res, () => ({}), 'json', true, 1000, slowReaders);
      reply.send('{"id":2}', false);
      reply.send('{"id":1}', false);
      reply.end();
    });
    expect(got).toMatchObject({ status: 200, type: 'application/json', body: '[{"id":2},{"id":1}]' });
  });
});

describe('SseStream', () => {
  it('writes each message as an event, a multi-line one as several data lines', async () => {
    const got = await exchange((res) => {
      const stream = new SseStream(res, { 'mcp-session-id': 's' }, slowReaders);
      stream.send('{\n  "a": 1\n}');
      stream.ping();
      stream.end();
    });
    expect(got.type).toBe('text/event-stream');
    expect(got.body).toBe('event: message\ndata: {\ndata:   "a": 1\ndata: }\n\n: ping\n\n');
  });

  it('does not count a large unread message as behind because a ping followed it', async () => {
    const big = JSON.stringify({ text: 'x'.repeat(16 * 2 ** 20) }); // more than the socket takes at once: most of it waits unread
    const got = await exchange((res) => {
      const stream = new SseStream(res, {}, { ...slowReaders, maxUnreadBytes: 2 ** 20 });
      stream.send(big);
      stream.ping();
      stream.send('{"id":1}');
      stream.end();
    });
    expect(got.body.endsWith(': ping\n\nevent: message\ndata: {"id":1}\n\n')).toBe(true);
  });
});
