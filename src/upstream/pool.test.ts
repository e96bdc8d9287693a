import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcRequest } from '../jsonrpc/message.js';
import { UpstreamPool } from './pool.js';
import type { UpstreamConnection, UpstreamEvents } from './types.js';

const log = pino({ level: 'silent' });

/** An in-memory legacy server: answers initialize, echoes tools/call, can ask for input or die. */
class FakeServer {
  readonly received: JsonRpcRequest[] = [];
  closed = false;
  constructor(
    readonly events: UpstreamEvents,
    readonly number: number,
  ) {}
  connection(): UpstreamConnection {
    return {
      send: (frame: Frame) => queueMicrotask(() => this.onFrame(frame)),
      close: async () => {
        this.die(new ProxyError('UPSTREAM_CLOSED', 'closed'));
      },
    };
  }
  die(err: ProxyError): void {
    if (this.closed) return;
    this.closed = true;
    this.events.onClose(err);
  }
  private onFrame(frame: Frame): void {
    const msg = frame.msg as JsonRpcRequest;
    if (this.closed || !('method' in msg) || msg.id === undefined) return;
    this.received.push(msg);
    const reply = (result: Record<string, unknown>) => this.events.onMessage({ msg: { jsonrpc: '2.0', id: msg.id, result } });
    if (msg.method === 'initialize')
      return reply({
        protocolVersion: '2025-11-25',
        capabilities: { tools: {} },
        serverInfo: { name: `fake-${this.number}`, version: '1' },
        echo: msg.params?.capabilities,
      });
    if (msg.method === 'tools/call') {
      if (msg.params?.name === 'ask') {
        this.events.onMessage({ msg: { jsonrpc: '2.0', id: 'srv-1', method: 'roots/list', params: {} } });
        return; // answers once the roots come back (not needed here)
      }
      return reply({ content: [{ type: 'text', text: `from ${this.number}` }] });
    }
  }
}

/** A lease key for one principal and client. */
const key = (capabilities: Record<string, unknown>, principal = 'alice') => ({ principal, clientKey: principal, capabilities });

function poolOf(max = 3, more: Partial<ConstructorParameters<typeof UpstreamPool>[0]> = {}) {
  const servers: FakeServer[] = [];
  const pool = new UpstreamPool({
    connect: (events) => {
      const s = new FakeServer(events, servers.length + 1);
      servers.push(s);
      return s.connection();
    },
    maxSessions: max,
    idleMs: 60_000,
    initializeTimeoutMs: 1000,
    clientInfo: { name: 'test', version: '1' },
    log,
    ...more,
  });
  return { pool, servers };
}

