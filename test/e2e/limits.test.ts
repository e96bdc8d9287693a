/**
 * Per-client limits through the proxy, one principal each so they do not disturb one another:
 * concurrent sessions, requests per second, requests in flight (429 with Retry-After), and the
 * cap on stdio upstream processes when no session is idle (503 with Retry-After).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import { commandLine, fixtureArgv, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { callTool, INIT, openGetStream, rawPost, rawSession } from '../helpers/raw.js';

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
    writeFileSync(file, `upstream:\n  command: ${JSON.stringify(FAULTY)}\n  maxProcesses: 4\nlisten:\n  perClient: { sessions: 2, requestsPerSecond: 6, inFlight: 2 }\nauth:\n  tokens:\n${tokens}\n`);
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
    const replies = await Promise.all(Array.from({ length: 14 }, (_, i) => rawPost(proxy.url, { jsonrpc: '2.0', id: i + 1, method: 'ping' }, headers)));
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
    const hanging = await Promise.all(aborts.map((a, i) => fetch(proxy.url, { method: 'POST', headers: { ...headers, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, body: JSON.stringify(callTool(100 + i, 'hang')), signal: a.signal })));
    expect(hanging.map((r) => r.status)).toEqual([200, 200]);
    const third = await rawPost(proxy.url, callTool(102, 'echo', { text: 'x' }), headers);
    expect(third.status).toBe(429);
    expect(third.messages[0].error.message).toMatch(/in flight: at most 2/);
    for (const a of aborts) a.abort();
    // A dropped stream is held for its client to resume (listen.resumableStreams.windowMs) and still counts in flight.
    expect((await rawPost(proxy.url, callTool(103, 'echo', { text: 'held' }), headers)).status).toBe(429);
    // Its requests end with the session (DELETE is no POST in flight): the places come back.
    expect((await fetch(proxy.url, { method: 'DELETE', headers })).status).toBe(200);
    const again = await session(proxy.url, 'inflight');
    let after = await rawPost(proxy.url, callTool(104, 'echo', { text: 'back' }), again);
    for (let i = 0; after.status === 429 && i < 50; i++) after = await new Promise((r) => setImmediate(r)).then(() => rawPost(proxy.url, callTool(105 + i, 'echo', { text: 'back' }), again));
    expect(after.status).toBe(200);
  });
});

describe('per-client limits behind a balancer (listen.trustProxy)', () => {
  afterAll(stopAll);

  it('counts clients by the forwarded address when the connection comes from a trusted proxy', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-limits-')), 'proxy.yaml');
    writeFileSync(file, `upstream:\n  command: ${JSON.stringify(FAULTY)}\nlisten:\n  perClient: { sessions: 1 }\n  trustProxy: ["127.0.0.1"]\n`);
    const proxy = await startProxy(['--config', file]);
    const from = (address: string) => rawPost(proxy.url, INIT, { 'x-forwarded-for': address });
    expect((await from('203.0.113.7')).status).toBe(200);
    expect((await from('203.0.113.8')).status).toBe(200);
    expect((await from('203.0.113.7')).status).toBe(429);
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
