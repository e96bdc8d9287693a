/**
 * The HTTP session's routing with in-memory channels standing in for the client's POST replies
 * and GET stream, and a recording relay: which stream each message takes, when replies end,
 * what waits for the initialize answer, and what a client closing a stream sets off.
 */
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ProxyError } from '../../jsonrpc/errors.js';
import type { Frame, JsonRpcId } from '../../jsonrpc/message.js';
import type { RelaySession } from '../../core/relay.js';
import { HttpSession } from './session.js';
import type { PostReply, SseStream } from '../http/replies.js';

/**
 * A client stream in memory: records what is sent; `clientCloses()` is the client going away.
 * Ending it reports the close a moment later, as a real response's 'close' event comes.
 */
class MemoryChannel {
  sent: Array<{ msg: any; last?: boolean }> = [];
  open = true;
  pings = 0;
  private closeHandlers: Array<() => void> = [];
  constructor(readonly canStream = true) {}
  get isOpen(): boolean {
    return this.open;
  }
  send(json: string, last?: boolean): void {
    this.sent.push({ msg: JSON.parse(json), last });
    if (last) this.end();
  }
  ping(): void {
    this.pings++;
  }
  end(): void {
    if (!this.open) return;
    this.open = false;
    queueMicrotask(() => this.fireClose());
  }
  clientCloses(): void {
    this.open = false;
    this.fireClose();
  }
  onClose(fn: () => void): void {
    this.closeHandlers.push(fn);
  }
  ids(): unknown[] {
    return this.sent.map((s) => s.msg.id ?? s.msg.method);
  }
  private fireClose(): void {
    const handlers = this.closeHandlers;
    this.closeHandlers = [];
    for (const fn of handlers) fn();
  }
}

/** The relay as the session sees it, recording what it is told. */
function recordingRelay() {
  const calls = { abandoned: [] as JsonRpcId[], listening: [] as boolean[], closed: [] as ProxyError[], pending: 0 };
  const relay = {
    abandon: (id: JsonRpcId) => void calls.abandoned.push(id),
    clientListening: (on: boolean) => void calls.listening.push(on),
    close: async (err: ProxyError) => void calls.closed.push(err),
    get pendingCount() {
      return calls.pending;
    },
  } as unknown as RelaySession;
  return { relay, calls };
}

function session() {
  const { relay, calls } = recordingRelay();
  const ended: ProxyError[] = [];
  let minted = 0;
  const s = new HttpSession(
    pino({ level: 'silent' }),
    (_s, reason) => ended.push(reason),
    () => `sid-${++minted}`,
    'anonymous',
  );
  s.relay = relay;
  return { s, calls, ended, minted: () => minted };
}

const post = (canStream = true) => new MemoryChannel(canStream);
const asPost = (c: MemoryChannel) => c as unknown as PostReply;
const asGet = (c: MemoryChannel) => c as unknown as SseStream;
const response = (id: JsonRpcId, result: Record<string, unknown> = {}): Frame => ({ msg: { jsonrpc: '2.0', id, result } });
const note = (method: string, params: Record<string, unknown> = {}): Frame => ({ msg: { jsonrpc: '2.0', method, params } });

