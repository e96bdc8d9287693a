/**
 * Tags for clients that cannot declare them, end to end through the built CLI in front of the
 * demo server: the MCP-Features header (legacy sessions at initialize, modern requests each
 * time), `--stdio --features`, profiles chosen by credential and by endpoint path (with a
 * variant), `mcp-remote --header` as Claude Desktop runs it, the Python SDK and FastMCP clients
 * running the snippets of docs/declaring-tags.md, and the client's own declaration winning each
 * axis it names. The access log says which profile and tags applied.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client as ModernClient, StreamableHTTPClientTransport as ModernHttpTransport } from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractBlocks } from '../helpers/doc-blocks.js';
import { rawPost } from '../helpers/raw.js';
import { eventually, logEntries, logged, PROXY_MAIN, PYTHON, ROOT, startProxy, stopAll, type Running } from '../helpers/processes.js';

const EXTENSION = 'io.modelcontextprotocol/content-negotiation';
const MODERN = '2026-07-28';
const CALL = { name: 'get_weather', arguments: { city: 'Bern' } };
const DEMO = [process.execPath, `${ROOT}dist/demo/main.js`];
const TOKENS = { agent: 'agent-bot-token-0123456789abcdef', other: 'other-token-0123456789abcdef0123' };
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

const open: Array<{ close(): Promise<void> }> = [];

/** A v1 (legacy) client on `url` that declares no extension, sending `headers` on every request. */
async function legacyClient(url: string, headers: Record<string, string> = {}, features?: string[], name = 'a-host'): Promise<Client> {
  const capabilities = features ? { extensions: { [EXTENSION]: { version: '1.0', features } } } : {};
  const client = new Client({ name, version: '1.0.0' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  open.push(client);
  return client;
}

/** A v1 client that spawns `argv` and speaks stdio to it. */
async function stdioClient(argv: string[], env: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'a-host', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({
      command: argv[0],
      args: argv.slice(1),
      env: { ...process.env, ...env } as Record<string, string>,
      stderr: 'ignore',
    }),
  );
  open.push(client);
  return client;
}

let direct: Awaited<ReturnType<Client['callTool']>>;

beforeAll(async () => {
  const demo = await stdioClient(DEMO);
  direct = await demo.callTool(CALL);
}, 30_000);

afterAll(async () => {
  await Promise.all(open.map((c) => c.close().catch(() => undefined)));
  await stopAll();
});

const shaped = (r: unknown) => (r as { structuredContent?: Record<string, unknown> }).structuredContent;

describe('the MCP-Features header', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy(['--log-level', 'info']);
  }, 30_000);

  it("a v1 client that declares nothing gets structuredContent with the header, the server's result without it", async () => {
    const hinted = await legacyClient(proxy.url, { 'MCP-Features': 'agent, format=json' });
    const result = await hinted.callTool(CALL);
    expect(shaped(result)).toMatchObject({
      title: 'Current Weather in Bern',
      temperature_c: expect.any(Number),
      humidity_percent: expect.any(Number),
    });
    expect(hinted.getInstructions()).toContain('format=json in effect');
    await logged(
      proxy,
      (e) => e.msg === 'request' && e.rpc === 'tools/call' && e.tags === 'agent format=json',
      5000,
      'the access log line with the tags in effect',
    );

    const plain = await legacyClient(proxy.url);
    expect(await plain.callTool(CALL)).toEqual(direct);
    expect(plain.getServerCapabilities()?.extensions).toBeUndefined();
  });

  it("the client's own declaration wins each axis it names; the header's other axes still apply", async () => {
    const client = await legacyClient(proxy.url, { 'MCP-Features': 'format=json, verbosity=compact' }, ['format=markdown']);
    expect(client.getInstructions()).toContain('Content negotiation: format=markdown, verbosity=compact in effect');
    const result = await client.callTool(CALL);
    expect(shaped(result)).toBeUndefined();
    await logged(
      proxy,
      (e) =>
        e.msg === 'request' && e.rpc === 'tools/call' && e.tags === 'format=markdown verbosity=compact' && e.overridden === 'format=json',
      5000,
      'the access log line naming the overridden tag',
    );
  });

  it('is read at initialize for a legacy session: a header on later requests changes nothing', async () => {
    const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
    const init = await fetch(proxy.url, {
      method: 'POST',
      headers,
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
      }),
    });
    const session = init.headers.get('mcp-session-id')!;
    await init.text();
    const more = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await rawPost(proxy.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, more);
    const call = await rawPost(
      proxy.url,
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: CALL },
      { ...more, 'mcp-features': 'agent, format=json' },
    );
    expect(call.messages[0].result).toEqual(direct);
  });

  it('modern (2026-07-28) requests honour it on every request', async () => {
    const call = (headers: Record<string, string>) =>
      rawPost(
        proxy.url,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            ...CALL,
            _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} },
          },
        },
        { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'get_weather', ...headers },
      );
    expect(shaped((await call({ 'mcp-features': 'agent, format=json' })).messages[0].result)).toMatchObject({
      temperature_c: expect.any(Number),
    });
    expect(shaped((await call({})).messages[0].result)).toBeUndefined();

    const client = new ModernClient(
      { name: 'a-v2-host', version: '1.0.0' },
      { capabilities: {}, versionNegotiation: { mode: { pin: MODERN } } },
    );
    await client.connect(
      new ModernHttpTransport(new URL(proxy.url), { requestInit: { headers: { 'MCP-Features': 'agent, format=json' } } }),
    );
    open.push(client);
    expect(shaped(await client.callTool(CALL))).toMatchObject({ title: 'Current Weather in Bern' });
  });

  it('mcp-remote --header carries it for a stdio-only host (as Claude Desktop runs it)', async () => {
    const config = mkdtempSync(join(tmpdir(), 'mcp-remote-'));
    const client = await stdioClient(
      [process.execPath, `${ROOT}node_modules/mcp-remote/dist/proxy.js`, proxy.url, '--header', 'MCP-Features: agent, format=json'],
      { MCP_REMOTE_CONFIG_DIR: config },
    );
    expect(shaped(await client.callTool(CALL))).toMatchObject({ title: 'Current Weather in Bern', temperature_c: expect.any(Number) });
  });

  it('ignores malformed tags of the header (logged), keeps the rest, and never fails the request', async () => {
    const client = await legacyClient(proxy.url, { 'MCP-Features': 'Format=JSON, agent, format=json' });
    expect(shaped(await client.callTool(CALL))).toBeDefined();
    await logged(
      proxy,
      (e) => e.msg === 'MCP-Features header: invalid feature tag ignored' && e.tag === 'Format=JSON',
      5000,
      'the warning about the malformed tag',
    );
    const huge = await legacyClient(proxy.url, { 'MCP-Features': `format=json,${'x'.repeat(5000)}` });
    expect(await huge.callTool(CALL)).toEqual(direct);
  });
});

