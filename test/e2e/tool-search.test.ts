/**
 * Search instead of a catalog (`tools=search`), end to end through the built CLI in front of
 * server-everything over stdio: a v1 SDK client (a legacy session) and a v2 client (2026-07-28)
 * that declare the tag list two tools in place of the catalog, find a tool by what it does and
 * call it through `call_tool`, and the legacy session by its name once its list changed; a
 * profile gives the tag to clients that declare nothing, and a tool its variant hides is
 * neither found nor called.
 */
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { receivedDuring } from '../helpers/clients.js';
import { commandLine, EVERYTHING_STDIO, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { MODERN, NEGOTIATION } from '../helpers/modern-clients.js';

const SEARCH = ['tools=search'];
const open: Array<{ close(): Promise<unknown> }> = [];
let proxy: Running;

/** A v1 client (legacy session) on `path`, declaring `features`, that hears list changes. */
async function legacy(path: string, features?: string[]): Promise<{ client: Client }> {
  const client = new Client(
    { name: 'search-test', version: '1' },
    { capabilities: features ? { extensions: { [NEGOTIATION]: { features } } } : {} },
  );
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => undefined);
  await client.connect(new StreamableHTTPClientTransport(new URL(path, proxy.url)));
  open.push(client);
  return { client };
}

async function modern(features: string[]): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'search-test', version: '1' },
    { capabilities: { extensions: { [NEGOTIATION]: { features } } }, versionNegotiation: { mode: { pin: MODERN } } },
  );
  await client.connect(new ModernTransport(new URL(proxy.url)));
  open.push(client);
  return client;
}

const names = (tools: Array<{ name: string }>) => tools.map((t) => t.name);
const found = (result: unknown) => names((result as { structuredContent: { tools: Array<{ name: string }> } }).structuredContent.tools);
const text = (result: unknown) => (result as { content: Array<{ text: string }> }).content[0].text;

beforeAll(async () => {
  const config = join(tmpdir(), `tool-search-${process.pid}.yaml`);
  writeFileSync(
    config,
    [
      `upstream:\n  command: ${JSON.stringify(commandLine(EVERYTHING_STDIO))}`,
      'serverVariants:',
      '  variants:',
      '    - { id: all, description: Everything }',
      '    - { id: reading, description: No arithmetic, tools: { exclude: [get-sum] } }',
      'profiles:',
      '  searching: { path: /mcp/search, features: [tools=search], variant: reading }',
    ].join('\n'),
  );
  proxy = await startProxy(['--config', config]);
}, 60_000);

afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => undefined)));
  await stopAll();
});

describe('tools=search', () => {
  it('lists two tools for a tenth of the catalog, finds a tool by what it does, calls it through call_tool and by name', async () => {
    const plain = await legacy('/mcp');
    const catalog = (await plain.client.listTools()).tools;
    const { client } = await legacy('/mcp', SEARCH);
    expect(client.getServerCapabilities()?.tools?.listChanged).toBe(true);

    const listed = (await client.listTools()).tools;
    expect(names(listed)).toEqual(['search_tools', 'call_tool']);
    expect(countTokens(JSON.stringify(listed))).toBeLessThanOrEqual(0.1 * countTokens(JSON.stringify(catalog)));

    const { result: search, messages } = await receivedDuring(client, () =>
      client.callTool({ name: 'search_tools', arguments: { query: 'sum of two numbers', limit: 3 } }),
    );
    expect(found(search)[0]).toBe('get-sum');
    // The session is told its list changed, before the answer.
    expect(messages.map((m: { method?: string }) => m.method ?? 'answer')).toEqual(['notifications/tools/list_changed', 'answer']);
    // Its full definition, as the catalog has it.
    expect((search.structuredContent as { tools: unknown[] }).tools[0]).toEqual(catalog.find((t) => t.name === 'get-sum'));
    expect(names((await client.listTools()).tools)).toEqual(['search_tools', 'call_tool', ...found(search)]);

    expect(text(await client.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } }))).toContain('5');
    expect(text(await client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'hi' } } }))).toBe('Echo: hi');
  }, 60_000);

  it('serves a 2026-07-28 client the same, without a list of its own', async () => {
    const client = await modern(SEARCH);
    expect(names((await client.listTools()).tools)).toEqual(['search_tools', 'call_tool']);
    const search = await client.callTool({ name: 'search_tools', arguments: { query: 'compress a file' } });
    expect(found(search)[0]).toBe('gzip-file-as-resource');
    expect(text(await client.callTool({ name: 'call_tool', arguments: { name: 'get-sum', arguments: { a: 40, b: 2 } } }))).toContain('42');
    const refused = await client.callTool({ name: 'search_tools', arguments: { query: '' } }).catch((err: Error) => err);
    expect(String(refused)).toContain('"query"');
  }, 60_000);

  it("gives the tag to a profile's clients, and never finds or calls a tool their variant hides", async () => {
    const { client } = await legacy('/mcp/search');
    expect(names((await client.listTools()).tools)).toEqual(['search_tools', 'call_tool']);
    const search = await client.callTool({ name: 'search_tools', arguments: { query: 'sum of two numbers', limit: 20 } });
    expect(found(search).length).toBeGreaterThan(0);
    expect(found(search)).not.toContain('get-sum');
    const hidden = await client
      .callTool({ name: 'call_tool', arguments: { name: 'get-sum', arguments: { a: 1, b: 1 } } })
      .catch((e: Error) => e);
    expect(String(hidden)).toMatch(/get-sum/);
    expect(text(await client.callTool({ name: 'call_tool', arguments: { name: 'echo', arguments: { message: 'ok' } } }))).toBe('Echo: ok');
  }, 60_000);
});
