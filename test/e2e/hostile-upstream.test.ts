/**
 * The server behind the proxy is as untrusted as its clients (test/fixtures/hostile-server.mjs,
 * which writes its own bytes, in both eras, over stdio and HTTP):
 *
 * - a message nested 8,000 levels deep (progress, a log message, a resource update, an answer, a
 *   tools/list) costs that message only: notifications are dropped, an answer becomes a clear
 *   error for its request, and the proxy keeps serving every client, on both fronts;
 * - a result the proxy completes for modern clients is spliced into only when a strict scan
 *   proved it one JSON value without the members the proxy writes, in any spelling: escaped keys
 *   never reach a client twice, and a result that is not JSON is an error, never invalid JSON
 *   written by the proxy.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { SSE_TYPE, mediaTypeOf } from '../../src/mcp/media-type.js';
import { connectModern } from '../helpers/modern-clients.js';
import { connectViaProxy } from '../helpers/clients.js';
import { commandLine, fixtureArgv, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { modern, rawPost, sseMessages } from '../helpers/raw.js';

const HOSTILE = 'hostile-server.mjs';

/** Strict JSON with no member written twice (a first-wins reader and a last-wins one read the same). */
function strictJson(text: string): any {
  const value: unknown = JSON.parse(text);
  parseYaml(text, { uniqueKeys: true }); // throws on a duplicate key, escapes decoded
  return value;
}

/** The one answer of a modern POST, read strictly from its JSON or SSE body. */
async function modernCall(
  url: string,
  id: number,
  method: string,
  params: Record<string, unknown>,
  capabilities: Record<string, unknown> = {},
): Promise<any> {
  const { body, headers } = modern(id, method, params, capabilities);
  const reply = await rawPost(url, body, headers);
  const texts =
    mediaTypeOf(reply.headers.get('content-type')) === SSE_TYPE
      ? reply.text
          .split('\n')
          .filter((l) => l.startsWith('data: ') && l.length > 6)
          .map((l) => l.slice(6))
      : [reply.text];
  const messages = texts.map(strictJson);
  const answer = messages.find((m) => m.id === id);
  expect(answer, reply.text.slice(0, 300)).toBeDefined();
  return answer;
}

const upstreams: Array<[string, 'legacy' | 'modern', () => Promise<string>]> = [
  ['a legacy stdio server', 'legacy', async () => commandLine(fixtureArgv(HOSTILE))],
  ['a legacy HTTP server', 'legacy', async () => (await startHttpFixture(HOSTILE)).url],
  ['a 2026-07-28 stdio server', 'modern', async () => commandLine(fixtureArgv(HOSTILE, '--era', 'modern'))],
  ['a 2026-07-28 HTTP server', 'modern', async () => (await startHttpFixture(HOSTILE, {}, ['--era', 'modern'])).url],
];