describe('the Python clients, as docs/declaring-tags.md shows them', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy(['--log-level', 'info']);
  }, 30_000);
  const doc = readFileSync(`${ROOT}docs/declaring-tags.md`, 'utf8');
  const snippets = extractBlocks('docs/declaring-tags.md', doc).filter((b) => b.lang === 'python');

  it('has snippets for the Python SDK and for FastMCP, declaring the extension and sending the header', () => {
    expect(snippets.map((b) => /^from (mcp|fastmcp) import Client$/m.exec(b.code)?.[1])).toEqual(['mcp', 'fastmcp', 'fastmcp']);
    expect(snippets.filter((b) => b.code.includes('advertise(')).length).toBe(2);
    expect(snippets.filter((b) => b.code.includes('MCP-Features')).length).toBe(1);
  });

  it.each([0, 1, 2])('snippet %i gets structuredContent, negotiated in the 2026-07-28 era', async (i) => {
    const modernCall = (e: any) => e.msg === 'request' && e.era === 'modern' && e.rpc === 'tools/call' && e.tags?.includes('format=json');
    const before = logEntries(proxy).filter(modernCall).length;
    const dir = mkdtempSync(join(tmpdir(), 'python-client-'));
    const file = join(dir, 'client.py');
    writeFileSync(file, snippets[i].code.replace('http://127.0.0.1:8080/mcp', proxy.url));
    const stdout = await new Promise<string>((resolve, reject) =>
      execFile(PYTHON, [file], { timeout: 60_000 }, (err, out, errOut) =>
        err ? reject(new Error(`${err.message}\n${errOut}`)) : resolve(out),
      ),
    );
    expect(JSON.parse(stdout.trim())).toMatchObject({ title: 'Current Weather in Bern', temperature_c: expect.any(Number) });
    await eventually(
      () => logEntries(proxy).filter(modernCall).length > before,
      5000,
      'the access log line of its modern call, with its tags',
    );
  });
});

describe('--stdio --features', () => {
  it("a v1 stdio client that spawns the proxy with --features gets the tags; without, the server's result", async () => {
    const hinted = await stdioClient([process.execPath, PROXY_MAIN, '--stdio', '--features', 'agent,format=json', '--log-level', 'warn']);
    expect(shaped(await hinted.callTool(CALL))).toMatchObject({ title: 'Current Weather in Bern', temperature_c: expect.any(Number) });
    const plain = await stdioClient([process.execPath, PROXY_MAIN, '--stdio', '--log-level', 'warn']);
    expect(await plain.callTool(CALL)).toEqual(direct);
  });

  it('MCP_PROXY_FEATURES does the same', async () => {
    const hinted = await stdioClient([process.execPath, PROXY_MAIN, '--stdio', '--log-level', 'warn'], {
      MCP_PROXY_FEATURES: 'agent,format=json',
    });
    expect(shaped(await hinted.callTool(CALL))).toBeDefined();
  });
});

