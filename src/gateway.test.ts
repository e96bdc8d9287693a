/**
 * The whole gateway in process (test/kit/gateway.ts) in front of official SDK servers on
 * Streamable HTTP, reached by the official SDK clients: what a client that declares nothing gets,
 * a negotiated call, a 2026-07-28 client in front of a legacy server, and tool errors.
 */
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { McpServer as ModernServer } from '@modelcontextprotocol/server';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { startGateway, type RunningGateway } from '../test/kit/gateway.js';

const MODERN = '2026-07-28';
const NEGOTIATION = 'io.modelcontextprotocol/content-negotiation';
const WEATHER = { city: 'Bern', celsius: 8, conditions: 'cloudy' };

/** A legacy server: weather as JSON text, a tool that reports its own failure, and one that throws. */
function weatherServer(): McpServer {
  const server = new McpServer({ name: 'weather', version: '1.0.0' }, { instructions: 'Weather for a city.' });
  server.registerTool('weather', { description: 'The weather in a city, as JSON text', inputSchema: { city: z.string() } }, ({ city }) => ({
    content: [{ type: 'text', text: JSON.stringify({ ...WEATHER, city }) }],
  }));
  server.registerTool(
    'forecast',
    { description: 'Refuses: no forecast for that far ahead', inputSchema: { days: z.number() } },
    ({ days }) => ({
      content: [{ type: 'text', text: `no forecast ${days} days ahead` }],
      isError: true,
    }),
  );
  server.registerTool('broken', { description: 'Throws' }, () => {
    throw new Error('the weather station is offline');
  });
  return server;
}

/** The same tools on a 2026-07-28 server (v2 SDK). */
function modernWeatherServer(): ModernServer {
  const server = new ModernServer({ name: 'weather', version: '2.0.0' }, { instructions: 'Weather for a city.' });
  server.registerTool(
    'weather',
    { description: 'The weather in a city, as JSON text', inputSchema: z.object({ city: z.string() }) },
    async ({ city }) => ({ content: [{ type: 'text', text: JSON.stringify({ ...WEATHER, city }) }] }),
  );
  server.registerTool(
    'forecast',
    { description: 'Refuses: no forecast for that far ahead', inputSchema: z.object({ days: z.number() }) },
    async ({ days }) => ({ content: [{ type: 'text', text: `no forecast ${days} days ahead` }], isError: true }),
  );
  return server;
}

