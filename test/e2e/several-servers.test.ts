/**
 * Several servers behind one endpoint: server-everything, server-memory and faulty-server (legacy,
 * stdio) beside a 2026-07-28-only server over Streamable HTTP. Legacy (v1) and 2026-07-28 (v2)
 * clients list every server's tools under their prefixes, call one of each, answer elicitations
 * coming from a legacy and from a 2026-07-28 server, page through a merged list, and get a
 * server's own negotiation rules. A server that goes away fails only its own calls, with an error
 * naming it, shows as down in /healthz and is used again once back; a legacy session that used two
 * servers goes on at another replica; what cannot work is refused at start.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  ElicitRequestSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDirect, progressOf, receivedDuring } from '../helpers/clients.js';
import { connectModern, type ModernConnected } from '../helpers/modern-clients.js';
import {
  EVERYTHING_STDIO,
  PROXY_MAIN,
  eventually,
  fixtureArgv,
  freePort,
  logged,
  startHttpFixture,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';
import { callTool, metricIn, rawPost, rawSession } from '../helpers/raw.js';

const MEMORY_STDIO = [process.execPath, join(process.cwd(), 'node_modules/@modelcontextprotocol/server-memory/dist/index.js')];
const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'several-servers-'));
/** server-memory, keeping its graph in a file of this test's own. */
const memory = (file: string) => ({ name: 'memory', command: MEMORY_STDIO, env: { MEMORY_FILE_PATH: join(dir, file) } });

/** A proxy in front of `servers` (the `upstreams` list), with more config beside it. */
function proxyFor(servers: unknown[], more: Record<string, unknown> = {}, env: NodeJS.ProcessEnv = {}): Promise<Running> {
  const file = join(dir, `proxy-${Math.random().toString(36).slice(2)}.yaml`);
  writeFileSync(file, stringify({ upstreams: servers, ...more }));
  return startProxy(['--config', file], env);
}

/** The text of a tool result's first content. */
function text(result: unknown): string {
  return ((result as { content: { text: string }[] }).content[0] ?? { text: '' }).text;
}

/** A v1 client with a session at `url`; it answers elicitation, sampling and roots (test/helpers/clients.ts). */
async function legacyClient(url: string): Promise<{ client: Client; close(): Promise<void> }> {
  const client = new Client(
    { name: 'several-servers-test', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} }, roots: { listChanged: true } } },
  );
  client.setRequestHandler(ElicitRequestSchema, async () => ({
    action: 'accept',
    content: { name: 'Ada' },
  }));
  const transport = new StreamableHTTPClientTransport(new URL(url));
  await client.connect(transport);
  return { client, close: () => transport.terminateSession().then(() => client.close()) };
}

const SERVERS = (modernUrl: string) => [
  { name: 'everything', command: EVERYTHING_STDIO },
  memory('endpoint.jsonl'),
  { name: 'faulty', command: fixtureArgv('faulty-server') },
  {
    name: 'modern',
    url: modernUrl,
    required: false,
    // This server's own rule: its JSON text becomes structured content for clients that ask for JSON.
    rules: [{ when: { name: 'weather_json', features: ['format=json'] }, apply: [{ 'json-extract': {} }] }],
  },
];