describe('profiles chosen by credential and by path', () => {
  let proxy: Running;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'profiles-'));
    const config = join(dir, 'proxy.yaml');
    writeFileSync(
      config,
      [
        'auth:',
        '  tokens:',
        `    - { name: agent-bot, sha256: ${sha256(TOKENS.agent)} }`,
        `    - { name: other, sha256: ${sha256(TOKENS.other)} }`,
        'serverVariants:',
        '  variants:',
        '    - { id: full, description: Everything }',
        '    - { id: weather, description: Weather only, tools: { include: [get_weather] } }',
        'profiles:',
        '  agents:',
        '    features: [agent, format=json]',
        "    principals: ['token:agent-*']",
        '  weather-agents:',
        '    features: [format=json]',
        '    variant: weather',
        '    path: /mcp/weather',
        '  editors:',
        '    features: [format=json]',
        "    clientNames: ['An Editor*']",
      ].join('\n'),
    );
    proxy = await startProxy(['--config', config, '--log-level', 'info']);
  }, 30_000);
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it("the profile of a principal (auth.tokens) applies to its sessions; another principal gets the server's result", async () => {
    const agent = await legacyClient(proxy.url, bearer(TOKENS.agent));
    expect(shaped(await agent.callTool(CALL))).toMatchObject({ temperature_c: expect.any(Number) });
    await logged(
      proxy,
      (e) =>
        e.msg === 'request' &&
        e.rpc === 'tools/call' &&
        e.profile === 'agents (principal token:agent-bot)' &&
        e.tags === 'agent format=json',
      5000,
      'the access log naming the profile and why',
    );
    const other = await legacyClient(proxy.url, bearer(TOKENS.other));
    expect(await other.callTool(CALL)).toEqual(direct);
    expect((await other.listTools()).tools.length).toBeGreaterThan(1);
  });

  it('the profile of a path applies there, with its variant (a request naming another variant still gets it)', async () => {
    const url = proxy.url.replace(/\/mcp$/, '/mcp/weather');
    const client = await legacyClient(url, bearer(TOKENS.other));
    expect(shaped(await client.callTool(CALL))).toMatchObject({ temperature_c: expect.any(Number) });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['get_weather']);
    const full = await client.request(
      { method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/server-variant': 'full' } } },
      (await import('@modelcontextprotocol/sdk/types.js')).ListToolsResultSchema,
    );
    expect(full.tools.length).toBeGreaterThan(1);
    // The path wins over the principal's profile; the access log says so.
    const agent = await legacyClient(url, bearer(TOKENS.agent));
    await agent.callTool(CALL);
    await logged(
      proxy,
      (e) =>
        e.msg === 'request' &&
        e.rpc === 'tools/call' &&
        e.profile === 'weather-agents (path /mcp/weather)' &&
        e.principal === 'token:agent-bot',
      5000,
      'the access log naming the path profile',
    );
  });

  it('the profile of a client name applies to clients that give that clientInfo.name', async () => {
    const editor = await legacyClient(proxy.url, bearer(TOKENS.other), undefined, 'An Editor 1.9');
    expect(shaped(await editor.callTool(CALL))).toMatchObject({ temperature_c: expect.any(Number) });
    await logged(
      proxy,
      (e) => e.msg === 'request' && e.rpc === 'tools/call' && e.profile === 'editors (client name "An Editor 1.9")',
      5000,
      'the access log naming the client-name profile',
    );
  });

  it('modern requests get the profile of their principal too', async () => {
    const call = (token: string) =>
      rawPost(
        proxy.url,
        {
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: {
            ...CALL,
            _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN, 'io.modelcontextprotocol/clientCapabilities': {} },
          },
        },
        { 'mcp-protocol-version': MODERN, 'mcp-method': 'tools/call', 'mcp-name': 'get_weather', ...bearer(token) },
      );
    expect(shaped((await call(TOKENS.agent)).messages[0].result)).toBeDefined();
    expect(shaped((await call(TOKENS.other)).messages[0].result)).toBeUndefined();
    expect(
      logEntries(proxy).some((e) => e.msg === 'request' && e.era === 'modern' && e.profile === 'agents (principal token:agent-bot)'),
    ).toBe(true);
  });
});
