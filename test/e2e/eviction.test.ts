/**
 * Closed clients do not lock out the next ones: the official SDK's close() sends no DELETE, so
 * its session stays until it idles out; when a new session finds no room (every upstream
 * process taken, or listen.maxSessions), the least recently used idle session is ended for it.
 * A session with a request in flight or an open stream is never ended so; when every session
 * is busy, a new one gets 503 saying so.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import { EVERYTHING_STDIO, callStarted, commandLine, fixtureArgv, logEntries, startProxy, stopAll } from '../helpers/processes.js';
import { callTool, INIT, metricValue, openGetStream, rawPost, rawSession } from '../helpers/raw.js';

const FAULTY = commandLine(fixtureArgv('faulty-server'));
const as = (who: string) => ({ authorization: `Bearer ${who}-token-0123456789` });

function config(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'proxy-eviction-')), 'proxy.yaml');
  writeFileSync(file, yaml);
  return file;
}

/** An initialized session of `who`: headers for later requests. */
async function sessionOf(url: string, who: string): Promise<Record<string, string>> {
  const init = await rawPost(url, INIT, as(who));
  expect(init.status).toBe(200);
  const headers = { ...as(who), 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

async function sdkClient(url: string): Promise<Client> {
  const client = new Client({ name: 'eviction-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const echoText = async (url: string, headers: Record<string, string>, id: number) =>
  (await rawPost(url, callTool(id, 'echo', { text: `e${id}` }), headers)).messages.at(-1)?.result?.content?.[0]?.text;

describe('session eviction with the default config', () => {
  afterAll(stopAll);

  it('serves 40 SDK clients one after another that close() without DELETE (16 upstream processes), then a new one', async () => {
    const proxy = await startProxy(['--upstream', commandLine(EVERYTHING_STDIO)]);
    for (let i = 1; i <= 40; i++) {
      const client = await sdkClient(proxy.url);
      const result = await client.callTool({ name: 'echo', arguments: { message: `run ${i}` } });
      expect(result.content).toEqual([{ type: 'text', text: `Echo: run ${i}` }]);
      await client.close();
    }
    const client = await sdkClient(proxy.url);
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('echo');
    expect((await client.callTool({ name: 'echo', arguments: { message: 'after 40' } })).content).toEqual([
      { type: 'text', text: 'Echo: after 40' },
    ]);
    await client.close();
    // Sessions 17 to 41 each ended the least recently used idle one; 16 remain.
    expect(await metricValue(proxy.url, 'mcp_proxy_sessions_evicted_total')).toBe(25);
    expect(await metricValue(proxy.url, 'mcp_proxy_sessions')).toBe(16);
  }, 60_000);
});

describe('what eviction never ends', () => {
  afterAll(stopAll);

  it('keeps a session with a request in flight and one with an open GET stream; ends the idle one; refuses with 503 when all are busy', async () => {
    const started = join(mkdtempSync(join(tmpdir(), 'proxy-eviction-')), 'started.log');
    const proxy = await startProxy([
      '--config',
      config(`upstream:\n  command: ${JSON.stringify(FAULTY)}\n  env: { FAULTY_LOG: ${JSON.stringify(started)} }\n  maxProcesses: 3\n`),
    ]);
    const [busy, listening, idle] = [await rawSession(proxy.url), await rawSession(proxy.url), await rawSession(proxy.url)];
    const hang = new AbortController();
    const inFlight = rawPost(proxy.url, callTool(1, 'hang'), busy, hang.signal).catch(() => undefined);
    await callStarted(started, 1);
    const stream = await openGetStream(proxy.url, listening);
    expect(stream.status).toBe(200);
    // The idle session is the one to give way, though the other two were started before it.
    const newcomer = await rawSession(proxy.url);
    expect((await rawPost(proxy.url, callTool(2, 'echo', { text: 'x' }), idle)).status).toBe(404);
    expect(await echoText(proxy.url, busy, 3)).toBe('e3');
    expect(await echoText(proxy.url, listening, 4)).toBe('e4');
    expect(await echoText(proxy.url, newcomer, 5)).toBe('e5');
    expect(await metricValue(proxy.url, 'mcp_proxy_sessions_evicted_total')).toBe(1);
    const logged = logEntries(proxy).filter((e) => /ended the least recently used idle one/.test(e.msg));
    expect(logged).toEqual([
      expect.objectContaining({
        level: 30,
        session: expect.stringMatching(/^[0-9a-f]{8}$/),
        ageMs: expect.any(Number),
        idleMs: expect.any(Number),
      }),
    ]);
    expect(proxy.stderr()).not.toContain(idle['mcp-session-id']);
    // Now every session is busy: the newcomer listens too.
    const newcomerStream = await openGetStream(proxy.url, newcomer);
    const refused = await rawPost(proxy.url, INIT);
    expect(refused.status, proxy.stderr().split('\n').slice(-15).join('\n')).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect(refused.messages[0].error.message).toBe(
      'All 3 upstream processes for sessions are in use (upstream.maxProcesses), and every session is busy (a request in flight or an open stream), so none was ended to make room; try again when one ends',
    );
    expect(await echoText(proxy.url, busy, 6)).toBe('e6');
    expect(await echoText(proxy.url, listening, 7)).toBe('e7');
    hang.abort();
    await inFlight;
    for (const s of [stream, newcomerStream]) s.close();
  });

  it('ends the least recently used idle session at listen.maxSessions too', async () => {
    const proxy = await startProxy(['--config', config(`upstream:\n  command: ${JSON.stringify(FAULTY)}\nlisten:\n  maxSessions: 2\n`)]);
    const [older, newer] = [await rawSession(proxy.url), await rawSession(proxy.url)];
    expect(await echoText(proxy.url, older, 1)).toBe('e1'); // used last: the other one gives way
    const third = await rawSession(proxy.url);
    expect((await rawPost(proxy.url, callTool(2, 'echo', { text: 'x' }), newer)).status).toBe(404);
    expect(await echoText(proxy.url, older, 3)).toBe('e3');
    expect(await echoText(proxy.url, third, 4)).toBe('e4');
  });

  it('ends no session for nothing: while the processes it would free cannot even exit yet, a newcomer is refused and every session stays', async () => {
    const yaml = `upstream:\n  command: ${JSON.stringify(FAULTY)}\n  env: { FAULTY_LINGER: "1" }\n  maxProcesses: 2\ntimeouts:\n  shutdownGraceMs: 5000\n`;
    const proxy = await startProxy(['--config', config(yaml)]);
    const [a, b] = [await rawSession(proxy.url), await rawSession(proxy.url)];
    expect(await echoText(proxy.url, a, 1)).toBe('e1');
    expect(await echoText(proxy.url, b, 2)).toBe('e2');
    const c = await rawSession(proxy.url); // a gives way; its process lingers (exiting: 1 of 2)
    expect((await rawPost(proxy.url, callTool(3, 'echo', { text: 'x' }), a)).status).toBe(404);
    // Ending b would only add a second exiting process: refused, and b stays.
    const refused = await rawPost(proxy.url, INIT);
    expect(refused.status).toBe(503);
    expect(await echoText(proxy.url, b, 4)).toBe('e4');
    expect(await echoText(proxy.url, c, 5)).toBe('e5');
    expect(await metricValue(proxy.url, 'mcp_proxy_sessions_evicted_total')).toBe(1);
  });

  it("lets one principal push out others' idle sessions only up to its own per-client share", async () => {
    const tokens = ['alice', 'bob', 'mallory']
      .map((who) => `    - { name: ${who}, sha256: ${hashToken(as(who).authorization.slice(7))} }`)
      .join('\n');
    // Four processes; one principal may hold two sessions (half, the default with authentication).
    const proxy = await startProxy([
      '--config',
      config(`upstream:\n  command: ${JSON.stringify(FAULTY)}\n  maxProcesses: 4\nauth:\n  tokens:\n${tokens}\n`),
    ]);
    const alice = [await sessionOf(proxy.url, 'alice'), await sessionOf(proxy.url, 'alice')];
    const bob = [await sessionOf(proxy.url, 'bob'), await sessionOf(proxy.url, 'bob')];
    const mallory = [await sessionOf(proxy.url, 'mallory'), await sessionOf(proxy.url, 'mallory')];
    const more = await rawPost(proxy.url, INIT, as('mallory'));
    expect(more.status).toBe(429);
    expect(await metricValue(proxy.url, 'mcp_proxy_sessions_evicted_total')).toBe(2);
    // Alice's were the least recently used; Bob's are left, and stay.
    for (const headers of alice) expect((await rawPost(proxy.url, callTool(1, 'echo', { text: 'x' }), headers)).status).toBe(404);
    for (const [i, headers] of [...bob, ...mallory].entries()) expect(await echoText(proxy.url, headers, 10 + i)).toBe(`e${10 + i}`);
  });
});