describe('several servers behind one endpoint', () => {
  let modernPort: number;
  let modern: Running;
  let proxy: Running;
  const startModern = () => startHttpFixture('modern-server', {}, ['--port', String(modernPort)]);

  beforeAll(async () => {
    modernPort = await freePort();
    modern = await startModern();
    proxy = await proxyFor(SERVERS(modern.url), { contentNegotiation: { useDefaultRules: false } }, {});
  }, 60_000);
  afterAll(stopAll);

  it('serves a legacy client every server under its prefix: lists, calls, elicitations from a legacy and a 2026-07-28 server, list changes', async () => {
    const { client, close } = await legacyClient(proxy.url);
    try {
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(
        expect.arrayContaining(['everything_echo', 'memory_read_graph', 'faulty_bump', 'modern_echo', 'modern_ask_name']),
      );
      expect(names.every((n) => /^(everything|memory|faulty|modern)_/.test(n))).toBe(true);
      expect(client.getInstructions()).toMatch(/4 MCP servers[\s\S]*## everything[\s\S]*## memory[\s\S]*## faulty[\s\S]*## modern/);

      expect(text(await client.callTool({ name: 'everything_echo', arguments: { message: 'hi' } }))).toBe('Echo: hi');
      expect(JSON.parse(text(await client.callTool({ name: 'memory_read_graph', arguments: {} })))).toEqual({
        entities: [],
        relations: [],
      });
      expect(text(await client.callTool({ name: 'modern_echo', arguments: { text: 'new era' } }))).toContain('new era');
      // Elicitations: a legacy server's request, and a 2026-07-28 server's input round, both answered by this client.
      expect(JSON.parse(text(await client.callTool({ name: 'faulty_elicit', arguments: { message: 'Your name?' } })))).toMatchObject({
        action: 'accept',
        content: { name: 'Ada' },
      });
      expect(text(await client.callTool({ name: 'modern_ask_name', arguments: {} }))).toContain('Ada');

      const unknown = await client.callTool({ name: 'nobody_echo', arguments: {} }).catch((err: Error) => err);
      expect(String(unknown)).toMatch(/Unknown tool: nobody_echo/);

      // Progress from a server reaches the call it belongs to.
      const { messages } = await receivedDuring(client, () =>
        client.callTool({ name: 'everything_trigger-long-running-operation', arguments: { duration: 1, steps: 2 } }, undefined, {
          onprogress: () => undefined,
        }),
      );
      expect(progressOf(messages)).toHaveLength(2);

      // A list change and a resource update one server announces reach the session (its listen stream opens
      // after the answer that opened it: announced until heard).
      const changed = new Promise<void>((resolve) =>
        client.setNotificationHandler(ToolListChangedNotificationSchema, async () => resolve()),
      );
      const updated = new Promise((resolve) =>
        client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => resolve(n.params.uri)),
      );
      await client.subscribeResource({ uri: 'test://watched' });
      const announcing = setInterval(() => {
        void client.callTool({ name: 'modern_change_tools', arguments: {} }).catch(() => undefined);
        void client.callTool({ name: 'modern_touch', arguments: {} }).catch(() => undefined);
      }, 200);
      try {
        await changed;
        expect(await updated).toBe('test://watched');
      } finally {
        clearInterval(announcing);
      }
    } finally {
      await close();
    }
  }, 60_000);

  it('merges a paginated list: the cursor carries each server on, and every resource is listed once', async () => {
    const direct = await connectDirect({ argv: fixtureArgv('faulty-server') });
    const own: string[] = [];
    for (let cursor: string | undefined; ;) {
      const page = await direct.client.listResources(cursor ? { cursor } : {});
      own.push(...page.resources.map((r) => r.uri));
      if (!(cursor = page.nextCursor)) break;
    }
    await direct.close();
    expect(own.length).toBeGreaterThan(2);

    const { client, close } = await legacyClient(proxy.url);
    try {
      const seen: string[] = [];
      let pages = 0;
      for (let cursor: string | undefined; ;) {
        const page = await client.listResources(cursor ? { cursor } : {});
        pages++;
        seen.push(...page.resources.map((r) => r.uri));
        if (!(cursor = page.nextCursor)) break;
      }
      expect(pages).toBeGreaterThan(1);
      expect(new Set(seen).size).toBe(seen.length);
      expect(seen).toEqual(expect.arrayContaining(own));
      expect(seen.some((uri) => uri.startsWith('demo://'))).toBe(true); // server-everything's, beside them
      // Each resource is read from the server that listed it.
      const read = await client.readResource({ uri: own.at(-1)! });
      expect(read.contents[0].uri).toBe(own.at(-1));
      const forged = await client.listResources({ cursor: 'not-a-cursor' }).catch((err: Error) => err);
      expect(String(forged)).toMatch(/cursor is not one this endpoint gave/);
    } finally {
      await close();
    }
  }, 60_000);

  it('serves a 2026-07-28 client the same servers, with input rounds from either era and a server of its own rules', async () => {
    const connected: ModernConnected = await connectModern('http', { url: proxy.url }, { features: ['format=json'] });
    try {
      const { client, received } = connected;
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toEqual(expect.arrayContaining(['everything_echo', 'memory_read_graph', 'faulty_bump', 'modern_weather_json']));
      expect(text(await client.callTool({ name: 'everything_echo', arguments: { message: 'hi' } }))).toBe('Echo: hi');
      expect(text(await client.callTool({ name: 'memory_read_graph', arguments: {} }))).toContain('entities');
      expect(JSON.parse(text(await client.callTool({ name: 'faulty_elicit', arguments: { message: 'Your name?' } })))).toMatchObject({
        action: 'accept',
      });
      expect(text(await client.callTool({ name: 'modern_ask_name', arguments: {} }))).toBeTruthy();
      expect(received['elicitation/create']?.length).toBeGreaterThanOrEqual(2);
      // format=json: the modern server's rule makes its JSON text structured; faulty's echo of JSON has no rule.
      const weather = await client.callTool({ name: 'modern_weather_json', arguments: { city: 'Oslo' } });
      expect(weather.structuredContent).toBeTruthy();
      const echoed = await client.callTool({ name: 'faulty_echo', arguments: { text: '{"a":1}' } });
      expect(echoed.structuredContent).toBeUndefined();
      expect(text(echoed)).toBe('{"a":1}');
    } finally {
      await connected.close();
    }
  }, 60_000);

  it('keeps serving when a server goes away: its calls fail naming it, /healthz shows it, and it is used again once back', async () => {
    const { client, close } = await legacyClient(proxy.url);
    try {
      expect(text(await client.callTool({ name: 'modern_echo', arguments: { text: 'before' } }))).toContain('before');
      await modern.stop();
      const started = Date.now();
      const failed = await client.callTool({ name: 'modern_echo', arguments: { text: 'gone' } }).catch((err: Error) => err);
      expect(String(failed)).toMatch(/Server "modern"/);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(text(await client.callTool({ name: 'everything_echo', arguments: { message: 'still here' } }))).toBe('Echo: still here');

      const health = async (): Promise<any> => (await fetch(proxy.url.replace(/\/mcp$/, '/healthz'))).json();
      const status = async (name: string) => (await health()).upstream.servers.find((s: any) => s.name === name);
      await eventually(async () => (await status('modern')).status === 'down', 5000, 'modern down in /healthz');
      expect((await status('everything')).status).toBe('up');
      // Not required: the endpoint stays ready.
      expect((await fetch(proxy.url.replace(/\/mcp$/, '/readyz'))).status).toBe(200);
      // Counted and logged under its name.
      const metrics = await (await fetch(proxy.url.replace(/\/mcp$/, '/metrics'))).text();
      expect(metricIn(metrics, 'mcp_proxy_server_requests_total{server="modern",method="tools/call",outcome="failed"}')).toBeGreaterThan(0);
      expect(metricIn(metrics, 'mcp_proxy_server_requests_total{server="everything",method="tools/call",outcome="ok"}')).toBeGreaterThan(0);
      expect(metricIn(metrics, 'mcp_proxy_server_up{server="modern"}')).toBe(0);
      await logged(proxy, (e) => e.msg === 'request' && e.target === 'modern_echo' && e.server === 'modern');

      modern = await startModern();
      await eventually(
        async () =>
          text(await client.callTool({ name: 'modern_echo', arguments: { text: 'back' } }).catch(() => ({ content: [] }))).includes('back'),
        15_000,
        'modern answering again',
      );
      await eventually(async () => (await status('modern')).status === 'up', 5000, 'modern up in /healthz');
    } finally {
      await close();
    }
  }, 60_000);
});

