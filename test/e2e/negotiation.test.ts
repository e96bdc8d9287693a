/**
 * Content negotiation through the proxy with the official SDK client, in front of the built-in
 * demo server (which knows nothing of it): the SEP's test cases, per-client shapes on one
 * upstream at the same time, and results that stay valid against the protocol schema.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protocolCheck } from '../helpers/protocol-schema.js';
import { eventually, logEntries, logged, PROXY_MAIN, startProxy, stopAll, type Running } from '../helpers/processes.js';

const EXTENSION = 'io.modelcontextprotocol/content-negotiation';
const valid = (def: string, value: unknown) => {
  const check = protocolCheck(def, value);
  if (check !== true) throw new Error(`${def}: ${check}`);
  return true;
};

async function connect(url: string, features?: unknown[], extra: Record<string, unknown> = {}): Promise<Client> {
  const capabilities = features === undefined ? {} : { ...extra, extensions: { [EXTENSION]: { version: '1.0', features } } };
  const client = new Client({ name: 'negotiation-test', version: '1.0.0' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const text = (r: unknown) => (r as { content: Array<{ text: string }> }).content.map((c) => c.text).join('\n');

describe('content negotiation in front of a server that does not speak it', () => {
  let proxy: Running;
  const clients: Client[] = [];
  const open = async (features?: unknown[], extra?: Record<string, unknown>) => {
    const c = await connect(proxy.url, features, extra);
    clients.push(c);
    return c;
  };

  beforeAll(async () => {
    proxy = await startProxy(['--log-level', 'debug']);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('SEP case 1: an agent asking for format=json gets structuredContent', async () => {
    const agent = await open(['agent', 'format=json', '!interactive']);
    expect(agent.getServerCapabilities()?.extensions).toEqual({ [EXTENSION]: {} });
    expect(agent.getInstructions()).toContain('format=json in effect');
    const result = await agent.callTool({ name: 'get_weather', arguments: { city: 'Bern' } });
    expect(result.structuredContent).toMatchObject({
      title: 'Current Weather in Bern',
      temperature_c: expect.any(Number),
      humidity_percent: expect.any(Number),
      conditions: expect.any(String),
      uv_index: expect.any(Number),
      '3_day_forecast': expect.arrayContaining([expect.objectContaining({ day: 'Today', high_c: expect.any(Number) })]),
    });
    const [copy, prose] = result.content as Array<{ text: string }>;
    expect(JSON.parse(copy.text)).toEqual(result.structuredContent); // a serialized copy for clients that read content
    expect(prose.text).toMatch(/feeling like -?\d+°C .* chance of precipitation/); // what the data does not hold stays as prose
    expect(valid('CallToolResult', result)).toBe(true);
  });

  it('SEP case 2: a human asking for format=markdown gets markdown (a JSON resource is rendered)', async () => {
    const human = await open(['human', 'interactive', 'format=markdown']);
    const cities = await human.readResource({ uri: 'demo://cities' });
    expect(cities.contents[0]).toMatchObject({ mimeType: 'text/markdown' });
    expect((cities.contents[0] as { text: string }).text).toMatch(
      /^\| Name \| Country \| Elevation m \|\n\| --- \| --- \| --- \|\n\| Bern \| CH \| 540 \|/,
    );
    expect(valid('ReadResourceResult', cities)).toBe(true);
    const weather = await human.callTool({ name: 'get_weather', arguments: { city: 'Bern' } });
    expect(text(weather)).toContain('## Current Weather in Bern'); // already prose: left as the server wrote it
  });

  it('SEP case 3: a client that declares nothing gets the default, and no advertisement', async () => {
    const legacy = await open();
    expect(legacy.getServerCapabilities()?.extensions).toBeUndefined();
    const result = await legacy.callTool({ name: 'get_weather', arguments: { city: 'Bern' } });
    expect(result.structuredContent).toBeUndefined();
    expect(text(result)).toContain('## Current Weather in Bern');
  });

  it('SEP case 4: invalid tags are logged and ignored, never an error', async () => {
    const odd = await open(['@#$%', 'format==json', 'x'.repeat(200), 42, 'format=json\u0007']);
    const result = await odd.callTool({ name: 'get_weather', arguments: { city: 'Bern' } });
    expect(result.structuredContent).toBeUndefined();
    await eventually(() => (proxy.stderr().match(/invalid feature tag ignored/g) ?? []).length >= 5, 5000, 'five warnings');
    expect(logEntries(proxy).some((e) => e.tag === '@#$%')).toBe(true);
  });

  it('gives two clients on the same upstream their own shapes at the same time', async () => {
    const [json, compact] = await Promise.all([open(['agent', 'format=json']), open(['verbosity=compact', 'format=text'])]);
    const [a, b] = await Promise.all([
      json.callTool({ name: 'plan_journey', arguments: { from: 'Bern', to: 'Lugano', date: '2026-05-01' } }),
      compact.callTool({ name: 'plan_journey', arguments: { from: 'Bern', to: 'Lugano', date: '2026-05-01' } }),
    ]);
    expect(a.structuredContent).toBeDefined();
    expect(b.structuredContent).toBeUndefined();
    expect(text(b)).not.toMatch(/##|\*\*|Tips/); // plain text, Tips section trimmed
    const tools = (await compact.listTools()).tools;
    const weather = tools.find((t) => t.name === 'get_weather')!;
    expect(weather.description).toMatch(/^Get the current weather for a city/); // short already: kept
    expect(weather.inputSchema.properties).toEqual({
      city: { type: 'string', minLength: 1, description: 'City name, e.g. "Bern" or "Zurich"' },
    });
    expect(valid('ListToolsResult', { tools })).toBe(true);
  });

  it('format=text strips markup from prompts; capabilities become feature tags', async () => {
    const plain = await open(['format=text'], { sampling: {} });
    const prompt = await plain.getPrompt({ name: 'trip_briefing', arguments: { destination: 'Zurich' } });
    expect(valid('GetPromptResult', prompt)).toBe(true);
    expect(JSON.stringify(prompt)).not.toMatch(/\*\*|##/);
    await logged(
      proxy,
      (e) => JSON.stringify(e.features) === '["format=text","modality=text","sampling"]',
      5000,
      'the negotiated features in the debug log',
    );
  });

  it('negotiates over the stdio front too', async () => {
    const client = new Client(
      { name: 'stdio-negotiation', version: '1' },
      { capabilities: { extensions: { [EXTENSION]: { version: '1.0', features: ['agent', 'format=json'] } } } },
    );
    await client.connect(
      new StdioClientTransport({ command: process.execPath, args: [PROXY_MAIN, '--stdio', '--log-level', 'silent'], stderr: 'ignore' }),
    );
    clients.push(client);
    const result = await client.callTool({ name: 'convert_units', arguments: { value: 12, from: 'km', to: 'mi' } });
    expect(result.structuredContent).toBeUndefined(); // one sentence, no data in it: left as it was
    const weather = await client.callTool({ name: 'get_weather', arguments: { city: 'Lugano' } });
    expect(weather.structuredContent).toHaveProperty('conditions');
  });
});
