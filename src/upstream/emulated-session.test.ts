import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcErrorObject, JsonRpcId, JsonRpcRequest } from '../jsonrpc/message.js';
import type { McpResult } from '../transformers/contract.js';
import { EmulatedSession, MAX_SUBSCRIPTIONS, type CallHooks, type SessionBackend } from './emulated-session.js';

type Answer = { result: McpResult } | { error: JsonRpcErrorObject };

/** A session over a backend the test drives by hand; what reaches the client and the backend is recorded. */
function recorded() {
  const toClient: Array<{ msg: Record<string, unknown>; relatedId?: JsonRpcId }> = [];
  const failures: JsonRpcId[] = [];
  const calls: Array<{ req: JsonRpcRequest; hooks: CallHooks; answer(a: Answer): void; cancelled?: string }> = [];
  const told: Array<[string, boolean]> = [];
  let refuse: JsonRpcErrorObject | undefined;
  let closed = 0;
  const backend: SessionBackend = {
    initialize: async (client, params) => ({ protocolVersion: params.protocolVersion, seen: client.capabilities }),
    subscription: async (uri, on) => (told.push([uri, on]), refuse),
    call: (req, hooks) =>
      new Promise((answer) => {
        const call: (typeof calls)[number] = { req, hooks, answer };
        hooks.onCancel((reason) => (call.cancelled = reason.message));
        calls.push(call);
      }),
    close: () => void closed++,
  };
  const session = new EmulatedSession(
    {
      onMessage: (frame: Frame, relatedId) => toClient.push({ msg: frame.msg as unknown as Record<string, unknown>, relatedId }),
      onFailure: (id) => failures.push(id),
      onClose: () => undefined,
    },
    backend,
    pino({ level: 'silent' }),
    5000,
  );
  const send = (msg: Record<string, unknown>) => session.send({ msg: { jsonrpc: '2.0', ...msg } as Frame['msg'] });
  const settled = () => new Promise((resolve) => setImmediate(resolve));
  return {
    session,
    send,
    settled,
    toClient,
    failures,
    calls,
    told,
    closed: () => closed,
    refuseNext: (e?: JsonRpcErrorObject) => (refuse = e),
  };
}

const log = (level: string) => ({ jsonrpc: '2.0' as const, method: 'notifications/message', params: { level, data: 'x' } });

