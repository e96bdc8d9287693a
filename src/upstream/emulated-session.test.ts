import { describe, expect, it } from 'vitest';
import { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcId } from '../jsonrpc/message.js';
import { EmulatedSession, MAX_SUBSCRIPTIONS } from './emulated-session.js';

/** A session whose messages and failures to the client are recorded. */
function recorded() {
  const toClient: Array<{ frame: Frame; relatedId?: JsonRpcId }> = [];
  const failures: JsonRpcId[] = [];
  const session = new EmulatedSession({
    onMessage: (frame, relatedId) => toClient.push({ frame, relatedId }),
    onFailure: (id) => failures.push(id),
    onClose: () => undefined,
  });
  return { session, toClient, failures };
}

describe('EmulatedSession', () => {
  it('answers ping and logging/setLevel itself, on the stream of the request, and keeps the level', () => {
    const { session, toClient } = recorded();
    expect(session.answer({ jsonrpc: '2.0', id: 1, method: 'ping' })).toBe(true);
    expect(session.logLevel).toBeUndefined();
    expect(session.answer({ jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'warning' } })).toBe(true);
    expect(session.logLevel).toBe('warning');
    expect(toClient).toEqual([
      { frame: { msg: { jsonrpc: '2.0', id: 1, result: {} } }, relatedId: 1 },
      { frame: { msg: { jsonrpc: '2.0', id: 2, result: {} } }, relatedId: 2 },
    ]);
  });

  it('refuses an unknown level with -32602 and keeps the one set before', () => {
    const { session, toClient } = recorded();
    session.answer({ jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'error' } });
    expect(session.answer({ jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'loud' } })).toBe(true);
    expect(session.answer({ jsonrpc: '2.0', id: 3, method: 'logging/setLevel', params: {} })).toBe(true);
    expect(session.logLevel).toBe('error');
    expect(toClient.slice(1).map(({ frame }) => (frame.msg as { error: { code: number; message: string } }).error)).toEqual([
      { code: -32602, message: expect.stringMatching(/^Invalid params: unknown log level "loud"; use one of debug, /) },
      { code: -32602, message: expect.stringMatching(/^Invalid params: unknown log level undefined/) },
    ]);
  });

  it('passes every log message until a level is set, then those at it or above', () => {
    const { session } = recorded();
    const log = (level: string) => ({ method: 'notifications/message', params: { level, data: 'x' } });
    expect(session.hears(log('debug'))).toBe(true);
    session.answer({ jsonrpc: '2.0', id: 1, method: 'logging/setLevel', params: { level: 'warning' } });
    expect([session.hears(log('info')), session.hears(log('warning')), session.hears({ method: 'notifications/progress' })]).toEqual([
      false,
      true,
      true,
    ]);
  });

  it('counts subscriptions up to the limit, refusing one without a string uri or over the limit with -32602', () => {
    const { session, toClient } = recorded();
    const req = (id: number, method: string, uri?: unknown) => ({ jsonrpc: '2.0' as const, id, method, params: { uri } });
    expect(session.subscription(req(0, 'resources/subscribe', 7))).toBeUndefined();
    expect(session.subscription(req(0, 'resources/unsubscribe'))).toBeUndefined();
    for (let i = 1; i <= MAX_SUBSCRIPTIONS; i++) expect(session.subscription(req(i, 'resources/subscribe', `r://${i}`))).toBeDefined();
    expect(session.subscription(req(1, 'resources/subscribe', 'r://1'))).toEqual({ uri: 'r://1', on: true }); // already in
    expect(session.subscription(req(-1, 'resources/subscribe', 'r://over'))).toBeUndefined();
    session.undoSubscription('r://1', true);
    expect(session.subscription(req(-2, 'resources/subscribe', 'r://over'))).toEqual({ uri: 'r://over', on: true });
    expect(toClient.map(({ frame }) => (frame.msg as { error: { message: string } }).error.message)).toEqual([
      'Invalid params: resources/subscribe needs params.uri, a string',
      'Invalid params: resources/unsubscribe needs params.uri, a string',
      `Invalid params: a session may subscribe to at most ${MAX_SUBSCRIPTIONS} resources; unsubscribe from some first`,
    ]);
  });

  it('leaves every other request to its caller', () => {
    const { session, toClient } = recorded();
    expect(session.answer({ jsonrpc: '2.0', id: 1, method: 'tools/list' })).toBe(false);
    expect(session.answer({ jsonrpc: '2.0', id: 2, method: 'initialize', params: {} })).toBe(false);
    expect(toClient).toEqual([]);
  });

  it('sends nothing more once it has ended, and ends once', () => {
    const { session, toClient, failures } = recorded();
    expect(session.end()).toBe(true);
    expect(session.end()).toBe(false);
    expect(session.closed).toBe(true);
    session.answer({ jsonrpc: '2.0', id: 1, method: 'ping' });
    session.reply(2, {});
    session.error(3, { code: -32602, message: 'bad' });
    session.fail(4, new ProxyError('CLIENT_GONE', 'gone'));
    expect(toClient).toEqual([]);
    expect(failures).toEqual([]);
  });
});
