/**
 * Reshaping through the proxy is safe and faithful, end to end with real processes:
 * - hostile upstream text (a heading followed by 10,000 spaces, a megabyte of unclosed markup)
 *   is answered promptly while /healthz keeps answering, and SIGTERM still stops the proxy;
 * - results over `maxResultBytes` or over `timeBudgetMs` pass unchanged, counted in /metrics
 *   and logged once per tool;
 * - real third-party servers (server-memory, server-sequential-thinking) keep what they said: a
 *   compact graph decodes to the same graph, and a compact tools/list shortens descriptions
 *   without erasing them or parameter descriptions (file contents: real-servers.test.ts).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decode } from '@toon-format/toon';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, describe, expect, it } from 'vitest';
import { callTool, INIT, rawPost } from '../helpers/raw.js';
import { commandLine, eventually, fixtureArgv, ROOT, startProxy, stopAll, type Running } from '../helpers/processes.js';

const EXTENSION = 'io.modelcontextprotocol/content-negotiation';
const FAULTY = commandLine(fixtureArgv('faulty-server'));
const server = (name: string) => `${ROOT}node_modules/@modelcontextprotocol/${name}/dist/index.js`;

async function negotiatingSession(url: string, features: string[]): Promise<Record<string, string>> {
  const init = await rawPost(url, {
    ...INIT,
    params: { ...INIT.params, capabilities: { extensions: { [EXTENSION]: { version: '1.0', features } } } },
  });
  const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

async function connect(url: string, features: string[]): Promise<Client> {
  const client = new Client(
    { name: 'shaping-safety', version: '1' },
    { capabilities: { extensions: { [EXTENSION]: { version: '1.0', features } } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

const endpoint = (proxy: Running, path: string) => new URL(path, proxy.url).href;
const echo = async (proxy: Running, headers: Record<string, string>, id: number, text: string) =>
  (await rawPost(proxy.url, callTool(id, 'echo', { text }), headers)).messages[0].result as {
    content: Array<{ text: string }>;
    structuredContent?: unknown;
  };

describe('shaping hostile upstream output', () => {
  afterAll(stopAll);

  it('answers at once for a heading followed by 10,000 spaces and for a megabyte of unclosed markup, and keeps serving', async () => {
    const proxy = await startProxy(['--upstream', FAULTY]);
    const json = await negotiatingSession(proxy.url, ['agent', 'format=json']);
    const compact = await negotiatingSession(proxy.url, ['verbosity=compact', 'format=text']);
    const heading = `# a${' '.repeat(10_000)}x\n\nTemperature: 8°C`;
    const megabyte = `# Report\n\n${'**a [b]('.repeat(60_000)}\n${'| x '.repeat(50_000)}\n${'`'.repeat(100_000)}`;
    const [a, b, c, health] = await Promise.all([
      echo(proxy, json, 1, heading),
      echo(proxy, compact, 2, heading),
      echo(proxy, compact, 3, megabyte),
      fetch(endpoint(proxy, '/healthz')),
    ]);
    expect(health.status).toBe(200);
    expect(a.content.map((b) => b.text).join('\n')).toContain('Temperature: 8°C'); // nothing was lost on the way
    expect(b.content[0].text).toBe(`a${' '.repeat(10_000)}x\n\nTemperature: 8°C`);
    expect(c.content[0].text.length).toBeGreaterThan(100_000);
    expect((await fetch(endpoint(proxy, '/healthz'))).status).toBe(200);
    expect(await proxy.stop('SIGTERM')).toBe(0);
  });

  it('relays results over the size limit or the time budget unchanged, counts them and logs each tool once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shaping-limits-'));
    const config = join(dir, 'limits.yaml');
    writeFileSync(
      config,
      `upstream:\n  command: ${JSON.stringify(FAULTY)}\ncontentNegotiation:\n  limits: { maxResultBytes: 200000, timeBudgetMs: 1 }\n`,
    );
    const proxy = await startProxy(['--config', config]);
    const session = await negotiatingSession(proxy.url, ['format=text']);
    const big = `**bold** ${'word '.repeat(50_000)}`;
    for (const id of [1, 2]) expect((await echo(proxy, session, id, big)).content[0].text).toBe(big);
    // Under the size limit, but 12,000 lines of markup take far longer than 1 ms to reshape.
    const slow = `**bold**\n${'- *item* [x](y)\n'.repeat(12_000)}`;
    for (const id of [3, 4]) expect((await echo(proxy, session, id, slow)).content[0].text).toBe(slow);
    const metrics = await (await fetch(endpoint(proxy, '/metrics'))).text();
    expect(metrics).toContain('mcp_proxy_results_unshaped_total{reason="size"} 2');
    expect(metrics).toContain('mcp_proxy_results_unshaped_total{reason="budget"} 2');
    await eventually(() => proxy.stderr().includes('timeBudgetMs'), 5000, 'the budget warning');
    expect(proxy.stderr().match(/result relayed unshaped/g)).toHaveLength(2); // once for size, once for budget
  });
});

describe('shaping what real servers answer', () => {
  const clients: Client[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });
  const open = async (proxy: Running, features: string[]) => {
    const client = await connect(proxy.url, features);
    clients.push(client);
    return client;
  };

  it('server-memory: a compact read_graph lists relations as a TOON table that decodes to the same graph; structuredContent stays JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'shaping-memory-'));
    const proxy = await startProxy([
      '--upstream',
      commandLine([process.execPath, server('server-memory')]),
      '--env',
      `MEMORY_FILE_PATH=${join(dir, 'memory.jsonl')}`,
    ]);
    const plain = await open(proxy, []);
    const people = ['Ada Lovelace', 'Charles Babbage', 'Mary Somerville', 'Augustus De Morgan'];
    await plain.callTool({
      name: 'create_entities',
      arguments: { entities: people.map((name) => ({ name, entityType: 'person', observations: [`${name} lived in London`] })) },
    });
    await plain.callTool({
      name: 'create_relations',
      arguments: { relations: people.slice(1).map((to) => ({ from: 'Ada Lovelace', to, relationType: 'corresponded with' })) },
    });
    const full = (await plain.callTool({ name: 'read_graph', arguments: {} })) as {
      content: Array<{ text: string }>;
      structuredContent: unknown;
    };
    const compact = await open(proxy, ['verbosity=compact']);
    const short = (await compact.callTool({ name: 'read_graph', arguments: {} })) as {
      content: Array<{ text: string }>;
      structuredContent: unknown;
    };
    expect(short.content[0].text).toContain('relations[3]{from,to,relationType}:');
    expect(decode(short.content[0].text)).toEqual(JSON.parse(full.content[0].text));
    expect(short.structuredContent).toEqual(full.structuredContent);
    expect(short.content[0].text.length).toBeLessThan(JSON.stringify(JSON.parse(full.content[0].text)).length);
  });

  it("server-sequential-thinking: a compact tools/list shortens the 2,781-character description and keeps every parameter's description, type and bound", async () => {
    const proxy = await startProxy(['--upstream', commandLine([process.execPath, server('server-sequential-thinking')])]);
    const plain = await open(proxy, []);
    const compact = await open(proxy, ['verbosity=compact']);
    const [full] = (await plain.listTools()).tools;
    const [short] = (await compact.listTools()).tools;
    expect(full.description!.length).toBeGreaterThan(2000);
    expect(short.description!.length).toBeGreaterThan(100);
    expect(short.description!.length).toBeLessThanOrEqual(302);
    expect(full.description!.replace(/\s+/g, ' ')).toContain(short.description!.replace(/ …$/, ''));
    const props = (s: typeof full) => s.inputSchema.properties as Record<string, Record<string, unknown>>;
    expect(Object.keys(props(short))).toEqual(Object.keys(props(full)));
    for (const [name, prop] of Object.entries(props(full))) {
      const { description, ...rest } = props(short)[name];
      expect(rest).toEqual(Object.fromEntries(Object.entries(prop).filter(([k]) => k !== 'description')));
      if (prop.description) expect(description).toBeTruthy();
    }
    expect(short.inputSchema.required).toEqual(full.inputSchema.required);
  });
});
