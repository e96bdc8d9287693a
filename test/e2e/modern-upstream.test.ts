/**
 * A 2026-07-28-only server behind the proxy (the v2 SDK with `legacy: 'reject'`,
 * test/fixtures/modern-server.ts): the proxy finds its era, is ready, and serves legacy (v1 SDK)
 * and modern (v2 SDK) clients in front of it, with negotiation, input rounds both ways and
 * cancellation.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NEGOTIATION } from '../helpers/modern-clients.js';
import { PROXY_MAIN, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { rawPost } from '../helpers/raw.js';

type Front = 'http' | 'stdio';

/** A v1 client through the proxy; `features`: content-negotiation tags; `elicit`: answers elicitation with this name. */
async function legacyClient(front: Front, target: { proxyUrl?: string; upstreamUrl: string }, o: { features?: string[]; elicit?: string } = {}): Promise<{ client: Client; asked: unknown[]; close(): Promise<void> }> {
  const capabilities: Record<string, unknown> = {};
  if (o.elicit !== undefined) capabilities.elicitation = { form: {} };
  if (o.features) capabilities.extensions = { [NEGOTIATION]: { version: '1.0', features: o.features } };
  const client = new Client({ name: 'legacy-in-front-of-modern', version: '1.0.0' }, { capabilities: capabilities as never });
  const asked: unknown[] = [];
  if (o.elicit !== undefined) {
    client.setRequestHandler(ElicitRequestSchema, async (req) => {
      asked.push(req.params);
      return { action: 'accept', content: { name: o.elicit! } };
    });
  }
  const transport = front === 'http'
    ? new StreamableHTTPClientTransport(new URL(target.proxyUrl!))
    : new StdioClientTransport({ command: process.execPath, args: [PROXY_MAIN, '--stdio', '--upstream', target.upstreamUrl, '--log-level', 'warn'], env: { ...process.env } as Record<string, string>, stderr: 'pipe' });
  await client.connect(transport);
  return { client, asked, close: () => client.close() };
}

const textOf = (result: any): string => result.content.map((c: { text?: string }) => c.text ?? '').join('');

describe('a 2026-07-28-only server behind the proxy', () => {
  let upstream: Running;
  let proxy: Running;

  beforeAll(async () => {
    upstream = await startHttpFixture('modern-server');
    proxy = await startProxy(['--upstream', upstream.url]);
  }, 60_000);

  afterAll(async () => {
    await proxy?.stop();
    await upstream?.stop();
    await stopAll();
  });

  it('refuses legacy initialize directly, and the proxy is ready in front of it, naming the era', async () => {
    const direct = await rawPost(upstream.url, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }, { accept: 'application/json, text/event-stream' });
    expect(direct.status).toBe(400);
    expect(direct.messages[0].error.code).toBe(-32022);
    const ready = await fetch(new URL('/readyz', proxy.url));
    expect(ready.status).toBe(200);
    const health = await (await fetch(new URL('/healthz', proxy.url))).json();
    expect(JSON.stringify(health)).toContain('"era":"modern"');
  });

  for (const front of ['http', 'stdio'] as const) {
    describe(`a v1 client (${front} front)`, () => {
      it('lists and calls tools; the result carries nothing of the modern era', async () => {
        const { client, close } = await legacyClient(front, { proxyUrl: proxy.url, upstreamUrl: upstream.url });
        try {
          expect(client.getServerVersion()).toMatchObject({ name: 'modern-fixture' });
          expect(client.getInstructions()).toBe('A 2026-07-28-only fixture.');
          const { tools } = await client.listTools();
          expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'weather_json', 'ask_name']));
          const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
          expect(textOf(result)).toBe('hi');
          expect(result).not.toHaveProperty('resultType');
          expect(result).not.toHaveProperty('ttlMs');
          expect(JSON.stringify(result)).not.toContain('io.modelcontextprotocol/serverInfo');
        } finally {
          await close();
        }
      }, 30_000);

      it('with format=json gets structuredContent from a JSON-text result', async () => {
        const { client, close } = await legacyClient(front, { proxyUrl: proxy.url, upstreamUrl: upstream.url }, { features: ['agent', 'format=json'] });
        try {
          const result = await client.callTool({ name: 'weather_json', arguments: { city: 'Oslo' } });
          expect(result.structuredContent).toMatchObject({ city: 'Oslo', temperature_c: 8 });
        } finally {
          await close();
        }
      }, 30_000);

      it("answers the server's input_required rounds as elicitation/create, the second with the server's requestState", async () => {
        const { client, asked, close } = await legacyClient(front, { proxyUrl: proxy.url, upstreamUrl: upstream.url }, { elicit: 'Ada' });
        try {
          const hello = await client.callTool({ name: 'ask_name', arguments: {} });
          expect(textOf(hello)).toBe('Hello, Ada!');
          expect(asked).toHaveLength(1);
          expect(asked[0]).toMatchObject({ message: 'What is your name?', requestedSchema: { properties: { name: { type: 'string' } } } });
          const twice = await client.callTool({ name: 'ask_twice', arguments: {} });
          expect(textOf(twice)).toBe('Ada Ada');
          expect(asked).toHaveLength(3);
        } finally {
          await close();
        }
      }, 30_000);

      it("without elicitation gets the server's refusal as an error", async () => {
        const { client, close } = await legacyClient(front, { proxyUrl: proxy.url, upstreamUrl: upstream.url });
        try {
          await expect(client.callTool({ name: 'ask_name', arguments: {} })).rejects.toThrow(/-32021|capabilit/i);
          // The session goes on.
          expect(textOf(await client.callTool({ name: 'echo', arguments: { text: 'still here' } }))).toBe('still here');
        } finally {
          await close();
        }
      }, 30_000);
    });
  }
});