/** A v1 (legacy) SDK client on the proxy's HTTP endpoint. */
async function legacyClient(url: string): Promise<Client> {
  const client = new Client({ name: 'hostile-test', version: '1' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

async function alive(proxy: Running): Promise<void> {
  expect(proxy.proc.exitCode).toBeNull();
  expect((await fetch(new URL('/healthz', proxy.url))).status).toBe(200);
}

describe('a hostile upstream', () => {
  afterAll(stopAll);

  describe.each(upstreams)('in front of %s', (_name, era, upstream) => {
    let proxy: Running;
    const started = async () => (proxy ??= await startProxy(['--upstream', await upstream()]));

    it('a deep progress notification or log message costs only itself: modern calls complete', async () => {
      const { url } = await started();
      const progress = await modernCall(url, 1, 'tools/call', { name: 'deep_progress', arguments: {}, _meta: { progressToken: 'p1' } });
      expect(progress.result?.content[0].text, JSON.stringify(progress)).toBe('survived: deep_progress');
      const log = await modernCall(url, 2, 'tools/call', {
        name: 'deep_log',
        arguments: {},
        _meta: { 'io.modelcontextprotocol/logLevel': 'debug' },
      });
      expect(log.result.content[0].text).toBe('survived: deep_log');
      await alive(proxy);
    });

    it('a legacy client, with progress and logging, gets its answers and the proxy keeps serving', async () => {
      const { url } = await started();
      const client = await legacyClient(url);
      if (client.getServerCapabilities()?.logging) await client.setLoggingLevel('debug');
      const progressSeen: unknown[] = [];
      const called = await client.callTool({ name: 'deep_progress', arguments: {} }, undefined, {
        onprogress: (p) => progressSeen.push(p),
        timeout: 10_000,
      });
      expect(called.content).toEqual([{ type: 'text', text: 'survived: deep_progress' }]);
      expect(progressSeen).toEqual([]);
      expect((await client.callTool({ name: 'deep_log', arguments: {} }, undefined, { timeout: 10_000 })).content).toEqual([
        { type: 'text', text: 'survived: deep_log' },
      ]);
      await client.close();
      await alive(proxy);
    });

    it('an answer nested too deep is an error naming the limit, for clients of both eras', async () => {
      const { url } = await started();
      const answer = await modernCall(url, 3, 'tools/call', { name: 'deep_result', arguments: {} });
      expect(answer.error).toMatchObject({
        code: -32603,
        message: expect.stringContaining('upstream.maxJsonDepth'),
        data: { code: 'UPSTREAM_PROTOCOL' },
      });
      const client = await legacyClient(url);
      await expect(client.callTool({ name: 'deep_result', arguments: {} }, undefined, { timeout: 10_000 })).rejects.toThrow(
        /upstream\.maxJsonDepth/,
      );
      expect((await client.callTool({ name: 'ok', arguments: {} })).content).toEqual([{ type: 'text', text: 'survived: ok' }]);
      await client.close();
      await alive(proxy);
    });

    it('escaped keys that spell what the proxy writes never reach a modern client twice; a result that is not JSON is an error', async () => {
      const { url } = await started();
      // A 2026-07-28 server's own resultType is its word (passed through); a legacy server's result is completed by the proxy.
      const served = new Set(['escapedMeta', 'escapedHints', 'invalidUtf8', ...(era === 'legacy' ? ['escapedResultType'] : [])]);
      // The serverInfo of a legacy server's result is the proxy's to write (from initialize); a 2026-07-28 server's is its own (this one writes it only where crafted).
      const serverInfo = (variant: string) =>
        era === 'legacy'
          ? { 'io.modelcontextprotocol/serverInfo': { name: 'hostile' } }
          : variant === 'escapedMeta'
            ? { 'io.modelcontextprotocol/serverInfo': { name: 'EVIL' } }
            : undefined;
      let id = 10;
      for (const variant of [
        'escapedResultType',
        'escapedMeta',
        'escapedHints',
        'trailingComma',
        'nan',
        'comment',
        'singleQuotes',
        'bareWord',
        'missingColon',
        'controlCharacter',
        'invalidUtf8',
      ]) {
        const answer = await modernCall(url, ++id, 'tools/call', { name: 'crafted', arguments: { variant } }); // strictly valid, no duplicates
        if (served.has(variant)) {
          expect(answer.result, `${variant}: ${JSON.stringify(answer)}`).toMatchObject({
            resultType: 'complete',
            ...(serverInfo(variant) ? { _meta: serverInfo(variant) } : {}),
          });
        } else if (variant === 'escapedResultType') {
          expect(answer.result.resultType).toBe('input_required');
        } else {
          expect(answer.error, variant).toMatchObject({ code: -32603, data: { code: 'UPSTREAM_PROTOCOL' } });
        }
      }
      const read = await modernCall(url, ++id, 'resources/read', { uri: 'hostile://cached' });
      // A legacy server's hints are the proxy's to write (modern.cache); a 2026-07-28 server's own pass, once.
      expect(read.result).toMatchObject({
        resultType: 'complete',
        ...(era === 'legacy' ? { ttlMs: 0, cacheScope: 'private' } : { ttlMs: 86400000, cacheScope: 'public' }),
      });
      await alive(proxy);
    });

    // The fixture's 2026-07-28 side has no listen stream of its own.
    it.skipIf(era === 'modern')('a modern listen stream survives a resource update nested too deep', async () => {
      const { url } = await started();
      const { body, headers } = modern(50, 'subscriptions/listen', { notifications: { resourceSubscriptions: ['hostile://cached'] } });
      const abort = new AbortController();
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
        body: JSON.stringify(body),
        signal: abort.signal,
      });
      const stream = sseMessages(res);
      await stream.next((m) => m.method === 'notifications/subscriptions/acknowledged' || m.id === 50);
      // The update the server sends after subscribing is dropped; the stream and the proxy go on.
      const after = await modernCall(url, 51, 'tools/call', { name: 'ok', arguments: {} });
      expect(after.result.content[0].text).toBe('survived: ok');
      abort.abort();
      await alive(proxy);
    });
  });

  it('a tools/list nested too deep is an error for clients of both eras, and the proxy keeps serving', async () => {
    for (const upstream of [commandLine(fixtureArgv(HOSTILE, '--deep-list')), (await startHttpFixture(HOSTILE, {}, ['--deep-list'])).url]) {
      const proxy = await startProxy(['--upstream', upstream]);
      const answer = await modernCall(proxy.url, 1, 'tools/list', {});
      expect(answer.error).toMatchObject({ code: -32603, message: expect.stringContaining('upstream.maxJsonDepth') });
      const legacy = await legacyClient(proxy.url);
      await expect(legacy.listTools(undefined, { timeout: 10_000 })).rejects.toThrow(/upstream\.maxJsonDepth/);
      expect((await legacy.readResource({ uri: 'hostile://cached' })).contents).toEqual([{ uri: 'hostile://cached', text: 'cached' }]);
      await legacy.close();
      const read = await modernCall(proxy.url, 2, 'resources/read', { uri: 'hostile://cached' });
      expect(read.result.contents).toEqual([{ uri: 'hostile://cached', text: 'cached' }]);
      await alive(proxy);
      await proxy.stop();
    }
  });

  it('on the stdio front, deep messages cost only themselves for clients of both eras', async () => {
    const upstreamArg = commandLine(fixtureArgv(HOSTILE));
    const legacy = await connectViaProxy('stdio', upstreamArg);
    const progressSeen: unknown[] = [];
    expect(
      (
        await legacy.client.callTool({ name: 'deep_progress', arguments: {} }, undefined, {
          onprogress: (p) => progressSeen.push(p),
          timeout: 10_000,
        })
      ).content,
    ).toEqual([{ type: 'text', text: 'survived: deep_progress' }]);
    await expect(legacy.client.callTool({ name: 'deep_result', arguments: {} }, undefined, { timeout: 10_000 })).rejects.toThrow(
      /upstream\.maxJsonDepth/,
    );
    expect((await legacy.client.callTool({ name: 'ok', arguments: {} })).content).toEqual([{ type: 'text', text: 'survived: ok' }]);
    await legacy.close();

    const v2 = await connectModern('stdio', { upstreamArg });
    const result = await v2.client.callTool({ name: 'deep_progress', arguments: {} }, { onprogress: () => undefined, timeout: 10_000 });
    expect(result.content).toEqual([{ type: 'text', text: 'survived: deep_progress' }]);
    expect((await v2.client.callTool({ name: 'deep_log', arguments: {} })).content).toEqual([{ type: 'text', text: 'survived: deep_log' }]);
    await v2.close();
  });
});
