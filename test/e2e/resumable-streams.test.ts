/**
 * Resumable POST streams for 2025-11-25 clients: the stream starts with a priming event (an id,
 * the reconnection delay, no data) and numbers every event; a client whose connection drops
 * resumes with GET and Last-Event-ID and gets what it missed, then the rest, once each. A client
 * that does not come back has its request cancelled upstream after the window; an older client
 * gets no ids; a Last-Event-ID this proxy cannot serve is refused.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, rawPost, rawSession } from '../helpers/raw.js';
import {
  callStarted,
  cancellations,
  commandLine,
  eventually,
  fixtureArgv,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';

const dir = mkdtempSync(join(tmpdir(), 'proxy-resume-'));
const started = join(dir, 'started.log');

interface SseEvent {
  id?: string;
  retry?: number;
  data: string;
}

/** Reads SSE events from a response as they arrive. */
function events(res: Response): { seen: SseEvent[]; next(): Promise<SseEvent | undefined>; ended: Promise<void> } {
  const seen: SseEvent[] = [];
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  let done = false;
  let wake: (() => void) | undefined;
  const ended = (async () => {
    for (;;) {
      const chunk = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (chunk.done) break;
      buffer += decoder.decode(chunk.value, { stream: true });
      for (let end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        if (block.startsWith(':')) continue; // a keep-alive comment
        const event: SseEvent = { data: '' };
        for (const line of block.split('\n')) {
          const [field, ...rest] = line.split(': ');
          const value = rest.join(': ');
          if (field === 'id') event.id = value;
          else if (field === 'retry') event.retry = Number(value);
          else if (field === 'data' || field === 'data:') event.data += field === 'data' ? value : '';
        }
        seen.push(event);
        wake?.();
      }
    }
    done = true;
    wake?.();
  })();
  let read = 0;
  return {
    seen,
    ended,
    async next() {
      while (read >= seen.length && !done) await new Promise<void>((resolve) => (wake = resolve));
      return seen[read++];
    },
  };
}

describe('resumable POST streams', () => {
  let proxy: Running;

  beforeAll(async () => {
    const file = join(dir, 'proxy.yaml');
    writeFileSync(
      file,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\n  env: { FAULTY_LOG: ${JSON.stringify(started)} }\nlisten:\n  resumableStreams: { windowMs: 3000, retryMs: 250 }\n`,
    );
    proxy = await startProxy(['--config', file]);
  });
  afterAll(stopAll);

  const post = (headers: Record<string, string>, body: unknown, signal?: AbortSignal) =>
    fetch(proxy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      body: JSON.stringify(body),
      signal,
    });

  it('numbers the events after a priming event, and a client that lost the stream resumes it without losing or repeating one', async () => {
    const session = await rawSession(proxy.url);
    const abort = new AbortController();
    const call = {
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'slow_progress', arguments: { steps: 5, delayMs: 300 }, _meta: { progressToken: 'p' } },
    };
    const first = events(await post(session, call, abort.signal));
    const priming = (await first.next())!;
    expect(priming).toMatchObject({ retry: 250, data: '' });
    // The stream's name is base64url (it may hold "-" itself): the number is after the last one.
    const stream = priming.id!.slice(0, priming.id!.lastIndexOf('-'));
    expect(priming.id).toBe(`${stream}-0`);
    const progress1 = (await first.next())!;
    expect(progress1.id).toBe(`${stream}-1`);
    expect(JSON.parse(progress1.data)).toMatchObject({ method: 'notifications/progress', params: { progress: 1 } });
    abort.abort(); // the connection drops; the call goes on upstream
    await new Promise((resolve) => setTimeout(resolve, 700)); // a couple of events happen meanwhile

    const resumed = await fetch(proxy.url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': progress1.id! } });
    expect(resumed.status).toBe(200);
    const rest = events(resumed);
    await rest.ended;
    expect(rest.seen.map((e) => e.id)).toEqual([2, 3, 4, 5, 6].map((n) => `${stream}-${n}`));
    const messages = rest.seen.map((e) => JSON.parse(e.data));
    expect(messages.slice(0, 4).map((m) => m.params.progress)).toEqual([2, 3, 4, 5]);
    expect(messages[4]).toMatchObject({ id: 1, result: { content: [{ text: 'done 5' }] } });

    // Resuming the same stream again is refused: it ended, nothing is held.
    const again = await fetch(proxy.url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': progress1.id! } });
    expect(again.status).toBe(400);
  });

  it('lets a client come back before its old connection is seen to drop: the old stream is closed, the new one carries on', async () => {
    const session = await rawSession(proxy.url);
    const call = {
      jsonrpc: '2.0',
      id: 2,
      method: 'tools/call',
      params: { name: 'slow_progress', arguments: { steps: 3, delayMs: 300 }, _meta: { progressToken: 'q' } },
    };
    const old = events(await post(session, call));
    const priming = (await old.next())!;
    const seen = (await old.next())!; // progress 1; the old connection stays open
    const resumed = await fetch(proxy.url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': seen.id! } });
    expect(resumed.status).toBe(200);
    const rest = events(resumed);
    await Promise.all([rest.ended, old.ended]); // the proxy closed the old stream
    const stream = priming.id!.slice(0, priming.id!.lastIndexOf('-'));
    expect(rest.seen.map((e) => e.id)).toEqual([2, 3, 4].map((n) => `${stream}-${n}`));
    expect(JSON.parse(rest.seen.at(-1)!.data)).toMatchObject({ id: 2, result: { content: [{ text: 'done 3' }] } });
  });

  it('cancels the request upstream when its client does not come back within the window', async () => {
    const session = await rawSession(proxy.url);
    const abort = new AbortController();
    const reply = await post(session, callTool(77, 'hang'), abort.signal);
    await callStarted(started, 77);
    const stream = events(reply);
    expect((await stream.next())!.data).toBe('');
    abort.abort();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(cancellations(started).some((c) => c.cancelled === 77)).toBe(false); // still held
    await eventually(() => cancellations(started).some((c) => c.cancelled === 77), 10_000, 'the upstream call cancelled after the window');
  });

  it('gives older clients no event ids, and refuses a Last-Event-ID it holds no stream for', async () => {
    const session = await rawSession(proxy.url);
    const old = { ...session, 'mcp-protocol-version': '2025-06-18' };
    const reply = events(
      await post(old, {
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: { name: 'slow_progress', arguments: { steps: 1, delayMs: 200 } },
      }),
    );
    await reply.ended;
    expect(reply.seen.every((e) => e.id === undefined && e.data !== '')).toBe(true);
    expect(JSON.parse(reply.seen.at(-1)!.data)).toMatchObject({ id: 5, result: { content: [{ text: 'done 1' }] } });

    const unknown = await fetch(proxy.url, { headers: { ...session, accept: 'text/event-stream', 'last-event-id': 'AAAAAAAAAAAA-3' } });
    expect(unknown.status).toBe(400);
    expect((await unknown.json()).error.message).toMatch(/cannot be resumed/);
    // Another session cannot resume this one's streams: its id is the session's.
    expect((await rawPost(proxy.url, callTool(6, 'echo', { text: 'still fine' }), session)).messages[0].result.content[0].text).toBe(
      'still fine',
    );
  });
});