describe('EmulatedSession', () => {
  it('answers initialize through the backend, ping and logging/setLevel itself, each on the stream of its request', async () => {
    const s = recorded();
    s.send({ id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: { roots: {} } } });
    s.send({ id: 1, method: 'ping' });
    s.send({ id: 2, method: 'logging/setLevel', params: { level: 'warning' } });
    await s.settled();
    expect(s.session.client.logLevel).toBe('warning');
    expect(s.calls).toEqual([]);
    expect(s.toClient).toEqual([
      { msg: { jsonrpc: '2.0', id: 1, result: {} }, relatedId: 1 },
      { msg: { jsonrpc: '2.0', id: 2, result: {} }, relatedId: 2 },
      { msg: { jsonrpc: '2.0', id: 0, result: { protocolVersion: '2025-06-18', seen: { roots: {} } } }, relatedId: 0 },
    ]);
  });

  it('refuses an unknown level with -32602 and keeps the one set before', () => {
    const s = recorded();
    s.send({ id: 1, method: 'logging/setLevel', params: { level: 'error' } });
    s.send({ id: 2, method: 'logging/setLevel', params: { level: 'loud' } });
    s.send({ id: 3, method: 'logging/setLevel', params: {} });
    expect(s.session.client.logLevel).toBe('error');
    expect(s.toClient.slice(1).map(({ msg }) => msg.error)).toEqual([
      { code: -32602, message: expect.stringMatching(/^Invalid params: unknown log level "loud"; use one of debug, /) },
      { code: -32602, message: expect.stringMatching(/^Invalid params: unknown log level undefined/) },
    ]);
  });

  it('passes every log message until a level is set, then those at it or above, during a call and outside one', async () => {
    const s = recorded();
    s.send({ id: 1, method: 'tools/call', params: { name: 'x' } });
    await s.settled();
    s.calls[0].hooks.notify(log('debug'));
    s.send({ id: 2, method: 'logging/setLevel', params: { level: 'warning' } });
    s.calls[0].hooks.notify(log('info'));
    s.calls[0].hooks.notify(log('error'));
    s.session.deliver(log('info'));
    s.session.deliver({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    const levels = s.toClient.map(({ msg, relatedId }) => `${String(msg.method ?? msg.id)}:${String(relatedId)}`);
    expect(levels).toEqual(['notifications/message:1', '2:2', 'notifications/message:1', 'notifications/tools/list_changed:undefined']);
  });

  it('counts subscriptions up to the limit before the upstream hears of them, and puts back one the upstream refuses', async () => {
    const s = recorded();
    const sub = (id: number, method: string, uri?: unknown) => s.send({ id, method, params: { uri } });
    sub(-1, 'resources/subscribe', 7);
    sub(-2, 'resources/unsubscribe');
    for (let i = 1; i <= MAX_SUBSCRIPTIONS; i++) sub(i, 'resources/subscribe', `r://${i}`);
    sub(-3, 'resources/subscribe', 'r://over');
    await s.settled();
    s.refuseNext({ code: -32602, message: 'no such resource' });
    sub(-4, 'resources/unsubscribe', 'r://1');
    await s.settled();
    sub(-5, 'resources/subscribe', 'r://over'); // r://1 is still held after the refused unsubscribe: still full
    await s.settled();
    expect(s.told.length).toBe(MAX_SUBSCRIPTIONS + 1);
    const errors = s.toClient.filter(({ msg }) => msg.error).map(({ msg }) => (msg.error as JsonRpcErrorObject).message);
    expect(errors).toEqual([
      'Invalid params: resources/subscribe needs params.uri, a string',
      'Invalid params: resources/unsubscribe needs params.uri, a string',
      `Invalid params: a session may subscribe to at most ${MAX_SUBSCRIPTIONS} resources; unsubscribe from some first`,
      'no such resource',
      `Invalid params: a session may subscribe to at most ${MAX_SUBSCRIPTIONS} resources; unsubscribe from some first`,
    ]);
  });

  it("relays a server's request under an id of its own, routes the client's answer back, and forgets it when the call ends", async () => {
    const s = recorded();
    s.send({ id: 7, method: 'tools/call', params: { name: 'ask' } });
    await s.settled();
    const asked = s.calls[0].hooks.ask({ jsonrpc: '2.0', id: 'server-1', method: 'roots/list' });
    const relayed = s.toClient[0];
    expect(relayed).toMatchObject({ msg: { method: 'roots/list' }, relatedId: 7 });
    expect(relayed.msg.id).not.toBe('server-1');
    s.send({ id: relayed.msg.id, result: { roots: [] } });
    expect(await asked).toEqual({ result: { roots: [] } });
    const unanswered = s.calls[0].hooks.ask({ jsonrpc: '2.0', id: 'server-2', method: 'roots/list' });
    s.calls[0].answer({ result: { content: [] } });
    await expect(unanswered).rejects.toThrow(/over/);
    expect(s.toClient.at(-1)).toEqual({ msg: { jsonrpc: '2.0', id: 7, result: { content: [] } }, relatedId: 7 });
  });

  it('a cancelled call is cancelled in the backend and never answered; its id may be used again', async () => {
    const s = recorded();
    s.send({ id: 1, method: 'tools/call', params: { name: 'slow' } });
    await s.settled();
    s.send({ method: 'notifications/cancelled', params: { requestId: 1, reason: 'user stop' } });
    expect(s.calls[0].cancelled).toBe('user stop');
    expect(s.calls[0].hooks.signal.aborted).toBe(true);
    s.calls[0].answer({ result: {} });
    s.send({ id: 1, method: 'tools/call', params: { name: 'again' } });
    await s.settled();
    s.calls[1].answer({ result: { again: true } });
    await s.settled();
    expect(s.toClient).toEqual([{ msg: { jsonrpc: '2.0', id: 1, result: { again: true } }, relatedId: 1 }]);
  });

  it('once closed, cancels its calls, tells the backend once and sends nothing more', async () => {
    const s = recorded();
    s.send({ id: 1, method: 'tools/call' });
    await s.settled();
    await s.session.close();
    await s.session.close();
    expect(s.calls[0].cancelled).toBe('The client session ended');
    expect(s.closed()).toBe(1);
    s.calls[0].answer({ result: {} });
    s.send({ id: 2, method: 'ping' });
    await s.settled();
    expect(s.toClient).toEqual([]);
    expect(s.failures).toEqual([]);
  });

  it('reports a ProxyError from the backend as the failure of its request', async () => {
    const failures: Array<[JsonRpcId, string]> = [];
    const session = new EmulatedSession(
      { onMessage: () => undefined, onFailure: (id, err) => failures.push([id, err.code]), onClose: () => undefined },
      {
        initialize: async () => ({}),
        subscription: async () => undefined,
        call: async () => {
          throw new ProxyError('REQUEST_TIMEOUT', 'late');
        },
        close: () => undefined,
      },
      pino({ level: 'silent' }),
      5000,
    );
    session.send({ msg: { jsonrpc: '2.0', id: 3, method: 'tools/call' } });
    await new Promise((resolve) => setImmediate(resolve));
    expect(failures).toEqual([[3, 'REQUEST_TIMEOUT']]);
  });
});
