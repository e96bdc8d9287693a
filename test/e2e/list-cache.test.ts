/**
 * The list cache (upstream.listCache) through the built proxy: the upstream's list answers are
 * shared by the clients of pooled or shared sessions and of a 2026-07-28 server, in both eras,
 * until the upstream announces a change or the answer is too old; never across principals of a
 * stateful server, and never for a legacy session of its own. The upstream (list-counter) writes a
 * line per tools/list it answers, so the tests count what reached it.
 */
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import { metricValue, modern, rawPost } from '../helpers/raw.js';
import { connectModern, type ModernConnected } from '../helpers/modern-clients.js';
import { commandLine, eventually, fixtureArgv, logged, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';

const COUNTER = commandLine(fixtureArgv('list-counter'));
const token = (who: string) => `${who}-token-0123456789`;
const as = (who: string) => ({ authorization: `Bearer ${token(who)}` });

/** A fresh file the upstream counts its tools/list answers in. */
function countFile(): string {
  return join(mkdtempSync(join(tmpdir(), 'proxy-list-cache-')), 'lists.jsonl');
}

/** The tools/list answers the upstream wrote down (a partial last line, still being written, is left out). */
function listed(file: string): Array<{ pid: number; client?: string }> {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .flatMap((line) => {
      try {
        return [JSON.parse(line) as { pid: number; method: string; client?: string }];
      } catch {
        return [];
      }
    })
    .filter((e) => e.method === 'tools/list');
}

/** A proxy with `yaml` as its config, once its start-up check is over. */
async function proxyWith(yaml: string): Promise<Running> {
  const file = join(mkdtempSync(join(tmpdir(), 'proxy-list-cache-')), 'proxy.yaml');
  writeFileSync(file, yaml);
  const proxy = await startProxy(['--config', file]);
  await logged(proxy, (e) => e.msg === 'upstream ready', 20_000, 'the start-up check');
  return proxy;
}

/** The stdio list-counter as the upstream, counting in `file`; `extra`: more keys of the upstream section. */
const stdioUpstream = (file: string, extra = '') =>
  `upstream:\n  command: ${JSON.stringify(COUNTER)}\n  env: { LIST_COUNT_FILE: ${JSON.stringify(file)} }\n${extra}`;

const legacyClients: Client[] = [];
const modernClients: ModernConnected[] = [];

/** A v1 SDK client session through the proxy (`headers`: its credentials). */
async function legacyClient(url: string, headers: Record<string, string> = {}): Promise<Client> {
  const client = new Client({ name: 'list-cache-test', version: '1' }, { capabilities: {} });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  legacyClients.push(client);
  return client;
}

/** A modern tools/list as `who` (a raw 2026-07-28 request): the names of the tools it got. */
async function modernList(url: string, id: number, headers: Record<string, string> = {}): Promise<string[]> {
  const m = modern(id, 'tools/list');
  const reply = await rawPost(url, m.body, { ...m.headers, ...headers });
  expect(reply.status, reply.text).toBe(200);
  const answer = reply.messages[0];
  expect(answer.id).toBe(id);
  return (answer.result.tools as Array<{ name: string }>).map((t) => t.name);
}

const names = (r: { tools: Array<{ name: string }> }) => r.tools.map((t) => t.name);

/** Resolves once `client` hears that the tool list changed. */
function toolListChange(client: Client): Promise<void> {
  return new Promise((resolve) => client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()));
}

afterEach(async () => {
  await Promise.all([...legacyClients.splice(0).map((c) => c.close()), ...modernClients.splice(0).map((c) => c.close())]);
  await stopAll();
});
afterAll(stopAll);