describe('UpstreamPool', () => {
  it('initializes one session per capability set, shares it between requests, and remaps ids', async () => {
    const { pool, servers } = poolOf();
    const [a, b] = await Promise.all([pool.acquire(key({})), pool.acquire(key({}))]);
    expect(a.client).toBe(b.client);
    const c = await pool.acquire(key({ sampling: {} }));
    expect(c.client).not.toBe(a.client);
    expect(servers.map((s) => s.received[0].params?.capabilities)).toEqual([{}, { sampling: {} }]);
    const { id, outcome } = a.client.request('tools/call', { name: 'echo' }, {}, 1000);
    const done = await outcome;
    expect('response' in done && done.response.id).toBe(id);
    expect(typeof id).toBe('number');
    [a, b, c].forEach((l) => l.release());
    await pool.close();
  });

  it('gives an exclusive lease a session of its own, and refuses with UPSTREAM_BUSY when all are taken', async () => {
    const { pool } = poolOf(2);
    const first = await pool.acquire(key({ roots: {} }), true);
    const second = await pool.acquire(key({ roots: {} }), true);
    expect(second.client).not.toBe(first.client);
    await expect(pool.acquire(key({ roots: {} }), true)).rejects.toMatchObject({ code: 'UPSTREAM_BUSY' });
    first.release();
    // A released session is reused; a session nobody holds may be evicted for another key.
    expect((await pool.acquire(key({ roots: {} }), true)).client).toBe(first.client);
    second.release();
    const other = await pool.acquire(key({ elicitation: {} }));
    expect(other.client).not.toBe(second.client);
    expect(second.client.closed).toBeDefined();
    await pool.close();
  });

  it('replaces a session that died, and routes a server request to the only call in flight', async () => {
    const { pool, servers } = poolOf();
    const lease = await pool.acquire(key({}));
    const asked: string[] = [];
    const { outcome } = lease.client.request('tools/call', { name: 'ask' }, { onServerRequest: (r) => void asked.push(r.method) }, 1000);
    await new Promise((r) => setImmediate(r));
    expect(asked).toEqual(['roots/list']);
    servers[0].die(new ProxyError('UPSTREAM_CLOSED', 'crashed'));
    const ended = await outcome;
    expect('failure' in ended && ended.failure.code).toBe('UPSTREAM_CLOSED');
    lease.release();
    const next = await pool.acquire(key({}));
    expect(next.client).not.toBe(lease.client);
    expect(servers).toHaveLength(2);
    next.release();
    await pool.close();
  });

  it('never lets two principals share a session unless the server is declared stateless', async () => {
    const { pool, servers } = poolOf(4);
    const [alice, bob] = await Promise.all([pool.acquire(key({}, 'alice')), pool.acquire(key({}, 'bob'))]);
    expect(alice.client).not.toBe(bob.client);
    expect(servers).toHaveLength(2);
    [alice, bob].forEach((l) => l.release());
    await pool.close();
    const shared = poolOf(4, { sharePrincipals: true });
    const [a, b] = await Promise.all([shared.pool.acquire(key({}, 'alice')), shared.pool.acquire(key({}, 'bob'))]);
    expect(a.client).toBe(b.client);
    [a, b].forEach((l) => l.release());
    await shared.pool.close();
  });

  it('keys sessions by the capability flags the revision defines, nothing a client invents', async () => {
    const { pool, servers } = poolOf(4);
    const leases = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        pool.acquire(key({ roots: { [`r${i}`]: {} }, sampling: { context: {}, [`x${i}`]: 1 }, extra: { i } })),
      ),
    );
    expect(new Set(leases.map((l) => l.client)).size).toBe(1);
    expect(servers[0].received[0].params?.capabilities).toEqual({ sampling: { context: {} }, roots: {} });
    leases.forEach((l) => l.release());
    await pool.close();
  });

  it('holds at most perClient sessions for one client, and keeps room for calls that cannot ask for input', async () => {
    const { pool } = poolOf(4, { perClient: 2, maxExclusive: 3 });
    const mine = [await pool.acquire(key({ roots: {} }), true), await pool.acquire(key({ roots: {} }), true)];
    await expect(pool.acquire(key({ roots: {} }), true)).rejects.toMatchObject({
      code: 'UPSTREAM_BUSY',
      message: expect.stringContaining('modern.pool.perClient'),
    });
    const theirs = await pool.acquire(key({ roots: {} }, 'bob'), true);
    // Three exclusive sessions held: the fourth is kept for calls that cannot ask for input.
    await expect(pool.acquire(key({ roots: {} }, 'carol'), true)).rejects.toMatchObject({
      code: 'UPSTREAM_BUSY',
      message: expect.stringContaining('kept for other calls'),
    });
    const plain = await pool.acquire(key({}, 'carol'));
    expect(plain.client.server).toBeDefined();
    // A client's idle session makes way for its next one.
    mine[0].release();
    const again = await pool.acquire(key({ sampling: {} }));
    expect(again.client).not.toBe(mine[0].client);
    expect(mine[0].client.closed).toBeDefined();
    [mine[1], theirs, plain, again].forEach((l) => l.release());
    await pool.close();
  });

  it('counts an idle session another client started against the client that takes it alone', async () => {
    const { pool } = poolOf(8, { perClient: 2, sharePrincipals: true });
    const anon = (client: string) => ({ principal: '', clientKey: client, capabilities: { elicitation: {} } });
    // Another client leaves four idle sessions behind (two at a time).
    for (let round = 0; round < 2; round++) {
      const left = [await pool.acquire(anon(`other-${round}`), true), await pool.acquire(anon(`other-${round}`), true)];
      left.forEach((l) => l.release());
    }
    const taken = [await pool.acquire(anon('greedy'), true), await pool.acquire(anon('greedy'), true)];
    expect(taken[0].client).not.toBe(taken[1].client);
    await expect(pool.acquire(anon('greedy'), true)).rejects.toMatchObject({
      code: 'UPSTREAM_BUSY',
      message: expect.stringContaining('modern.pool.perClient'),
    });
    taken.forEach((l) => l.release());
    await pool.close();
  });
});