async function legacyClient(url: string, features?: string[]): Promise<Client> {
  const capabilities = features ? { extensions: { [NEGOTIATION]: { version: '1.0', features } } } : {};
  const client = new Client({ name: 'gateway-test', version: '1.0.0' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** A v2 client pinned to 2026-07-28; `wire` collects what its transport receives, before the SDK reads it. */
async function modernClient(url: string, features?: string[]): Promise<{ client: ModernClient; wire: JSONRPCMessage[] }> {
  const capabilities = features ? { extensions: { [NEGOTIATION]: { version: '1.0', features } } } : {};
  const client = new ModernClient(
    { name: 'gateway-test', version: '1.0.0' },
    { capabilities, versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(new ModernTransport(new URL(url)));
  const wire: JSONRPCMessage[] = [];
  const transport = client.transport!;
  const deliver = transport.onmessage!;
  transport.onmessage = (msg, extra) => {
    wire.push(msg);
    deliver(msg, extra);
  };
  return { client, wire };
}

describe('the gateway in front of a legacy server', () => {
  let proxy: RunningGateway;
  const open: Array<{ close(): Promise<void> }> = [];
  const connect = async (url: string, features?: string[]) => {
    const client = await legacyClient(url, features);
    open.push(client);
    return client;
  };

  beforeAll(async () => {
    proxy = await startGateway({ upstream: { era: 'legacy', makeServer: weatherServer } });
  });
  afterAll(async () => {
    await Promise.all(open.map((c) => c.close()));
    await proxy?.close();
  });

  it('gives a client that declares nothing exactly what the server sent', async () => {
    const [direct, via] = await Promise.all([connect(proxy.upstreamUrl), connect(proxy.url)]);
    expect(via.getInstructions()).toBe(direct.getInstructions());
    expect(await via.listTools()).toEqual(await direct.listTools());
    const call = { name: 'weather', arguments: { city: 'Basel' } };
    const [sent, relayed] = await Promise.all([direct.callTool(call), via.callTool(call)]);
    expect(sent).toEqual({ content: [{ type: 'text', text: JSON.stringify({ ...WEATHER, city: 'Basel' }) }] });
    expect(relayed).toEqual(sent);
  });

  it('gives structured output to a client that declared format=json', async () => {
    const client = await connect(proxy.url, ['format=json']);
    const result = await client.callTool({ name: 'weather', arguments: { city: 'Bern' } });
    expect(result.structuredContent).toEqual(WEATHER);
  });

  it("relays the server's tool errors as it sent them, to a client that declares nothing", async () => {
    const [direct, via] = await Promise.all([connect(proxy.upstreamUrl), connect(proxy.url)]);
    for (const call of [
      { name: 'forecast', arguments: { days: 30 } },
      { name: 'broken', arguments: {} },
      { name: 'forecast', arguments: { days: 'soon' } },
    ]) {
      const sent = await direct.callTool(call);
      expect(sent.isError).toBe(true);
      expect(await via.callTool(call)).toEqual(sent);
    }
    expect(proxy.logs.filter((line) => Number(line.level) >= 40)).toEqual([]); // the server's failures are not the proxy's
  });

  it('answers a 2026-07-28 request with a complete result, shaped per request', async () => {
    const [plain, agent] = await Promise.all([modernClient(proxy.url), modernClient(proxy.url, ['format=json'])]);
    open.push(plain.client, agent.client);
    const call = { name: 'weather', arguments: { city: 'Bern' } };
    const [unshaped, shaped] = await Promise.all([plain.client.callTool(call), agent.client.callTool(call)]);
    expect(unshaped.content).toEqual([{ type: 'text', text: JSON.stringify(WEATHER) }]);
    expect(unshaped.structuredContent).toBeUndefined();
    expect(shaped.structuredContent).toEqual(WEATHER);
    for (const { wire } of [plain, agent]) {
      const answer = wire.find((m) => 'result' in m && 'content' in m.result) as { result: Record<string, unknown> } | undefined;
      expect(answer?.result.resultType).toBe('complete');
    }
  });
});

describe('the gateway in front of a 2026-07-28 server', () => {
  let proxy: RunningGateway;
  const open: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    proxy = await startGateway({ upstream: { era: 'modern', makeServer: modernWeatherServer } });
  });
  afterAll(async () => {
    await Promise.all(open.map((c) => c.close()));
    await proxy?.close();
  });

  it('gives a 2026-07-28 client that declares nothing exactly what the server sent, tool errors too', async () => {
    const [direct, via] = await Promise.all([modernClient(proxy.upstreamUrl), modernClient(proxy.url)]);
    open.push(direct.client, via.client);
    expect(await via.client.listTools()).toEqual(await direct.client.listTools());
    for (const call of [
      { name: 'weather', arguments: { city: 'Basel' } },
      { name: 'forecast', arguments: { days: 30 } },
    ]) {
      const sent = await direct.client.callTool(call);
      expect(await via.client.callTool(call)).toEqual(sent);
    }
    const results = (wire: JSONRPCMessage[]) =>
      wire.filter((m) => 'result' in m && 'content' in m.result).map((m) => (m as { result: unknown }).result);
    expect(results(via.wire)).toEqual(results(direct.wire));
  });

  it('bridges a legacy client, and shapes its calls when it declared format=json', async () => {
    const [plain, agent] = await Promise.all([legacyClient(proxy.url), legacyClient(proxy.url, ['format=json'])]);
    open.push(plain, agent);
    const call = { name: 'weather', arguments: { city: 'Bern' } };
    expect(await plain.callTool(call)).toEqual({ content: [{ type: 'text', text: JSON.stringify(WEATHER) }] });
    expect((await agent.callTool(call)).structuredContent).toEqual(WEATHER);
    expect(await plain.callTool({ name: 'forecast', arguments: { days: 30 } })).toEqual({
      content: [{ type: 'text', text: 'no forecast 30 days ahead' }],
      isError: true,
    });
  });
});