describe('the list cache', () => {
  it('lists the tools of a stateless legacy upstream once for many shared sessions and modern requests, until it announces a change', async () => {
    const file = countFile();
    const proxy = await proxyWith(
      `${stdioUpstream(file, '  sessions: shared\n  stateless: true\n')}modern:\n  pool: { warmSpare: false }\n`,
    );
    const sessions = await Promise.all(Array.from({ length: 4 }, () => legacyClient(proxy.url)));
    // All at once: the first request goes upstream, the others wait for its answer.
    const lists = await Promise.all([
      ...sessions.map(async (c) => names(await c.listTools())),
      ...[1, 2, 3, 4].map((id) => modernList(proxy.url, id)),
    ]);
    for (const got of lists) expect(got).toEqual(['pid', 'add_tool']);
    // And again, one by one: from the cache.
    for (const c of sessions) expect(names(await c.listTools())).toEqual(['pid', 'add_tool']);
    expect(await modernList(proxy.url, 5)).toEqual(['pid', 'add_tool']);
    expect(listed(file)).toHaveLength(1);

    // The upstream announces a change: the next list reaches it, once, and shows the change.
    const heard = toolListChange(sessions[1]);
    await sessions[0].callTool({ name: 'add_tool', arguments: {} });
    await heard;
    const after = await Promise.all([...sessions.map(async (c) => names(await c.listTools())), modernList(proxy.url, 6)]);
    for (const got of after) expect(got).toEqual(['pid', 'add_tool', 'extra_2']);
    expect(listed(file)).toHaveLength(2);
    expect(await metricValue(proxy.url, 'mcp_proxy_list_cache_requests_total{method="tools/list",outcome="miss"}')).toBe(2);
    expect(await metricValue(proxy.url, 'mcp_proxy_list_cache_requests_total{method="tools/list",outcome="hit"}')).toBe(16);
  }, 60_000);

  it('serves the listing a search makes (tools=search) from the cache too', async () => {
    const file = countFile();
    const proxy = await proxyWith(
      `${stdioUpstream(file, '  sessions: shared\n  stateless: true\n')}modern:\n  pool: { warmSpare: false }\n`,
    );
    const caps = { extensions: { 'io.modelcontextprotocol/content-negotiation': { features: ['tools=search'] } } };
    const search = async (id: number) => {
      const m = modern(id, 'tools/call', { name: 'search_tools', arguments: { query: 'add a tool to the list' } }, caps);
      const reply = await rawPost(proxy.url, m.body, m.headers);
      expect(reply.messages[0].result.structuredContent.tools[0].name, reply.text).toBe('add_tool');
    };
    await search(1);
    // The first reached the upstream (and so did the proxy's own listing of the tools a call may name); the others do not.
    const first = listed(file).length;
    await search(2);
    await search(3);
    expect(listed(file)).toHaveLength(first);
  }, 60_000);

  it('lists the tools of a 2026-07-28 server once for modern clients and bridged legacy sessions, until it announces a change', async () => {
    const file = countFile();
    const upstream = await startHttpFixture('list-counter', { LIST_COUNT_FILE: file }, ['--modern']);
    const proxy = await proxyWith(`upstream:\n  url: ${upstream.url}\n`);
    const v2 = await Promise.all([1, 2, 3].map(() => connectModern('http', { url: proxy.url }, { input: false })));
    modernClients.push(...v2);
    const bridged = await Promise.all([1, 2, 3].map(() => legacyClient(proxy.url)));
    const all = () => [...v2.map(async (c) => names(await c.client.listTools())), ...bridged.map(async (c) => names(await c.listTools()))];
    for (const got of await Promise.all(all())) expect(got).toEqual(['echo', 'change_tools']);
    for (const got of await Promise.all(all())) expect(got).toEqual(['echo', 'change_tools']);
    expect(listed(file)).toHaveLength(1);

    // The server announces a change on the listen streams the bridged sessions hold: the next list reaches it once.
    const heard = toolListChange(bridged[2]);
    const m = modern(1, 'tools/call', { name: 'change_tools', arguments: {} });
    expect((await rawPost(upstream.url, m.body, m.headers)).status).toBe(200);
    await heard;
    for (const got of await Promise.all(all())) expect(got).toEqual(['echo', 'change_tools']);
    expect(listed(file)).toHaveLength(2);
  }, 60_000);

  it('keeps the answers of a stateful upstream per principal', async () => {
    const file = countFile();
    const tokens = ['alice', 'bob'].map((p) => `    - { name: ${p}, sha256: ${hashToken(token(p))} }`).join('\n');
    const proxy = await proxyWith(
      `${stdioUpstream(file, '  sessions: shared\n')}modern:\n  pool: { warmSpare: false }\nauth:\n  tokens:\n${tokens}\n`,
    );
    const alice = await legacyClient(proxy.url, as('alice'));
    const bob = await legacyClient(proxy.url, as('bob'));
    const described = async (c: Client) => (await c.listTools()).tools.find((t) => t.name === 'pid')!.description;
    const alicePid = await alice.callTool({ name: 'pid', arguments: {} });
    const bobPid = await bob.callTool({ name: 'pid', arguments: {} });
    const pidOf = (r: unknown) => (r as { content: Array<{ text: string }> }).content[0].text;
    expect(pidOf(alicePid)).not.toBe(pidOf(bobPid));

    expect(await described(alice)).toBe(`process ${pidOf(alicePid)}`);
    expect(await modernList(proxy.url, 1, as('alice'))).toEqual(['pid', 'add_tool']);
    expect(listed(file)).toHaveLength(1);
    // Bob's list is his upstream process's, never Alice's answer.
    expect(await described(bob)).toBe(`process ${pidOf(bobPid)}`);
    expect(await described(bob)).toBe(`process ${pidOf(bobPid)}`);
    expect(listed(file).map((e) => String(e.pid))).toEqual([pidOf(alicePid), pidOf(bobPid)]);
  }, 60_000);

  it('never answers a legacy session of its own from the cache', async () => {
    const file = countFile();
    const proxy = await proxyWith(`${stdioUpstream(file)}modern:\n  pool: { warmSpare: false }\n`);
    const own = await legacyClient(proxy.url);
    const pid = (await own.callTool({ name: 'pid', arguments: {} })) as { content: Array<{ text: string }> };
    for (let i = 0; i < 3; i++) expect(names(await own.listTools())).toEqual(['pid', 'add_tool']);
    // Modern requests in front of the same server go through pooled sessions: those are cached.
    for (let id = 1; id <= 3; id++) expect(await modernList(proxy.url, id)).toEqual(['pid', 'add_tool']);
    const byOwn = listed(file).filter((e) => String(e.pid) === pid.content[0].text);
    expect(byOwn).toHaveLength(3);
    expect(listed(file)).toHaveLength(4);
  }, 60_000);

  it("shares a list under way, which the first client's cancellation does not fail", async () => {
    const file = countFile();
    const proxy = await proxyWith(
      `upstream:\n  command: ${JSON.stringify(COUNTER)}\n  env: { LIST_COUNT_FILE: ${JSON.stringify(file)}, LIST_DELAY_MS: "3000" }\n` +
        '  sessions: shared\n  stateless: true\nmodern:\n  pool: { warmSpare: false }\n',
    );
    const hits = () => metricValue(proxy.url, 'mcp_proxy_list_cache_requests_total{method="tools/list",outcome="hit"}');
    const leaving = new AbortController();
    const m = modern(1, 'tools/list');
    const first = rawPost(proxy.url, m.body, m.headers, leaving.signal).catch((err: Error) => err);
    await eventually(() => listed(file).length === 1, 10_000, 'the upstream to be asked');
    const second = modernList(proxy.url, 2);
    await eventually(async () => (await hits()) === 1, 10_000, 'the second request to join the first');
    leaving.abort();
    expect(await first).toBeInstanceOf(Error);
    expect(await second).toEqual(['pid', 'add_tool']);
    // The answer the first client asked for is kept, though it left.
    expect(await modernList(proxy.url, 3)).toEqual(['pid', 'add_tool']);
    expect(listed(file)).toHaveLength(1);
  }, 60_000);

  it('asks the upstream again once an answer is older than maxAgeMs', async () => {
    const file = countFile();
    const maxAgeMs = 1500;
    const proxy = await proxyWith(
      `${stdioUpstream(file, `  sessions: shared\n  listCache: { maxAgeMs: ${maxAgeMs} }\n`)}modern:\n  pool: { warmSpare: false }\n`,
    );
    const client = await legacyClient(proxy.url);
    const asked = Date.now();
    await client.listTools();
    await client.listTools();
    expect(listed(file)).toHaveLength(1);
    // Listed again and again until the upstream is asked: not before the answer is maxAgeMs old.
    await eventually(
      async () => {
        await client.listTools();
        return listed(file).length === 2;
      },
      10_000,
      'the answer to expire',
    );
    expect(Date.now() - asked).toBeGreaterThanOrEqual(maxAgeMs);
  }, 60_000);
});
