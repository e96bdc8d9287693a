/**
 * `verbosity=compact` on catalogs, through the built proxy in front of server-everything: an SDK
 * client (v1, legacy session; v2, 2026-07-28) that declares it lists the compact catalog (every
 * tool, parameter, type, enum and required list kept, the prose and annotations gone, fewer
 * tokens) and calls tools with the arguments it could before, structured output checked by the
 * SDK against the compact outputSchema; a client that declares nothing gets the upstream's
 * bytes for tools/list, prompts/list and resources/templates/list. `explain` shows what compact
 * does to a recorded catalog, tool by tool.
 */
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Ajv } from 'ajv';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineSplitter } from '../../src/jsonrpc/lines.js';
import { countTokensOf, loadTokenizer } from '../../src/ops/token-counts.js';
import { connectModern, type ModernConnected } from '../helpers/modern-clients.js';
import { rawPost } from '../helpers/raw.js';
import { commandLine, eventually, EVERYTHING_STDIO, PROXY_MAIN, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { entryContract } from '../recordings/catalog-contract.js';
import { loadCatalog } from '../recordings/record-catalog.js';

const EXTENSION = 'io.modelcontextprotocol/content-negotiation';
const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'catalog', version: '1' } },
};
const LISTS = ['tools/list', 'prompts/list', 'resources/templates/list'].map((method, i) => ({
  jsonrpc: '2.0',
  id: i + 1,
  method,
  params: {},
}));

