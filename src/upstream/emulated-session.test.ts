import { describe, expect, it } from 'vitest';
import { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcId } from '../jsonrpc/message.js';
import { EmulatedSession } from './emulated-session.js';

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
