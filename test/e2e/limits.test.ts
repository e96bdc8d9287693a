/**
 * Per-client limits through the proxy, one principal each so they do not disturb one another:
 * concurrent sessions, requests per second, requests in flight (429 with Retry-After), and the
 * cap on stdio upstream processes when no session is idle (503 with Retry-After). Behind a
 * balancer, every limit counts an IPv6 client by its /64 and an IPv4-mapped one as IPv4.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import { commandLine, fixtureArgv, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { callTool, INIT, modern, openGetStream, rawPost, rawSession, type RawReply } from '../helpers/raw.js';

const FAULTY = commandLine(fixtureArgv('faulty-server'));
const TOKENS = ['sessions', 'rate', 'inflight', 'other'].map((name) => ({ name, token: `${name}-token-0123456789` }));
const as = (name: string) => ({ authorization: `Bearer ${TOKENS.find((t) => t.name === name)!.token}` });

async function session(url: string, who: string): Promise<Record<string, string>> {
  const init = await rawPost(url, INIT, as(who));
  expect(init.status).toBe(200);
  const headers = { ...as(who), 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

describe('per-client limits', () => {
  let proxy: Running;

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-limits-')), 'proxy.yaml');
    const tokens = TOKENS.map((t) => `    - { name: ${t.name}, sha256: ${hashToken(t.token)} }`).join('\n');
    writeFileSync(
      file,
      `upstream:\n  command: ${JSON.stringify(FAULTY)}\n  maxProcesses: 4\nlisten:\n  perClient: { sessions: 2, requestsPerSecond: 6, inFlight: 2 }\nauth:\n  tokens:\n${tokens}\n`,
    );
    proxy = await startProxy(['--config', file]);
  }, 30_000);
  afterAll(stopAll);

  it('caps concurrent sessions per client, and frees the slot when one ends', async () => {
    const first = await session(proxy.url, 'sessions');
    const second = await session(proxy.url, 'sessions');
    const third = await rawPost(proxy.url, INIT, as('sessions'));
    expect(third.status).toBe(429);
    expect(third.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(third.messages[0].error.message).toMatch(/Too many sessions for this client \(limit 2\b/);
    // Another client is not affected.
    const theirs = await session(proxy.url, 'other');
    expect((await fetch(proxy.url, { method: 'DELETE', headers: first })).status).toBe(200);
    const again = await session(proxy.url, 'sessions');
    const theirsToo = await session(proxy.url, 'other');
    // Four processes now run (upstream.maxProcesses: 4), each held by a session with an open GET
    // stream (none idle, so none is ended to make room): the next session is refused until one ends.
    const streams = await Promise.all([second, again, theirs, theirsToo].map((h) => openGetStream(proxy.url, h)));
    expect(streams.map((s) => s.status)).toEqual([200, 200, 200, 200]);
    const full = await rawPost(proxy.url, INIT, as('inflight'));
    expect(full.status).toBe(503);
    expect(full.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(full.messages[0].error.message).toMatch(/upstream\.maxProcesses/);
    for (const s of streams) s.close();
    for (const h of [theirs, theirsToo]) expect((await fetch(proxy.url, { method: 'DELETE', headers: h })).status).toBe(200);
  });

  it('answers 429 with Retry-After beyond the request rate', async () => {
    const headers = await session(proxy.url, 'rate');
    const replies = await Promise.all(
      Array.from({ length: 14 }, (_, i) => rawPost(proxy.url, { jsonrpc: '2.0', id: i + 1, method: 'ping' }, headers)),
    );
    // 6 per second: of 14 requests at once, most are refused for their rate (others for the in-flight limit of 2).
    const refused = replies.filter((r) => r.status === 429 && /per second/.test(r.messages[0].error.message));
    expect(refused.length).toBeGreaterThanOrEqual(2);
    expect(refused[0].headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused[0].messages[0].error.message).toMatch(/at most 6 per second/);
    expect(replies.filter((r) => r.status === 200).every((r) => r.messages[0].result !== undefined)).toBe(true);
  });

  it('answers 429 beyond the requests in flight, and counts a request out when it ends', async () => {
    const headers = await session(proxy.url, 'inflight');
    const aborts = [new AbortController(), new AbortController()];
    // Each hang's reply turns into a stream (headers sent) while the call is in flight.
    const hanging = await Promise.all(
      aborts.map((a, i) =>
        fetch(proxy.url, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
          body: JSON.stringify(callTool(100 + i, 'hang')),
          signal: a.signal,
        }),
      ),
    );
    expect(hanging.map((r) => r.status)).toEqual([200, 200]);
    const third = await rawPost(proxy.url, callTool(102, 'echo', { text: 'x' }), headers);
    expect(third.status).toBe(429);
    expect(third.messages[0].error.message).toMatch(/in flight: at most 2/);
    for (const a of aborts) a.abort();
    // A dropped stream is held for its client to resume (listen.resumableStreams.windowMs) and still counts in flight.
    expect((await rawPost(proxy.url, callTool(103, 'echo', { text: 'held' }), headers)).status).toBe(429);
    // Its requests end with the session (DELETE is no POST in flight): the places come back.
    expect((await fetch(proxy.url, { method: 'DELETE', headers })).status).toBe(200);
    // The session's end releases them as its streams close, on a loaded machine not at once; tries stay
    // under this client's 6 requests per second, which the requests above may have used up.
    const served = async (post: () => Promise<RawReply>) => {
      let reply = await post();
      for (let i = 0; reply.status === 429 && i < 40; i++) reply = await new Promise((r) => setTimeout(r, 250)).then(post);
      return reply;
    };
    const init = await served(() => rawPost(proxy.url, INIT, as('inflight')));
    expect(init.status).toBe(200);
    const again = { ...as('inflight'), 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    let id = 104;
    const after = await served(() => rawPost(proxy.url, callTool(id++, 'echo', { text: 'back' }), again));
    expect(after.status).toBe(200);
  });
});

describe('per-client limits behind a balancer (listen.trustProxy)', () => {
  afterAll(stopAll);

  it('counts clients by the forwarded address when the connection comes from a trusted proxy', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-limits-')), 'proxy.yaml');
    writeFileSync(
      file,
      `upstream:\n  command: ${JSON.stringify(FAULTY)}\nlisten:\n  perClient: { sessions: 1 }\n  trustProxy: ["127.0.0.1"]\n`,
    );
    const proxy = await startProxy(['--config', file]);
    const from = (address: string) => rawPost(proxy.url, INIT, { 'x-forwarded-for': address });
    expect((await from('203.0.113.7')).status).toBe(200);
    expect((await from('203.0.113.8')).status).toBe(200);
    expect((await from('203.0.113.7')).status).toBe(429);
  });
});

describe('one client key for every limit behind a balancer: IPv6 by its /64, IPv4 mapped into IPv6 as IPv4', () => {
  let upstream: Running;
  let proxy: Running;
  const from = (address: string, headers: Record<string, string> = {}) => ({ ...headers, 'x-forwarded-for': address });
  /** 12 addresses of one /64, as a host that holds it can use them. */
  const oneHost = Array.from({ length: 12 }, (_, i) => `2001:db8:aa:bb:${(i * 4099).toString(16)}::${i + 1}`);

  beforeAll(async () => {
    upstream = await startHttpFixture('faulty-server');
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-limits-')), 'proxy.yaml');
    writeFileSync(
      file,
      `upstream:\n  url: ${upstream.url}\nlisten:\n  perClient: { sessions: 4, requestsPerSecond: 20 }\n  trustProxy: ["127.0.0.1"]\nmodern:\n  parkedPerClient: 1\n`,
    );
    proxy = await startProxy(['--config', file]);
  }, 30_000);
  afterAll(stopAll);

  it('admits as many sessions from one /64 as from one address, and counts ::ffff:a.b.c.d as a.b.c.d', async () => {
    const statuses: number[] = [];
    for (const address of oneHost) statuses.push((await rawPost(proxy.url, INIT, from(address))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 429, 429, 429, 429, 429, 429, 429, 429]);
    // Another /64 is another client.
    expect((await rawPost(proxy.url, INIT, from('2001:db8:aa:bc::1'))).status).toBe(200);
    const mapped: number[] = [];
    for (const address of ['203.0.113.10', '::ffff:203.0.113.10', '::ffff:cb00:710a', '203.0.113.10', '::ffff:203.0.113.10'])
      mapped.push((await rawPost(proxy.url, INIT, from(address))).status);
    expect(mapped).toEqual([200, 200, 200, 200, 429]);
  });

  it('counts the request rate of a /64 as one client', async () => {
    const addresses = Array.from({ length: 100 }, (_, i) => `2001:db8:cc:dd::${(i + 1).toString(16)}`);
    const started = Date.now();
    const replies = await Promise.all(
      addresses.map((address, i) => rawPost(proxy.url, { jsonrpc: '2.0', id: i, method: 'ping' }, from(address))),
    );
    const windows = Math.ceil((Date.now() - started) / 1000) + 1; // one-second windows the requests can have fallen in
    const refused = replies.filter((r) => r.status === 429 && /at most 20 per second/.test(r.messages[0]?.error?.message));
    expect(refused.length).toBeGreaterThan(0);
    expect(replies.length - refused.length).toBeLessThanOrEqual(20 * windows);
  });

  it("keeps the calls of a /64 waiting for input within one client's share (modern.parkedPerClient)", async () => {
    const caps = { elicitation: { form: {} } };
    const ask = async (id: number, address: string) => {
      const m = modern(id, 'tools/call', { name: 'elicit', arguments: { message: `who? ${id}` } }, caps);
      const result = (await rawPost(proxy.url, m.body, from(address, m.headers))).messages[0].result;
      expect(result.resultType).toBe('input_required');
      const [key] = Object.keys(result.inputRequests);
      return modern(
        id + 100,
        'tools/call',
        {
          name: 'elicit',
          arguments: { message: `who? ${id}` },
          requestState: result.requestState,
          inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } },
        },
        caps,
      );
    };
    const first = await ask(1, '2001:db8:ee:ff::1');
    const second = await ask(2, '2001:db8:ee:ff::2');
    // One call may wait per client: the second address's call gave up the first one's.
    const late = await rawPost(proxy.url, first.body, from('2001:db8:ee:ff::1', first.headers));
    expect(late.messages[0].error).toMatchObject({
      code: -32602,
      message: expect.stringMatching(/No call is waiting for this requestState/),
    });
    const answered = await rawPost(proxy.url, second.body, from('2001:db8:ee:ff::2', second.headers));
    expect(answered.messages[0].result.resultType).toBe('complete');
  });
});