describe('a legacy session of several servers at another replica', () => {
  afterAll(stopAll);

  it('goes on there: both servers it used keep their state', async () => {
    const servers = [{ name: 'faulty', command: fixtureArgv('faulty-server') }, memory('replicas.jsonl')];
    const secret = { MCP_PROXY_SECRET: 'several-servers-secret-0123456789abcdef' };
    const [a, b] = await Promise.all([
      proxyFor(servers, {}, { ...secret, MCP_PROXY_REPLICA_ID: 'alpha' }),
      proxyFor(servers, {}, { ...secret, MCP_PROXY_REPLICA_ID: 'beta' }),
    ]);
    const headers = await rawSession(a.url);
    const call = async (url: string, id: number, name: string, args: Record<string, unknown> = {}) => {
      const res = await rawPost(url, callTool(id, name, args), headers);
      expect(res.status, res.text).toBe(200);
      return text(res.messages[0].result);
    };
    expect(await call(a.url, 1, 'faulty_bump')).toBe('1');
    await call(a.url, 2, 'memory_create_entities', { entities: [{ name: 'Ada', entityType: 'person', observations: ['wrote notes'] }] });
    expect(await call(b.url, 3, 'faulty_bump')).toBe('2');
    expect(JSON.parse(await call(b.url, 4, 'memory_read_graph')).entities).toMatchObject([{ name: 'Ada', observations: ['wrote notes'] }]);
  }, 60_000);
});

