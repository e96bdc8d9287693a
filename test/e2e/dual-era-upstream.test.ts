/**
 * Dual-era servers behind the proxy (FastMCP 4 and the official Python SDK, which answer both
 * `initialize` and `server/discover`): each client is spoken to in its own era. A legacy client
 * gets the server's own initialize and bytes, as directly; a modern client is passed through to
 * the server's 2026-07-28 side; /healthz says `dual`. Over HTTP the proxy finds this out; over
 * stdio `--upstream-era dual` says so (a stdio upstream is not asked).
 */
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDirect, connectViaProxy } from '../helpers/clients.js';
import { connectModern, NEGOTIATION } from '../helpers/modern-clients.js';
import {
  commandLine,
  eventually,
  fixtureArgv,
  PYTHON,
  ROOT,
  startHttpFixture,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';
import { INIT, modern, rawPost, type RawReply } from '../helpers/raw.js';
import { lineSplitter } from '../../src/jsonrpc/lines.js';
import { SSE_TYPE, mediaTypeOf } from '../../src/mcp/media-type.js';

const SERVERS = ['python/fastmcp_server.py', 'python/sdk_server.py'];
const discover = modern(1, 'server/discover');

/** What /healthz says about the upstream's era. */
async function eraOf(proxy: Running): Promise<string> {
  const health = (await (await fetch(new URL('/healthz', proxy.url))).json()) as { upstream: { era: string } };
  return health.upstream.era;
}

/** A v1 client (legacy era) on an MCP endpoint. */
async function legacyClient(url: string): Promise<Client> {
  const client = new Client({ name: 'dual-era-tests', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

/** What a v1 client learns from initialize. */
function handshake(client: Client): unknown {
  return { capabilities: client.getServerCapabilities(), serverInfo: client.getServerVersion(), instructions: client.getInstructions() };
}

/** The one JSON-RPC message of a reply, as the bytes it came in (a JSON body, or an SSE event's data). */
function messageBytes(reply: RawReply): string {
  if (mediaTypeOf(reply.headers.get('content-type')) !== SSE_TYPE) return reply.text;
  const data = reply.text.split(/\r?\n/).filter((l) => l.startsWith('data: ') && l.length > 6); // uvicorn's SSE ends lines with CRLF
  expect(data).toHaveLength(1);
  return data[0].slice('data: '.length);
}

/** A raw legacy session on `url`: the initialize answer's bytes, and the bytes of each call's answer. */
async function legacyBytes(url: string, calls: unknown[]): Promise<string[]> {
  const init = await rawPost(url, INIT);
  const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  const answers = [messageBytes(init)];
  for (const call of calls) answers.push(messageBytes(await rawPost(url, call, headers)));
  await fetch(url, { method: 'DELETE', headers });
  return answers;
}

type Era = 'legacy' | '2026-07-28' | 'auto';

/**
 * The Python SDK's own client (test/fixtures/python/era_client.py), a new one in each of `modes` in
 * turn, in one Python process (its imports cost seconds): what each saw of the server, by mode.
 */
async function pythonClient(url: string, modes: Era[]): Promise<Record<Era, any>> {
  const { stdout } = await promisify(execFile)(PYTHON, [`${ROOT}test/fixtures/python/era_client.py`, url, ...modes], { timeout: 45_000 });
  const lines = stdout.trim().split('\n').slice(-modes.length);
  return Object.fromEntries(modes.map((mode, i) => [mode, JSON.parse(lines[i])])) as Record<Era, any>;
}

/** The server's own answer to server/discover over stdio (a process of its own, stopped after). */
async function stdioDiscover(argv: string[]): Promise<any> {
  const proc = spawn(argv[0], argv.slice(1), { stdio: ['pipe', 'pipe', 'ignore'] });
  try {
    const line = new Promise<string>((resolve) => proc.stdout.on('data', lineSplitter(resolve)));
    proc.stdin.write(JSON.stringify(discover.body) + '\n');
    return JSON.parse(await line).result;
  } finally {
    proc.kill();
  }
}

const TASKS = 'io.modelcontextprotocol/tasks';

/** Discovered capabilities without the extensions the proxy adds: content negotiation, and its own tasks (these servers offer none). */
function serversCapabilities(discovered: any): unknown {
  const { [NEGOTIATION]: _proxys, [TASKS]: _proxysTasks, ...extensions } = discovered.capabilities.extensions ?? {};
  return { ...discovered.capabilities, extensions };
}

describe.each(SERVERS)('%s, a dual-era server, behind the proxy over HTTP', (server) => {
  let upstream: Running;
  let proxy: Running;

  beforeAll(async () => {
    upstream = await startHttpFixture(server);
    proxy = await startProxy(['--upstream', upstream.url]);
  }, 60_000);
  afterAll(stopAll);

  it('is found to speak both eras: /healthz says dual', async () => {
    await eventually(async () => (await eraOf(proxy)) === 'dual', 20_000, 'era dual in /healthz');
  }, 30_000);

  it("gives a v1 client the server's own initialize (capabilities, serverInfo, instructions) and results, as directly", async () => {
    const direct = await legacyClient(upstream.url);
    const proxied = await legacyClient(proxy.url);
    try {
      expect(handshake(proxied)).toEqual(handshake(direct));
      expect((await proxied.listTools()).tools).toEqual((await direct.listTools()).tools);
      const call = { name: 'weather_json', arguments: { city: 'Bern' } };
      expect(await proxied.callTool(call)).toEqual(await direct.callTool(call));
    } finally {
      await direct.close();
      await proxied.close();
    }
  }, 30_000);

  it("gives a v1 client on the proxy's stdio front the server's own initialize", async () => {
    const direct = await legacyClient(upstream.url);
    const proxied = await connectViaProxy('stdio', upstream.url);
    try {
      expect(handshake(proxied.client)).toEqual(handshake(direct));
      expect(await proxied.client.callTool({ name: 'echo', arguments: { text: 'stdio' } })).toEqual(
        await direct.callTool({ name: 'echo', arguments: { text: 'stdio' } }),
      );
    } finally {
      await direct.close();
      await proxied.close();
    }
  }, 30_000);

  it("relays a legacy session's bytes: initialize and a call answered as the server wrote them", async () => {
    const calls = [
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'weather_json', arguments: { city: 'Lugano' } } },
      { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} },
    ];
    const direct = await legacyBytes(upstream.url, calls);
    expect(JSON.parse(direct[0]).result.protocolVersion).toBe('2025-11-25');
    expect(await legacyBytes(proxy.url, calls)).toEqual(direct);
  }, 30_000);

  it("passes a modern client (v2 SDK, pinned to 2026-07-28) through: the server's discover, tools and results", async () => {
    const direct = await connectModern('http', { url: upstream.url }, { mode: 'pin', input: false });
    const proxied = await connectModern('http', { url: proxy.url }, { mode: 'pin', input: false });
    try {
      expect((await proxied.client.listTools()).tools).toEqual((await direct.client.listTools()).tools);
      const call = { name: 'echo', arguments: { text: 'modern' } };
      expect(await proxied.client.callTool(call)).toEqual(await direct.client.callTool(call));
    } finally {
      await direct.close();
      await proxied.close();
    }
    const found = (await rawPost(upstream.url, discover.body, discover.headers)).messages[0].result;
    const relayed = (await rawPost(proxy.url, discover.body, discover.headers)).messages[0].result;
    // The server's own 2026-07-28 capabilities (which differ from its initialize's), with the proxy's extension added.
    expect(serversCapabilities(relayed)).toEqual(serversCapabilities(found));
    expect(relayed.capabilities.extensions).toHaveProperty([NEGOTIATION]);
    expect(relayed.capabilities.extensions).toHaveProperty([TASKS]);
    expect(found.capabilities.extensions ?? {}).not.toHaveProperty([TASKS]);
    expect(relayed._meta['io.modelcontextprotocol/serverInfo']).toEqual(found._meta['io.modelcontextprotocol/serverInfo']);
  }, 30_000);

  it("serves the Python SDK's client in each era as the server does directly", async () => {
    const modes: Era[] = ['legacy', '2026-07-28', 'auto'];
    const [direct, proxied] = await Promise.all([pythonClient(upstream.url, modes), pythonClient(proxy.url, modes)]);
    expect(proxied.legacy).toEqual(direct.legacy);
    expect(proxied.legacy.protocolVersion).toBe('2025-11-25');
    expect(proxied['2026-07-28']).toEqual(direct['2026-07-28']);
    // auto probes server/discover: through the proxy it is the server's, with the proxy's extension.
    expect(proxied.auto.protocolVersion).toBe('2026-07-28');
    expect(serversCapabilities(proxied.auto)).toEqual(serversCapabilities(direct.auto));
    expect({ ...proxied.auto, capabilities: undefined }).toEqual({ ...direct.auto, capabilities: undefined });
  }, 60_000);
});

describe.each(SERVERS)('%s behind the proxy over stdio', (server) => {
  afterAll(stopAll);

  it("with --upstream-era dual: a v1 client gets the server's own initialize, a modern client the server's 2026-07-28 side; /healthz says dual", async () => {
    const proxy = await startProxy(['--upstream', commandLine(fixtureArgv(server)), '--upstream-era', 'dual']);
    expect(await eraOf(proxy)).toBe('dual');
    const direct = await connectDirect({ argv: fixtureArgv(server) });
    const proxied = await legacyClient(proxy.url);
    try {
      expect(handshake(proxied)).toEqual(handshake(direct.client));
      const call = { name: 'echo', arguments: { text: 'legacy' } };
      expect(await proxied.callTool(call)).toEqual(await direct.client.callTool(call));
    } finally {
      await direct.close();
      await proxied.close();
    }
    const modernClient = await connectModern('http', { url: proxy.url }, { mode: 'pin', input: false });
    try {
      expect((await modernClient.client.callTool({ name: 'echo', arguments: { text: 'modern' } })).content).toEqual([
        { type: 'text', text: 'modern' },
      ]);
    } finally {
      await modernClient.close();
    }
    // The server's discover (what it says in 2026-07-28, which differs from its initialize), not one the proxy built from its initialize.
    const found = await stdioDiscover(fixtureArgv(server));
    const relayed = (await rawPost(proxy.url, discover.body, discover.headers)).messages[0].result;
    expect(serversCapabilities(relayed)).toEqual(serversCapabilities(found));
    expect(relayed._meta['io.modelcontextprotocol/serverInfo']).toEqual(found._meta['io.modelcontextprotocol/serverInfo']);
  }, 60_000);

  it('by default is legacy (a stdio upstream is not asked), and relays a v1 client as directly', async () => {
    const proxy = await startProxy(['--upstream', commandLine(fixtureArgv(server))]);
    expect(await eraOf(proxy)).toBe('legacy');
    const direct = await connectDirect({ argv: fixtureArgv(server) });
    const proxied = await legacyClient(proxy.url);
    try {
      expect(handshake(proxied)).toEqual(handshake(direct.client));
    } finally {
      await direct.close();
      await proxied.close();
    }
  }, 60_000);
});

describe('servers of one era behind the proxy', () => {
  afterAll(stopAll);

  it('a legacy-only HTTP server stays legacy', async () => {
    const upstream = await startHttpFixture('conformance-server');
    const proxy = await startProxy(['--upstream', upstream.url]);
    await eventually(async () => (await eraOf(proxy)) === 'legacy', 20_000, 'era legacy in /healthz');
    const direct = await legacyClient(upstream.url);
    const proxied = await legacyClient(proxy.url);
    try {
      expect(handshake(proxied)).toEqual(handshake(direct));
    } finally {
      await direct.close();
      await proxied.close();
    }
  }, 60_000);

  it('a 2026-07-28-only HTTP server that refuses initialize with a bare 400 is modern: legacy clients are bridged', async () => {
    const upstream = await startHttpFixture('bare-refusal-server.mjs');
    expect((await rawPost(upstream.url, INIT)).status).toBe(400);
    const proxy = await startProxy(['--upstream', upstream.url]);
    await eventually(async () => (await eraOf(proxy)) === 'modern', 20_000, 'era modern in /healthz');
    const proxied = await legacyClient(proxy.url);
    try {
      expect(handshake(proxied)).toMatchObject({
        serverInfo: { name: 'bare-refusal' },
        instructions: 'Refuses initialize with a bare 400.',
      });
      expect((await proxied.callTool({ name: 'echo', arguments: { text: 'bridged' } })).content).toEqual([
        { type: 'text', text: 'bridged' },
      ]);
    } finally {
      await proxied.close();
    }
  }, 60_000);

  it('a 2026-07-28-only HTTP server (initialize refused) is modern: legacy clients are bridged', async () => {
    const upstream = await startHttpFixture('modern-server');
    const proxy = await startProxy(['--upstream', upstream.url]);
    await eventually(async () => (await eraOf(proxy)) === 'modern', 20_000, 'era modern in /healthz');
    const proxied = await legacyClient(proxy.url);
    try {
      expect(proxied.getServerVersion()).toMatchObject({ name: 'modern-fixture' });
      expect((await proxied.callTool({ name: 'echo', arguments: { text: 'bridged' } })).content).toEqual([
        { type: 'text', text: 'bridged' },
      ]);
    } finally {
      await proxied.close();
    }
  }, 60_000);
});