describe('session lifetime (timeouts.sessionMaxAgeMs)', () => {
  afterAll(stopAll);

  it('ends a session older than the limit with a 404 that says why, and forgets it', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-limits-')), 'proxy.yaml');
    writeFileSync(file, `upstream:\n  command: ${JSON.stringify(FAULTY)}\ntimeouts:\n  sessionMaxAgeMs: 1\n`);
    const proxy = await startProxy(['--config', file]);
    const init = await rawPost(proxy.url, INIT);
    expect(init.status).toBe(200);
    const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    const expired = await rawPost(proxy.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers);
    expect(expired.status).toBe(404);
    expect(expired.messages[0].error.message).toMatch(/Session expired.*initialize/);
    expect((await rawPost(proxy.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers)).status).toBe(404);
  });

  it('ends an open GET stream when its session reaches the limit, without waiting for a request', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-limits-')), 'proxy.yaml');
    writeFileSync(file, `upstream:\n  command: ${JSON.stringify(FAULTY)}\ntimeouts:\n  sessionMaxAgeMs: 1500\n`);
    const proxy = await startProxy(['--config', file]);
    const headers = await rawSession(proxy.url);
    const stream = await fetch(proxy.url, { headers: { ...headers, accept: 'text/event-stream' } });
    expect(stream.status).toBe(200);
    // The stream ends by itself; reading it to its end waits for exactly that (bounded by the test timeout).
    const started = Date.now();
    await stream.text();
    expect(Date.now() - started).toBeLessThan(10_000);
    const after = await rawPost(proxy.url, { jsonrpc: '2.0', id: 3, method: 'tools/list' }, headers);
    expect(after.status).toBe(404);
    expect(after.messages[0].error.message).toMatch(/Session expired/);
  });
});
