/**
 * Content negotiation in front of Python servers as people write them (test/fixtures/python):
 * FastMCP 4 and the Python SDK wrap every `str` a tool returns as `structuredContent:
 * {"result": <the text>}`. Through the proxy such a result is shaped like any other, its text
 * and `structuredContent` agree afterwards, and `structuredContent` satisfies the outputSchema
 * the client was shown: the official TypeScript SDK client (which checks it) and FastMCP's own
 * client (whose `.data` reads it) both accept it. Real `git` output keeps what matters: a diff
 * byte for byte, `git status` its indentation, a log becomes records or stays text.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protocolCheck } from '../helpers/protocol-schema.js';
import { commandLine, fixtureArgv, PYTHON, ROOT, startHttpFixture, startProxy, stopAll, type Running } from '../helpers/processes.js';

const EXTENSION = 'io.modelcontextprotocol/content-negotiation';
const FASTMCP = 'python/fastmcp_server.py';
const SDK = 'python/sdk_server.py';

interface ToolResult {
  content: Array<{ type: string; text: string }>;
  structuredContent?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

const texts = (r: ToolResult) => r.content.filter((b) => b.type === 'text').map((b) => b.text);
const onlyText = (r: ToolResult) => {
  expect(texts(r)).toHaveLength(1);
  return texts(r)[0];
};

/** A v1 SDK client through the proxy, declaring `features`; it lists the tools, so it checks every structuredContent against the schema it was shown. */
async function sdkClient(
  proxy: Running,
  features: string[],
): Promise<{ client: Client; schemas: Map<string, unknown>; call(name: string, args?: Record<string, unknown>): Promise<ToolResult> }> {
  const capabilities = features.length ? { extensions: { [EXTENSION]: { version: '1.0', features } } } : {};
  const client = new Client({ name: 'python-negotiation', version: '1.0.0' }, { capabilities });
  await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
  const schemas = new Map((await client.listTools()).tools.map((t) => [t.name, t.outputSchema as unknown]));
  return {
    client,
    schemas,
    async call(name, args = {}) {
      const result = (await client.callTool({ name, arguments: args })) as unknown as ToolResult;
      const check = protocolCheck('CallToolResult', result);
      if (check !== true) throw new Error(`CallToolResult: ${check}`);
      return result;
    },
  };
}

interface PythonCall {
  name: string;
  texts: string[];
  structuredContent: Record<string, unknown> | null;
  data: unknown;
  errors: string[];
}

/**
 * FastMCP's own clients through the proxy (test/fixtures/python/negotiating_client.py): one per
 * entry, each declaring its features and making its calls, one after another in one Python
 * process (its imports cost seconds); what each saw, in order.
 */
async function fastmcpClients(
  url: string,
  clients: Array<{ features: string[]; calls: string[] }>,
): Promise<Array<{ outputSchemas: Record<string, unknown>; calls: PythonCall[] }>> {
  const args = clients.flatMap((c) => ['--features', c.features.join(','), ...c.calls]);
  const { stdout } = await promisify(execFile)(PYTHON, [`${ROOT}test/fixtures/python/negotiating_client.py`, url, ...args], {
    timeout: 90_000,
  });
  const lines = stdout.trim().split('\n');
  expect(lines).toHaveLength(clients.length);
  return lines.map((line) => JSON.parse(line));
}

/** Proxies in front of the fixture: its stdio server, and its HTTP server (legacy era). */
const UPSTREAMS = [
  ['stdio', async (fixture: string) => startProxy(['--upstream', commandLine(fixtureArgv(fixture))])],
  ['http', async (fixture: string) => startProxy(['--upstream', (await startHttpFixture(fixture)).url, '--upstream-era', 'legacy'])],
] as const;

