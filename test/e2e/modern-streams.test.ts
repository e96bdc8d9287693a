/**
 * Modern request streams in front of a legacy server (the faulty-server fixture over stdio):
 * subscriptions/listen (the acknowledgement names what the upstream can send, list_changed and
 * resources/updated reach the listeners that opted in, tagged with their subscriptionId, a
 * closed listen stream ends cleanly), and a closed response stream cancelling the call upstream.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModern, type ModernConnected } from '../helpers/modern-clients.js';
import { startFaultProxy } from '../helpers/fault-proxy.js';
import {
  cancellations,
  commandLine,
  eventually,
  fixtureArgv,
  startHttpFixture,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';
import { rawPost } from '../helpers/raw.js';

describe('subscriptions/listen (faulty-server fixture over stdio)', () => {
  let proxy: Running;
  let a: ModernConnected;
  let b: ModernConnected;

  beforeAll(async () => {
    proxy = await startProxy(['--upstream', commandLine(fixtureArgv('faulty-server')), '--log-level', 'debug']);
    [a, b] = await Promise.all([
      connectModern('http', { url: proxy.url }, { input: false }),
      connectModern('http', { url: proxy.url }, { input: false }),
    ]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await proxy?.stop();
    await stopAll();
  });

  it('acknowledges first, then fans out only what each listener opted in to', async () => {
    const seen = { a: [] as string[], b: [] as string[] };
    a.client.setNotificationHandler('notifications/tools/list_changed', () => void seen.a.push('tools'));
    a.client.setNotificationHandler('notifications/resources/updated', (n) => void seen.a.push(`updated ${n.params.uri}`));
    b.client.setNotificationHandler('notifications/tools/list_changed', () => void seen.b.push('tools'));
    b.client.setNotificationHandler('notifications/resources/updated', (n) => void seen.b.push(`updated ${n.params.uri}`));
    const subA = await a.client.listen({ toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['faulty://counter'] });
    const subB = await b.client.listen({ toolsListChanged: true });
    // The fixture's prompts do not change (no listChanged): not honoured.
    expect(subA.honoredFilter).toEqual({ toolsListChanged: true, resourceSubscriptions: ['faulty://counter'] });
    expect(subB.honoredFilter).toEqual({ toolsListChanged: true });
    await a.client.callTool({ name: 'bump', arguments: {} });
    await eventually(() => seen.a.includes('updated faulty://counter'), 5000, 'resources/updated to reach listener a');
    await b.client.callTool({ name: 'add_tool', arguments: { name: 'fresh' } });
    await eventually(() => seen.a.includes('tools') && seen.b.includes('tools'), 5000, 'list_changed to reach both listeners');
    expect(seen.b).not.toContain('updated faulty://counter');
    await subB.close();
    await subA.close();
    expect(await subA.closed).toBeDefined();
    // The proxy answers as before once the streams are gone.
    const list = await a.client.listTools();
    expect(list.tools.map((t) => t.name)).toContain('fresh');
  });

  it('rejects a listen request without a notifications filter', async () => {
    const V = '2026-07-28';
    const res = await rawPost(
      proxy.url,
      {
        jsonrpc: '2.0',
        id: 9,
        method: 'subscriptions/listen',
        params: { _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {} } },
      },
      { 'mcp-protocol-version': V, 'mcp-method': 'subscriptions/listen' },
    );
    expect(res.messages.at(-1).error).toMatchObject({ code: -32602, data: { code: 'INVALID_META' } });
    expect(res.messages.at(-1).id).toBe(9);
  });
});

describe('a modern call whose client goes away (faulty-server over stdio)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'modern-cancel-'));
  const cancelLog = join(dir, 'cancel.log');
  /** Cancellations the fixture logged (complete lines only). */
  const cancelled = () => cancellations(cancelLog);
  let proxy: Running;

  beforeAll(async () => {
    const config = join(dir, 'proxy.yaml');
    writeFileSync(
      config,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\n  env:\n    FAULTY_LOG: ${JSON.stringify(cancelLog)}\n`,
    );
    proxy = await startProxy(['--config', config]);
  }, 30_000);
  afterAll(async () => {
    await proxy?.stop();
    await stopAll();
  });

  it('cancels the upstream call when the client closes the response stream', async () => {
    const V = '2026-07-28';
    const meta = { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {} };
    // A first request starts the pooled upstream session, so the next call reaches the upstream at once.
    const warm = await rawPost(
      proxy.url,
      { jsonrpc: '2.0', id: 4, method: 'tools/list', params: { _meta: meta } },
      { 'mcp-protocol-version': V, 'mcp-method': 'tools/list' },
    );
    expect(warm.status).toBe(200);
    const abort = new AbortController();
    const res = await fetch(proxy.url, {
      method: 'POST',
      signal: abort.signal,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': V,
        'mcp-method': 'tools/call',
        'mcp-name': 'hang',
      },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 5,
        method: 'tools/call',
        params: {
          name: 'hang',
          arguments: {},
          _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {} },
        },
      }),
    });
    // The reply turns into a stream when the answer takes longer than a moment: the call is upstream now.
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    abort.abort();
    await eventually(() => cancelled().some((c) => /cancelled the request/.test(c.reason)), 5000, 'upstream cancellation');
  });
});

describe('a Streamable HTTP upstream that restarts under modern clients', () => {
  afterAll(stopAll);

  it('initializes a new pooled session transparently when the upstream forgot the old one', async () => {
    const V = '2026-07-28';
    let upstream = await startHttpFixture('faulty-server');
    // Passed through a fault proxy so that the restarted upstream keeps its URL without rebinding the old port.
    const front = await startFaultProxy(Number(new URL(upstream.url).port));
    const proxy = await startProxy(['--upstream', front.url('/mcp')]);
    const echo = async (id: number, text: string) => {
      const res = await rawPost(
        proxy.url,
        {
          jsonrpc: '2.0',
          id,
          method: 'tools/call',
          params: {
            name: 'echo',
            arguments: { text },
            _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {} },
          },
        },
        { 'mcp-protocol-version': V, 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
      );
      return res.messages.at(-1);
    };
    expect((await echo(1, 'before')).result.content[0].text).toBe('before');
    await upstream.stop('SIGKILL');
    upstream = await startHttpFixture('faulty-server'); // a new process: the pooled session is unknown there
    front.retarget(Number(new URL(upstream.url).port));
    expect((await echo(2, 'after')).result.content[0].text).toBe('after');
    await proxy.stop();
    await front.close();
  });
});
