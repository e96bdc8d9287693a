/**
 * The content-negotiation SEP's headline case through the proxy: the built-in demo answers the
 * weather in prose; an agent that negotiates format=json sees get_weather's outputSchema in
 * tools/list and gets the weather as data that satisfies it (the SDK client checks), while a
 * client that negotiates nothing gets the prose unchanged.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startProxy, stopAll, type Running } from '../helpers/processes.js';

const NEGOTIATION = 'io.modelcontextprotocol/content-negotiation';

describe('prose to data (config/examples/weather-prose.yaml, demo upstream)', () => {
  let proxy: Running;
  const clients: Client[] = [];
  const connect = async (features?: string[]) => {
    const capabilities = features ? { extensions: { [NEGOTIATION]: { version: 1, features } } } : {};
    const client = new Client({ name: 'prose-test', version: '1' }, { capabilities });
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    clients.push(client);
    return client;
  };

  beforeAll(async () => {
    proxy = await startProxy(['--config', `${ROOT}config/examples/weather-prose.yaml`]);
  }, 30_000);
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('publishes the shape and answers with data that satisfies it', async () => {
    const agent = await connect(['agent', 'format=json']);
    const tool = (await agent.listTools()).tools.find((t) => t.name === 'get_weather')!;
    expect(tool.outputSchema).toMatchObject({ type: 'object', required: ['location', 'temperature_c'] });
    const result = await agent.callTool({ name: 'get_weather', arguments: { city: 'Bern' } }); // the SDK validates structuredContent against the schema
    const data = result.structuredContent as Record<string, unknown>;
    expect(data).toMatchObject({
      location: 'Bern',
      temperature_c: expect.any(Number),
      feels_like_c: expect.any(Number),
      humidity_percent: expect.any(Number),
      wind_speed_kmh: expect.any(Number),
      uv_index: expect.any(Number),
    });
    expect(typeof data.conditions).toBe('string');
    expect(new Ajv().validate(tool.outputSchema!, data)).toBe(true);
  });

  it('leaves a client that negotiates nothing with the prose and no outputSchema', async () => {
    const plain = await connect();
    const tool = (await plain.listTools()).tools.find((t) => t.name === 'get_weather')!;
    expect(tool.outputSchema).toBeUndefined();
    const result = await plain.callTool({ name: 'get_weather', arguments: { city: 'Bern' } });
    expect(result.structuredContent).toBeUndefined();
    expect((result.content as Array<{ text: string }>)[0].text).toMatch(/^## Current Weather in Bern/);
  });
});