describe.each(UPSTREAMS)('FastMCP 4 behind the proxy (%s upstream)', (_transport, start) => {
  let proxy: Running;
  const clients: Client[] = [];
  /** A client declaring `features`, shared by the tests that declare the same (over stdio each session starts a Python server). */
  const sessions = new Map<string, ReturnType<typeof sdkClient>>();
  const open = (features: string[]) => {
    const key = features.join(',');
    if (!sessions.has(key))
      sessions.set(
        key,
        sdkClient(proxy, features).then((c) => (clients.push(c.client), c)),
      );
    return sessions.get(key)!;
  };
  beforeAll(async () => {
    proxy = await start(FASTMCP);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('format=json: a tool returning JSON text gives its data as an object, under the schema the client was shown', async () => {
    const agent = await open(['agent', 'format=json']);
    expect(agent.schemas.get('weather_json')).toMatchObject({
      properties: { result: { type: ['string', 'object'] } },
      required: ['result'],
    });
    const result = await agent.call('weather_json', { city: 'Bern' });
    const data = { city: 'Bern', temperature_c: 8, humidity_percent: 72, conditions: 'cloudy' };
    expect(result.structuredContent).toEqual({ result: data });
    expect(JSON.parse(onlyText(result))).toEqual(data);
  });

  it("verbosity=compact trims the guide's example and tip, and structuredContent says what the text says", async () => {
    const plain = await open([]);
    const compact = await open(['verbosity=compact']);
    const before = onlyText(await plain.call('guide'));
    const result = await compact.call('guide');
    const text = onlyText(result);
    expect(before).toMatch(/^Example: /m);
    expect(text).not.toMatch(/^(Example|Tip): /m);
    expect(text).toContain('Run `deploy --env staging` to deploy the current branch to staging. It takes about 4 minutes.');
    expect(text).toContain('Note: production deploys need approval from two reviewers.');
    expect(result.structuredContent).toEqual({ result: text });
  });

  it('format=markdown and compact tables change the text, and structuredContent changes with it', async () => {
    const human = await open(['human', 'format=markdown']);
    const rendered = await human.call('weather_json', { city: 'Bern' });
    expect(onlyText(rendered)).toContain('- **City**: Bern');
    expect(rendered.structuredContent).toEqual({ result: onlyText(rendered) });
    const compact = await open(['verbosity=compact']);
    const table = await compact.call('cities_json');
    expect(onlyText(table)).toMatch(/^\[3\]\{name,elevation_m\}:/);
    expect(table.structuredContent).toEqual({ result: onlyText(table) });
  });

  it('format=json keeps a diff byte for byte and reads no data out of it', async () => {
    const plain = await open([]);
    const agent = await open(['format=json']);
    const before = await plain.call('git_diff_unstaged');
    expect(onlyText(before)).toContain('-{"status":"draft"}\n+{"status":"final"}');
    expect(await agent.call('git_diff_unstaged')).toEqual(before);
  });

  it('format=text leaves git status as git wrote it, indentation and all', async () => {
    const plain = await open([]);
    const text = await open(['format=text']);
    const before = await plain.call('git_status');
    expect(onlyText(before)).toMatch(/\n\tmodified: {3}status\.json\n/);
    expect(await text.call('git_status')).toEqual(before);
  });

  it('format=json reads a git log as an array of records, with no numbered keys and no quote marks', async () => {
    const agent = await open(['format=json']);
    const result = await agent.call('git_log');
    const data = (result.structuredContent as { result: Record<string, unknown> }).result;
    expect(Object.keys(data)).toEqual(['commit_history']);
    const commits = data.commit_history as Array<Record<string, unknown>>;
    expect(commits.map((c) => c.message)).toEqual(['Add "notes"', 'First draft']);
    for (const c of commits) {
      expect(Object.keys(c)).toEqual(['commit', 'author', 'date', 'message']);
      expect(c.commit).toMatch(/^[0-9a-f]{40}$/);
      expect(c.author).toBe('Test');
    }
    expect(JSON.parse(texts(result)[0])).toEqual(data); // the data holds every fact of the log: its copy is the text
  });

  it("FastMCP's own client gets the data, the trimmed guide and the rendering as .data, with no parsing errors", async () => {
    const [json, compact, markdown] = await fastmcpClients(proxy.url, [
      { features: ['format=json'], calls: ['weather_json={"city": "Bern"}', 'guide', 'git_log'] },
      { features: ['verbosity=compact'], calls: ['guide', 'cities_json'] },
      { features: ['format=markdown'], calls: ['weather_json={"city": "Bern"}'] },
    ]);
    const [weather, guide, log] = json.calls;
    expect(weather.data).toEqual({ city: 'Bern', temperature_c: 8, humidity_percent: 72, conditions: 'cloudy' });
    expect(guide.data).toEqual(JSON.parse(guide.texts[0])); // its Key: value lines, with the guide itself after the data's copy
    expect(guide.texts[1]).toMatch(/^Getting started/);
    expect((log.data as { commit_history: unknown[] }).commit_history).toHaveLength(2);
    for (const call of compact.calls) expect(call.data).toBe(call.texts[0]);
    expect(compact.calls[0].texts[0]).not.toContain('Tip:');
    expect(markdown.calls[0].data).toBe(markdown.calls[0].texts[0]);
    expect(markdown.calls[0].data).toContain('- **City**: Bern');
    expect([...json.calls, ...compact.calls, ...markdown.calls].flatMap((c) => c.errors)).toEqual([]);
  }, 120_000); // three Python clients in one process, a few seconds of imports before the first connects
});

describe.each(UPSTREAMS)('the Python SDK behind the proxy (%s upstream)', (_transport, start) => {
  let proxy: Running;
  const clients: Client[] = [];
  beforeAll(async () => {
    proxy = await start(SDK);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('format=json gives the data under the schema shown; format=text and compact keep text and structuredContent agreeing', async () => {
    const agent = await sdkClient(proxy, ['format=json']);
    const text = await sdkClient(proxy, ['format=text', 'verbosity=compact']);
    clients.push(agent.client, text.client);
    expect(agent.schemas.get('weather_json')).toMatchObject({ properties: { result: { type: ['string', 'object'] } } });
    expect((await agent.call('weather_json', { city: 'Bern' })).structuredContent).toEqual({
      result: { city: 'Bern', temperature_c: 8, humidity_percent: 72, conditions: 'cloudy' },
    });
    const echoed = await text.call('echo', { text: '## Forecast\n\nIt is **8°C** in `Bern`.\n\n## Tips\n\nTake a coat.' });
    expect(onlyText(echoed)).toBe('Forecast\n\nIt is 8°C in Bern.');
    expect(echoed.structuredContent).toEqual({ result: onlyText(echoed) });
  });
});

describe('server-git as it answers, text without structuredContent (test/fixtures/python/git_server.py)', () => {
  let proxy: Running;
  const clients: Client[] = [];
  beforeAll(async () => {
    // Each session starts its own server, which makes its own repository: with fixed dates, the same commits.
    const dates = ['GIT_AUTHOR_DATE', 'GIT_COMMITTER_DATE'].flatMap((name) => ['--env', `${name}=2026-03-04T12:00:00Z`]);
    proxy = await startProxy(['--upstream', commandLine(fixtureArgv('python/git_server.py')), ...dates]);
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('keeps diffs byte for byte and reads no data out of them, for every format and verbosity', async () => {
    const plain = await sdkClient(proxy, []);
    clients.push(plain.client);
    const before = {
      diff: await plain.call('git_diff_unstaged'),
      show: await plain.call('git_show'),
      status: await plain.call('git_status'),
    };
    expect(before.diff.structuredContent).toBeUndefined();
    expect(onlyText(before.diff)).toContain('-{"status":"draft"}\n+{"status":"final"}');
    expect(onlyText(before.show)).toContain('+{"status":"draft"}');
    for (const features of [
      ['format=json'],
      ['format=text'],
      ['format=markdown'],
      ['verbosity=compact'],
      ['agent', 'format=json', 'verbosity=compact'],
    ]) {
      const c = await sdkClient(proxy, features);
      clients.push(c.client);
      expect(await c.call('git_diff_unstaged'), features.join()).toEqual(before.diff);
      expect(await c.call('git_show'), features.join()).toEqual(before.show);
      if (features.length === 1 && features[0] !== 'format=json')
        expect(onlyText(await c.call('git_status')), features.join()).toMatch(/^\tmodified: {3}status\.json$/m);
    }
    // Six sessions, six Python servers each making a repository: seconds each on a loaded machine.
  }, 120_000);

  it('format=json reads the log as an array of records beside the text', async () => {
    const agent = await sdkClient(proxy, ['format=json']);
    clients.push(agent.client);
    const result = await agent.call('git_log');
    const commits = (result.structuredContent as { commit_history: Array<Record<string, unknown>> }).commit_history;
    expect(commits.map((c) => [Object.keys(c), c.message])).toEqual([
      [['commit', 'author', 'date', 'message'], 'Add "notes"'],
      [['commit', 'author', 'date', 'message'], 'First draft'],
    ]);
  });
});
