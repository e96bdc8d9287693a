import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcId } from '../jsonrpc/message.js';
import { withModernFallback } from './era-fallback.js';
import { UpstreamEra } from './era.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

/** A connection that records what it is sent, and lets the test speak for its upstream. */
function fake(): { connection: UpstreamConnection; sent: Frame[]; closed: boolean; events?: UpstreamEvents } {
  const f = {
    sent: [] as Frame[],
    closed: false,
    events: undefined as UpstreamEvents | undefined,
    connection: undefined as unknown as UpstreamConnection,
  };
  f.connection = { send: (frame) => void f.sent.push(frame), close: async () => void (f.closed = true) };
  return f;
}

function setup() {
  const legacy = fake();
  const modern = fake();
  const client: Array<{ msg: any }> = [];
  const failures: JsonRpcId[] = [];
  let refused = 0;
  // A stdio upstream whose era is found out: legacy until refused.
  const era = new UpstreamEra({
    setting: 'auto',
    discover: () => Promise.reject(new Error('not asked')),
    takesInitialize: () => Promise.reject(new Error('not asked')),
    askFirst: false,
    log: pino({ level: 'silent' }),
  });
  const events: UpstreamEvents = {
    onMessage: (frame) => client.push(frame),
    onFailure: (id) => failures.push(id),
    onClose: () => undefined,
  };
  const connection = withModernFallback(
    events,
    (ev) => ((legacy.events = ev), legacy.connection),
    (ev) => ((modern.events = ev), modern.connection),
    (error) => era.tookRefusal(error) && ++refused > 0,
  );
  const init: Frame = { msg: { jsonrpc: '2.0', id: 1, method: 'initialize', params: {} } };
  const ping: Frame = { msg: { jsonrpc: '2.0', id: 2, method: 'ping' } };
  connection.send(init);
  connection.send(ping); // sent before initialize is answered: it waits
  return { legacy, modern, client, failures, connection, init, ping, refused: () => refused, era };
}

describe('a legacy session that may move to the modern bridge', () => {
  it('stays legacy when the upstream answers initialize, and what waited follows', () => {
    const { legacy, modern, client, init, ping } = setup();
    expect(legacy.sent).toEqual([init]);
    legacy.events!.onMessage({ msg: { jsonrpc: '2.0', id: 1, result: { protocolVersion: '2025-11-25' } } });
    expect(client.map((f) => f.msg.id)).toEqual([1]);
    expect(legacy.sent).toEqual([init, ping]);
    expect(modern.events).toBeUndefined();
  });

  it('moves to the bridge with the same initialize when the upstream refuses it as a 2026-07-28 server; the legacy side is closed and heard no more', () => {
    const { legacy, modern, client, failures, connection, init, ping, refused, era } = setup();
    legacy.events!.onMessage({ msg: { jsonrpc: '2.0', id: 1, error: { code: -32022, message: 'Unsupported protocol version' } } });
    expect(refused()).toBe(1);
    expect(era.now).toBe('modern');
    expect(legacy.closed).toBe(true);
    expect(modern.sent).toEqual([init, ping]);
    expect(client).toEqual([]); // the client never sees the refusal
    legacy.events!.onFailure(1, new ProxyError('UPSTREAM_PROTOCOL', 'HTTP 400'));
    legacy.events!.onClose(new ProxyError('UPSTREAM_CLOSED', 'exit'));
    expect(failures).toEqual([]);
    connection.send({ msg: { jsonrpc: '2.0', id: 3, method: 'tools/list' } });
    expect(modern.sent.map((f) => (f.msg as { id: number }).id)).toEqual([1, 2, 3]);
  });

  it('lets what waited go on when initialize fails without an answer', () => {
    const { legacy, failures, init, ping } = setup();
    legacy.events!.onFailure(1, new ProxyError('UPSTREAM_UNREACHABLE', 'refused'));
    expect(failures).toEqual([1]);
    expect(legacy.sent).toEqual([init, ping]);
  });
});