/** The lines server-everything answers the lists with over stdio, asked directly. */
async function direct(): Promise<string[]> {
  const [command, ...args] = EVERYTHING_STDIO;
  const proc = spawn(command, args, { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines: string[] = [];
  proc.stdout.on(
    'data',
    lineSplitter((l) => {
      if (JSON.parse(l).id !== undefined) lines.push(l);
    }),
  );
  const send = (m: unknown) => proc.stdin.write(JSON.stringify(m) + '\n');
  send(initialize);
  await eventually(() => lines.length === 1, 15_000, 'initialize answer');
  send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  for (const r of LISTS) send(r);
  await eventually(() => lines.length === LISTS.length + 1, 15_000, 'the lists');
  proc.stdin.end();
  await new Promise((r) => proc.once('exit', r));
  return lines.slice(1).sort((a, b) => JSON.parse(a).id - JSON.parse(b).id);
}

type Tool = Record<string, unknown> & { name: string; inputSchema: Record<string, unknown> };

describe('compact catalogs through the proxy (server-everything)', () => {
  let proxy: Running;
  let full: Tool[];
  const clients: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    proxy = await startProxy(['--upstream', commandLine(EVERYTHING_STDIO)]);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('gives a client that declares nothing the upstream bytes of every list', async () => {
    const headers = { accept: 'application/json' };
    const init = await rawPost(proxy.url, initialize, headers);
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await rawPost(proxy.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, session);
    const proxied: string[] = [];
    for (const r of LISTS) proxied.push((await rawPost(proxy.url, r, session)).text);
    expect(proxied).toEqual(await direct());
    full = JSON.parse(proxied[0]).result.tools;
    expect(full.length).toBeGreaterThanOrEqual(10);
  });

  it('gives a v1 client declaring verbosity=compact the compact catalog, and its calls work as before', async () => {
    const client = new Client(
      { name: 'compact-catalog', version: '1.0.0' },
      { capabilities: { extensions: { [EXTENSION]: { version: '1.0', features: ['verbosity=compact'] } } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    clients.push(client);
    const { tools } = (await client.listTools()) as unknown as { tools: Tool[] };
    expect(tools.map((t) => t.name)).toEqual(full.map((t) => t.name));
    expect(tools.map(entryContract)).toEqual(full.map(entryContract));
    const gzip = (list: Tool[]) => list.find((t) => t.name === 'gzip-file-as-resource')!;
    expect(gzip(tools).description).toBe(
      'Compresses a single file using gzip compression. Depending upon the selected output type, returns either the compressed data as a gzipped resource or a resource link, allowing it to be downloaded in a subsequent request during the current session.',
    );
    const research = tools.find((t) => t.name === 'simulate-research-query')!;
    expect(research.description).toBe(
      'Simulates a deep research operation that gathers, analyzes, and synthesizes information. Demonstrates MCP task-based operations with progress through multiple stages.',
    );
    expect(JSON.stringify(full)).toContain('"$schema"');
    expect(JSON.stringify(tools)).not.toContain('"$schema"');
    expect(JSON.stringify(tools)).not.toContain('"taskSupport":"forbidden"');
    const count = await loadTokenizer();
    const tokens = countTokensOf(count, 'tools/list', { tools: full }, { tools })!;
    expect(tokens.out).toBeLessThan(tokens.in * 0.85);

    // The calls a client made from the full catalog validate against the compact one and work.
    const ajv = new Ajv({ strict: false, validateFormats: false });
    const calls: Array<[string, Record<string, unknown>]> = [
      ['echo', { message: 'Hello from 127.0.0.1, 42 times' }],
      ['get-sum', { a: 17, b: 25.5 }],
      ['get-annotated-message', { messageType: 'success', includeImage: false }],
      ['get-structured-content', { location: 'Chicago' }],
    ];
    for (const [name, args] of calls) {
      expect(ajv.validate(tools.find((t) => t.name === name)!.inputSchema, args), name).toBe(true);
      const result = await client.callTool({ name, arguments: args });
      expect(result.isError, name).toBeFalsy();
    }
    // The SDK checks structuredContent against the outputSchema it was listed with: the compact one.
    const weather = await client.callTool({ name: 'get-structured-content', arguments: { location: 'Chicago' } });
    expect(weather.structuredContent).toMatchObject({ temperature: expect.any(Number) });
    expect(
      JSON.stringify((await client.callTool({ name: 'get-sum', arguments: { a: 17, b: 25.5 } })).content).replace(/\s+/g, ''),
    ).toContain('42.5');
  });

  it('gives a v2 client declaring verbosity=compact the same compact catalog', async () => {
    const v1 = new Client(
      { name: 'compact-catalog', version: '1.0.0' },
      { capabilities: { extensions: { [EXTENSION]: { version: '1.0', features: ['verbosity=compact'] } } } },
    );
    await v1.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    clients.push(v1);
    const modern: ModernConnected = await connectModern('http', { url: proxy.url }, { features: ['verbosity=compact'] });
    clients.push(modern);
    // server-everything lists more tools to a client with roots, sampling and elicitation (as this one has).
    const { tools } = (await modern.client.listTools()) as unknown as { tools: Tool[] };
    // Nor does a v2 client get `execution` (task support is negotiated otherwise in 2026-07-28).
    const noExecution = ({ execution: _, ...tool }: Record<string, unknown>) => tool;
    const legacy = (await v1.listTools()).tools.map(noExecution);
    expect(tools.filter((t) => legacy.some((l) => l.name === t.name))).toEqual(legacy);
    expect(JSON.stringify(tools)).not.toContain('"$schema"');
    const shared = tools.filter((t) => full.some((f) => f.name === t.name));
    expect(shared.map(entryContract)).toEqual(full.map(noExecution).map(entryContract));
    const result = await modern.client.callTool({ name: 'get-sum', arguments: { a: 17, b: 25.5 } });
    expect(JSON.stringify(result.content)).toContain('42.5');
  });

  it('explain shows what compact does to a recorded catalog, tool by tool', async () => {
    const notion = loadCatalog().servers.find((server) => server.server === 'notion')!;
    const dir = mkdtempSync(join(tmpdir(), 'compact-catalog-'));
    try {
      const input = join(dir, 'tools.json');
      writeFileSync(input, JSON.stringify({ jsonrpc: '2.0', id: 1, result: { tools: notion.tools } }));
      const run = (features: string) =>
        promisify(execFile)(process.execPath, [PROXY_MAIN, 'explain', '--features', features, '--method', 'tools/list', '--input', input], {
          timeout: 15_000,
          maxBuffer: 16 * 1024 * 1024,
        });
      const { stdout } = await run('verbosity=compact');
      expect(stdout).toContain('✔ verbosity=compact: trim');
      const total = /tokens a model reads \(o200k_base\): (\d+) in → (\d+) out/.exec(stdout)!;
      expect(Number(total[2])).toBeLessThan(Number(total[1]) / 2);
      const rows = stdout
        .slice(stdout.indexOf('per entry of tools (tokens in → out):'))
        .split('\n')
        .slice(1, 1 + notion.tools.length);
      expect(rows.map((r) => r.trim().split(':')[0])).toEqual(notion.tools.map((t) => t.name));
      for (const row of rows) {
        const [, before, after] = /: (\d+) → (\d+)$/.exec(row)!;
        expect(Number(after)).toBeLessThan(Number(before));
      }
      const plain = await run('');
      expect(plain.stdout).toMatch(/ {2}API-get-user: (\d+) → \1\n/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