describe("a server that never answers, and a client that sends the proxy's own words as ids", () => {
  afterAll(stopAll);

  it('lists and calls the other servers within the wait for one, and answers every request whatever its id', async () => {
    // Takes every request and answers none.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const proxy = await proxyFor(
        [
          { name: 'faulty', command: fixtureArgv('faulty-server') },
          { name: 'silent', url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/mcp`, era: 'legacy', required: false },
        ],
        { timeouts: { initializeMs: 2000 } },
      );
      const started = Date.now();
      const headers = await rawSession(proxy.url);
      const list = await rawPost(proxy.url, { jsonrpc: '2.0', id: 'mcp-negotiate-proxy/initialize', method: 'tools/list' }, headers);
      expect(list.messages[0].result.tools.map((t: { name: string }) => t.name)).toContain('faulty_echo');
      expect(Date.now() - started).toBeLessThan(15_000);
      const call = { name: 'faulty_echo', arguments: { text: 'mine' } };
      const echoed = await rawPost(
        proxy.url,
        { jsonrpc: '2.0', id: 'mcp-negotiate-proxy/logging', method: 'tools/call', params: call },
        headers,
      );
      expect(text(echoed.messages[0].result)).toBe('mine');
    } finally {
      silent.closeAllConnections();
      silent.close();
    }
  }, 60_000);
});

describe('what an endpoint of several servers refuses at start', () => {
  it('two servers with one prefix, and a server named on the command line beside one that is not', async () => {
    const file = join(dir, 'clash.yaml');
    writeFileSync(
      file,
      stringify({
        upstreams: [
          { name: 'one', prefix: 'x', command: EVERYTHING_STDIO },
          { name: 'two', prefix: 'x', command: MEMORY_STDIO },
        ],
      }),
    );
    const clash = await run(process.execPath, [PROXY_MAIN, 'validate', '--config', file]).catch((err: { stderr: string }) => err);
    expect(clash.stderr).toMatch(/servers "one" and "two" both have the prefix "x"/);

    const mixed = await run(process.execPath, [PROXY_MAIN, '--upstream', 'a=node a.js', '--upstream', 'node b.js']).catch(
      (err: { stderr: string; code: number }) => err,
    );
    expect(mixed.stderr).toMatch(/with several servers, name each one: --upstream NAME=SPEC/);
  });
});