describe('HttpSession routing', () => {
  it('answers a batch on its POST and ends the reply with the last answer, whatever the order', () => {
    const { s } = session();
    const channel = post();
    s.addExchange(asPost(channel), [1, 2]);
    s.deliver(response(2), 2);
    s.deliver(response(1), 1);
    expect(channel.sent).toEqual([
      { msg: response(2).msg, last: false },
      { msg: response(1).msg, last: true },
    ]);
    expect(channel.open).toBe(false);
    expect(s.isWaiting(1) || s.isWaiting(2)).toBe(false);
  });

  it("puts progress on the asking POST's stream, or on the GET stream when that POST answers only in JSON", () => {
    const { s } = session();
    const streaming = post();
    const jsonOnly = post(false);
    const get = post();
    s.attachGetStream(asGet(get));
    s.addExchange(asPost(streaming), [1]);
    s.addExchange(asPost(jsonOnly), [2]);
    s.deliver(note('notifications/progress', { progress: 1 }), 1);
    s.deliver(note('notifications/progress', { progress: 2 }), 2);
    s.deliver(response(2), 2);
    expect(streaming.sent.map((m) => m.msg.params?.progress)).toEqual([1]);
    expect(get.sent.map((m) => m.msg.params?.progress)).toEqual([2]);
    expect(jsonOnly.ids()).toEqual([2]);
  });

  it('sends server messages that belong to no request on the GET stream, else on an open streaming POST, else keeps them for the next GET stream', () => {
    const { s, calls } = session();
    const jsonOnly = post(false);
    s.addExchange(asPost(jsonOnly), [1]);
    s.deliver(note('notifications/tools/list_changed'));
    expect(jsonOnly.sent).toEqual([]);

    const streaming = post();
    s.addExchange(asPost(streaming), [2]);
    s.deliver(note('notifications/resources/list_changed'));
    expect(streaming.ids()).toEqual(['notifications/resources/list_changed']);

    const get = post();
    s.attachGetStream(asGet(get));
    expect(get.ids()).toEqual(['notifications/tools/list_changed']); // the one that waited
    s.deliver(note('notifications/prompts/list_changed'));
    expect(get.ids()).toEqual(['notifications/tools/list_changed', 'notifications/prompts/list_changed']);
    expect(calls.listening).toEqual([true]);
  });

  it('keeps at most 1000 messages for a client without a stream, dropping the oldest', () => {
    const { s } = session();
    for (let i = 0; i < 1005; i++) s.deliver(note('notifications/message', { i }));
    const get = post();
    s.attachGetStream(asGet(get));
    expect(get.sent).toHaveLength(1000);
    expect(get.sent[0].msg.params.i).toBe(5);
  });

  it("replaces a reconnecting client's GET stream: the old one ends, and its late close does not stop listening", async () => {
    const { s, calls } = session();
    const first = post();
    const second = post();
    s.attachGetStream(asGet(first));
    s.attachGetStream(asGet(second));
    await Promise.resolve(); // the old stream's close arrives
    expect(first.open).toBe(false);
    expect(calls.listening).toEqual([true, true]);
    s.heartbeat();
    expect([first.pings, second.pings]).toEqual([0, 1]);
    second.clientCloses();
    expect(calls.listening).toEqual([true, true, false]);
  });

  it('abandons what a closed POST still waited for, and only that', () => {
    const { s, calls } = session();
    const channel = post();
    s.addExchange(asPost(channel), [1, 2, 3]);
    s.deliver(response(2), 2);
    channel.clientCloses();
    expect(calls.abandoned.sort()).toEqual([1, 3]);
    expect(s.isWaiting(1)).toBe(false);
    s.deliver(response(1), 1); // a late answer is not written to the closed reply
    expect(channel.sent).toHaveLength(1);
  });

  it('forgets a request the client cancelled and ends its reply', () => {
    const { s } = session();
    const channel = post();
    s.addExchange(asPost(channel), [9]);
    s.cancelled(9);
    expect(channel.open).toBe(false);
    expect(s.isWaiting(9)).toBe(false);
  });

  it('holds messages about initialize until its answer, then mints the session id once and sends them just before the answer', () => {
    const { s, minted } = session();
    const channel = post();
    s.addExchange(asPost(channel), [0], true);
    s.deliver(note('notifications/message', { early: true }), 0);
    expect(channel.sent).toEqual([]);
    expect(s.identified).toBe(false);
    s.deliver(response(0, { protocolVersion: '2025-11-25' }), 0);
    expect(minted()).toBe(1);
    expect(s.id).toBe('sid-1');
    expect(s.identified).toBe(true);
    expect(channel.ids()).toEqual(['notifications/message', 0]);
    expect(channel.sent.at(-1)!.last).toBe(true);
    expect(minted()).toBe(1);
  });

  it('ends the session when initialize fails, or when the client gives up on it', async () => {
    const failed = session();
    failed.s.addExchange(asPost(post()), [0], true);
    failed.s.deliver({ msg: { jsonrpc: '2.0', id: 0, error: { code: -32602, message: 'bad version' } } }, 0);
    await new Promise((r) => setImmediate(r));
    expect(failed.calls.closed.map((e) => [e.code, e.message])).toEqual([['UPSTREAM_START_FAILED', 'initialize failed']]);

    const gaveUp = session();
    const channel = post();
    gaveUp.s.addExchange(asPost(channel), [0], true);
    channel.clientCloses();
    expect(gaveUp.calls.abandoned).toEqual([0]);
    expect(gaveUp.calls.closed.map((e) => e.message)).toEqual(['The client gave up on initialize']);
  });

  it('ends every reply and the GET stream once, and tells its owner once', () => {
    const { s, ended, calls } = session();
    const a = post();
    const b = post();
    const get = post();
    s.addExchange(asPost(a), [1, 2]);
    s.addExchange(asPost(b), [3]);
    s.attachGetStream(asGet(get));
    expect(s.isQuiet).toBe(false);
    s.end(new ProxyError('UPSTREAM_CLOSED', 'gone'));
    s.end(new ProxyError('UPSTREAM_CLOSED', 'again'));
    expect([a.open, b.open, get.open]).toEqual([false, false, false]);
    expect(ended.map((e) => e.message)).toEqual(['gone']);
    expect(calls.abandoned).toEqual([]); // ending is not the client giving up
    expect(s.isQuiet).toBe(true);
  });
});
