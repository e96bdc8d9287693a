/**
 * The relay session's bookkeeping with an in-memory upstream (an object that records what it is
 * sent and answers when told) and a recording client sink, on vitest's fake clock: answers,
 * timeouts and their upstream cancellations, duplicates, client cancellations, progress routing,
 * an upstream that closes under pending requests, and shaped results.
 */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ProxyError, unusableAnswer } from '../jsonrpc/errors.js';
import { parseUpstream, type Frame, type JsonRpcId } from '../jsonrpc/message.js';
import type { UpstreamConnection, UpstreamEvents } from '../upstream/types.js';
import { RelaySession, type ClientSink, type ResultShaper } from './relay.js';

/** An upstream in memory: `sent` is what the relay sent it; `events` answers back. */
class MemoryUpstream implements UpstreamConnection {
  sent: Frame[] = [];
  closed = false;
  events!: UpstreamEvents;
  send(frame: Frame): void {
    this.sent.push(frame);
  }
  async close(): Promise<void> {
    this.closed = true;
  }
  reply(id: JsonRpcId, result: Record<string, unknown>): void {
    this.events.onMessage({ msg: { jsonrpc: '2.0', id, result } });
  }
  methods(): string[] {
    return this.sent.map((f) => (f.msg as { method?: string }).method ?? 'response');
  }
}

/** What the client side received. */
class RecordingSink implements ClientSink {
  delivered: Array<{ msg: any; relatedId?: JsonRpcId }> = [];
  cancelledIds: JsonRpcId[] = [];
  ended?: ProxyError;
  deliver(frame: Frame, relatedId?: JsonRpcId): void {
    this.delivered.push({ msg: frame.msg, relatedId });
  }
  cancelled(id: JsonRpcId): void {
    this.cancelledIds.push(id);
  }
  end(reason: ProxyError): void {
    this.ended = reason;
  }
}

const log = pino({ level: 'silent' });
const request = (id: JsonRpcId, method = 'tools/call', params: Record<string, unknown> = { name: 'echo' }): Frame => ({
  msg: { jsonrpc: '2.0', id, method, params },
});

function relay(shaper?: ResultShaper) {
  const upstream = new MemoryUpstream();
  const sink = new RecordingSink();
  const session = new RelaySession((events) => ((upstream.events = events), upstream), sink, {
    requestTimeoutMs: 1000,
    initializeTimeoutMs: 5000,
    shaper,
    log,
  });
  return { upstream, sink, session };
}

describe('RelaySession', () => {
  beforeEach(() => void vi.useFakeTimers());
  afterEach(() => void vi.useRealTimers());

  it('relays a request and its answer, and forgets it once answered', () => {
    const { upstream, sink, session } = relay();
    session.fromClient(request(1));
    expect(upstream.sent.map((f) => f.msg)).toEqual([request(1).msg]);
    expect(session.pendingCount).toBe(1);
    upstream.reply(1, { content: [] });
    expect(sink.delivered).toEqual([{ msg: { jsonrpc: '2.0', id: 1, result: { content: [] } }, relatedId: 1 }]);
    expect(session.pendingCount).toBe(0);
    upstream.reply(1, { late: true }); // nobody waits for it any more
    expect(sink.delivered).toHaveLength(1);
  });

  it('times a request out with REQUEST_TIMEOUT and cancels it upstream; initialize gets its own limit and no cancellation', () => {
    const { upstream, sink, session } = relay();
    session.fromClient(request(0, 'initialize', {}));
    session.fromClient(request(1));
    vi.advanceTimersByTime(1000);
    expect(sink.delivered.map((d) => [d.msg.id, d.msg.error?.data?.code])).toEqual([[1, 'REQUEST_TIMEOUT']]);
    expect(upstream.sent.at(-1)!.msg).toMatchObject({
      method: 'notifications/cancelled',
      params: { requestId: 1, reason: 'Request timed out after 1000 ms' },
    });
    vi.advanceTimersByTime(4000);
    expect(sink.delivered.map((d) => [d.msg.id, d.msg.error?.data?.code])).toEqual([
      [1, 'REQUEST_TIMEOUT'],
      [0, 'REQUEST_TIMEOUT'],
    ]);
    expect(upstream.methods().filter((m) => m === 'notifications/cancelled')).toHaveLength(1);
  });

  it('progress keeps a request alive and reaches the request that asked for it', () => {
    const { upstream, sink, session } = relay();
    session.fromClient(request(7, 'tools/call', { name: 'slow', _meta: { progressToken: 'tok' } }));
    for (let i = 1; i <= 3; i++) {
      vi.advanceTimersByTime(900);
      upstream.events.onMessage({
        msg: { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok', progress: i } },
      });
    }
    vi.advanceTimersByTime(900); // 3.6 s after the request, but 0.9 s after the last progress
    upstream.reply(7, { done: true });
    expect(sink.delivered.map((d) => [d.msg.method ?? d.msg.id, d.relatedId])).toEqual([
      ['notifications/progress', 7],
      ['notifications/progress', 7],
      ['notifications/progress', 7],
      [7, 7],
    ]);
  });

  it('refuses a duplicate id while the first is pending, and still answers the first', () => {
    const { upstream, sink, session } = relay();
    session.fromClient(request(3));
    session.fromClient(request(3));
    expect(sink.delivered[0].msg).toMatchObject({ id: 3, error: { data: { code: 'DUPLICATE_ID' } } });
    expect(upstream.sent).toHaveLength(1);
    upstream.reply(3, { ok: 1 });
    expect(sink.delivered[1].msg).toMatchObject({ id: 3, result: { ok: 1 } });
  });

  it('forgets a request the client cancels, passes the cancellation on, and drops the late answer', () => {
    const { upstream, sink, session } = relay();
    session.fromClient(request(4));
    session.fromClient({ msg: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 4, reason: 'stop' } } });
    expect(sink.cancelledIds).toEqual([4]);
    expect(upstream.methods()).toEqual(['tools/call', 'notifications/cancelled']);
    upstream.reply(4, { late: true });
    vi.advanceTimersByTime(5000);
    expect(sink.delivered).toEqual([]);
  });

  it('answers every pending request when the upstream closes, ends once, and answers later requests itself', () => {
    const { upstream, sink, session } = relay();
    session.fromClient(request(1));
    session.fromClient(request(2));
    upstream.events.onClose(new ProxyError('UPSTREAM_CLOSED', 'exited'));
    upstream.events.onClose(new ProxyError('UPSTREAM_CLOSED', 'again'));
    expect(sink.delivered.map((d) => [d.msg.id, d.msg.error.data.code])).toEqual([
      [1, 'UPSTREAM_CLOSED'],
      [2, 'UPSTREAM_CLOSED'],
    ]);
    expect(sink.ended?.message).toBe('exited');
    session.fromClient(request(3));
    expect(sink.delivered.at(-1)!.msg).toMatchObject({ id: 3, error: { data: { code: 'UPSTREAM_CLOSED' } } });
    expect(upstream.sent).toHaveLength(2);
    vi.advanceTimersByTime(10_000); // no timer outlives the session
    expect(sink.delivered).toHaveLength(3);
  });

  it('cancels upstream what the client can no longer receive, except initialize', () => {
    const { upstream, session } = relay();
    session.fromClient(request(0, 'initialize', {}));
    session.fromClient(request(5));
    session.abandon(0, 'stream closed');
    session.abandon(5, 'stream closed');
    expect(upstream.methods()).toEqual(['initialize', 'tools/call', 'notifications/cancelled']);
    expect(session.pendingCount).toBe(0);
  });

  it('delivers shaped results, waits for asynchronous shaping, and turns a shaping failure into an error answer', async () => {
    const shaper: ResultShaper = {
      onInitialize: () => undefined,
      onRequest: () => undefined,
      wantsResult: () => true,
      shape: (_method, name) =>
        name === 'sync' ? { shaped: 'now' } : name === 'async' ? Promise.resolve({ shaped: 'later' }) : Promise.reject(new Error('boom')),
    };
    const { upstream, sink, session } = relay(shaper);
    for (const [id, name] of [
      [1, 'sync'],
      [2, 'async'],
      [3, 'broken'],
    ] as const) {
      session.fromClient(request(id, 'tools/call', { name }));
      upstream.reply(id, { raw: true });
    }
    await vi.runAllTimersAsync();
    expect(sink.delivered.map((d) => d.msg.result ?? d.msg.error.code)).toEqual([{ shaped: 'now' }, { shaped: 'later' }, -32603]);
  });

  it("rejects its own request when the upstream's answer is not JSON, and keeps serving", async () => {
    const { upstream, sink, session } = relay();
    const asked = session.call({ jsonrpc: '2.0', id: 0, method: 'tools/list', params: {} }, { timeoutMs: 5000 });
    const id = (upstream.sent[0].msg as { id: JsonRpcId }).id;
    // As a transport does with what it reads: an unusable answer fails the request it names.
    const parsed = parseUpstream(Buffer.from(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"result":{"tools":nope}}`), 256);
    expect(!parsed.ok && parsed.answerTo).toBe(id);
    if (!parsed.ok) upstream.events.onFailure(id, unusableAnswer(parsed));
    await expect(asked).rejects.toThrow(/not valid JSON/);
    session.fromClient(request(1));
    upstream.reply(1, { content: [] });
    expect(sink.delivered.map((d) => d.msg.id)).toEqual([1]);
  });
});
