/**
 * Records what real MCP servers answer (`npm run record`): server-everything, server-filesystem,
 * server-memory and server-sequential-thinking, run from node_modules over stdio with the
 * official SDK client, the built-in demo server (prose like the content-negotiation SEP's), and
 * the Python fixtures (test/fixtures/python: a FastMCP 4 server, a Python SDK server, and
 * server-git's tools as it answers them, over a real git repository; mcp-server-git itself is
 * not installable here). The transformer and corpus tests replay these results ("no fact lost"
 * on real output) without starting the servers. Paths of the scratch folder are written as
 * /workspace, and the git commits get fixed dates, so the recordings do not change from run to
 * run. The Python ones need .venv (sh test/python/setup.sh).
 */
import { cpSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUT = fileURLToPath(new URL('.', import.meta.url));
const pkg = (name: string) => `${ROOT}node_modules/@modelcontextprotocol/${name}`;
const PYTHON = `${ROOT}.venv/bin/python`;

export interface Recording {
  server: string;
  method: string;
  /** Tool or prompt name, or resource URI. */
  name?: string;
  result: Record<string, unknown>;
}

/** Sample files the filesystem server reads: third-party docs, JSON, code, and a note whose title is "Notes". */
function workspace(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'recordings-')));
  mkdirSync(join(dir, 'docs'));
  cpSync(join(pkg('server-filesystem'), 'README.md'), join(dir, 'docs', 'filesystem-README.md'));
  cpSync(join(pkg('server-memory'), 'README.md'), join(dir, 'docs', 'memory-README.md'));
  cpSync(join(pkg('server-filesystem'), 'package.json'), join(dir, 'package.json'));
  cpSync(`${ROOT}config/default.yaml`, join(dir, 'default.yaml'));
  cpSync(`${ROOT}src/transformers/audience/index.ts`, join(dir, 'audience.ts'));
  writeFileSync(
    join(dir, 'docs', 'notes.md'),
    '# Notes\n\nMeeting on 2026-03-04 with Ada Lovelace (ada@example.org) about the Q2 budget of 12,500 CHF.\n\n- Ship v2.1 by 15 April\n- Review https://example.org/plan\n\n## Tips\n\nBook room 4.12 early.\n',
  );
  writeFileSync(
    join(dir, 'cities.json'),
    JSON.stringify(
      [
        { name: 'Bern', elevation_m: 540 },
        { name: 'Lugano', elevation_m: 273 },
      ],
      null,
      2,
    ),
  );
  return dir;
}

async function session(
  server: string,
  argv: string[],
  env: Record<string, string>,
  calls: (c: Client) => Promise<Array<Omit<Recording, 'server'>>>,
  command = process.execPath,
): Promise<Recording[]> {
  const client = new Client({ name: 'recorder', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command, args: argv, env: { PATH: process.env.PATH ?? '', ...env }, stderr: 'ignore' }));
  try {
    const tools = await client.listTools();
    return [{ server, method: 'tools/list', result: tools }, ...(await calls(client))].map((r) => ({ server, ...r }));
  } finally {
    await client.close();
  }
}

const call = async (c: Client, name: string, args: Record<string, unknown> = {}) => ({
  method: 'tools/call',
  name,
  result: (await c.callTool({ name, arguments: args })) as Record<string, unknown>,
});
const read = async (c: Client, uri: string) => ({
  method: 'resources/read',
  name: uri,
  result: (await c.readResource({ uri })) as Record<string, unknown>,
});

async function record(): Promise<void> {
  const dir = workspace();
  const memoryFile = join(dir, 'memory.jsonl');
  try {
    const everything = await session('server-everything', [`${pkg('server-everything')}/dist/index.js`, 'stdio'], {}, async (c) => {
      const resources = (await c.listResources()).resources;
      const prompts = await c.listPrompts();
      return [
        { method: 'resources/list', result: { resources } },
        { method: 'prompts/list', result: prompts },
        await call(c, 'echo', { message: 'Hello from 127.0.0.1, 42 times' }),
        await call(c, 'get-sum', { a: 17, b: 25.5 }),
        await call(c, 'get-structured-content', { location: 'Chicago' }),
        await call(c, 'get-annotated-message', { messageType: 'success', includeImage: true }),
        await call(c, 'get-resource-links', { count: 3 }),
        await call(c, 'get-resource-reference', { resourceType: 'Text', resourceId: 2 }),
        ...(await Promise.all(resources.filter((r) => r.mimeType === 'text/markdown').map((r) => read(c, r.uri)))),
        {
          method: 'prompts/get',
          name: 'args-prompt',
          result: await c.getPrompt({ name: 'args-prompt', arguments: { city: 'Bern', state: 'BE' } }),
        },
        {
          method: 'prompts/get',
          name: 'resource-prompt',
          result: await c.getPrompt({ name: 'resource-prompt', arguments: { resourceType: 'Text', resourceId: '3' } }),
        },
      ];
    });
    const filesystem = await session('server-filesystem', [`${pkg('server-filesystem')}/dist/index.js`, dir], {}, async (c) => [
      await call(c, 'read_text_file', { path: join(dir, 'docs', 'notes.md') }),
      await call(c, 'read_text_file', { path: join(dir, 'docs', 'filesystem-README.md') }),
      await call(c, 'read_text_file', { path: join(dir, 'package.json') }),
      await call(c, 'read_text_file', { path: join(dir, 'cities.json') }),
      await call(c, 'read_text_file', { path: join(dir, 'default.yaml') }),
      await call(c, 'read_text_file', { path: join(dir, 'audience.ts') }),
      await call(c, 'read_multiple_files', { paths: [join(dir, 'cities.json'), join(dir, 'docs', 'notes.md')] }),
      await call(c, 'list_directory', { path: dir }),
      await call(c, 'list_directory_with_sizes', { path: join(dir, 'docs') }),
      await call(c, 'directory_tree', { path: dir }),
      await call(c, 'search_files', { path: dir, pattern: '**/*.md' }),
      await call(c, 'list_allowed_directories'),
    ]);
    const memory = await session(
      'server-memory',
      [`${pkg('server-memory')}/dist/index.js`],
      { MEMORY_FILE_PATH: memoryFile },
      async (c) => [
        await call(c, 'create_entities', {
          entities: [
            {
              name: 'Ada Lovelace',
              entityType: 'person',
              observations: ['Born 10 December 1815', 'Wrote the first program for the Analytical Engine'],
            },
            { name: 'Analytical Engine', entityType: 'machine', observations: ['Designed by Charles Babbage in 1837'] },
          ],
        }),
        await call(c, 'create_relations', { relations: [{ from: 'Ada Lovelace', to: 'Analytical Engine', relationType: 'programmed' }] }),
        await call(c, 'add_observations', {
          observations: [{ entityName: 'Ada Lovelace', contents: ['Corresponded with Mary Somerville'] }],
        }),
        await call(c, 'search_nodes', { query: 'Engine' }),
        await call(c, 'open_nodes', { names: ['Ada Lovelace'] }),
        await call(c, 'read_graph'),
        await read(c, 'memory://knowledge-graph'),
      ],
    );
    const thinking = await session(
      'server-sequential-thinking',
      [`${pkg('server-sequential-thinking')}/dist/index.js`],
      { DISABLE_THOUGHT_LOGGING: 'true' },
      async (c) => [
        await call(c, 'sequentialthinking', {
          thought: 'The budget is 12,500 CHF; 3 of 5 items are booked.',
          nextThoughtNeeded: true,
          thoughtNumber: 1,
          totalThoughts: 3,
        }),
      ],
    );
    const demo = await session('demo', ['--import', 'tsx', `${ROOT}src/demo/main.ts`], {}, async (c) => [
      ...(await Promise.all(['Bern', 'Lugano', 'Zermatt'].map((city) => call(c, 'get_weather', { city })))),
      await call(c, 'plan_journey', { from: 'Bern', to: 'Lugano', date: '2026-05-01' }),
      await call(c, 'convert_units', { value: 12, from: 'km', to: 'mi' }),
      await read(c, 'demo://cities'),
      await read(c, 'demo://guide'),
      await read(c, 'demo://weather/Bern'),
      {
        method: 'prompts/get',
        name: 'trip_briefing',
        result: await c.getPrompt({ name: 'trip_briefing', arguments: { destination: 'Zurich' } }),
      },
    ]);
    const python = (fixture: string) => [`${ROOT}test/fixtures/python/${fixture}`];
    const pythonEnv = { PYTHONDONTWRITEBYTECODE: '1', GIT_AUTHOR_DATE: '2026-03-04T12:00:00Z', GIT_COMMITTER_DATE: '2026-03-04T12:00:00Z' };
    const echoed =
      '## Forecast for Bern\n\nIt is **8°C** with `72%` humidity; see [the map](https://example.org/map).\n\n- Wind: 12 km/h\n- UV index: 3\n\n## Tips\n\nTake a coat.';
    const fastmcp = await session(
      'fastmcp',
      python('fastmcp_server.py'),
      pythonEnv,
      async (c) => [
        await call(c, 'weather_json', { city: 'Bern' }),
        await call(c, 'echo', { text: echoed }),
        await call(c, 'guide'),
        await call(c, 'cities_json'),
        await call(c, 'git_diff_unstaged'),
        await call(c, 'git_log'),
        await call(c, 'git_status'),
      ],
      PYTHON,
    );
    const pythonSdk = await session(
      'python-sdk',
      python('sdk_server.py'),
      pythonEnv,
      async (c) => [await call(c, 'weather_json', { city: 'Zurich' }), await call(c, 'echo', { text: echoed })],
      PYTHON,
    );
    const git = await session(
      'git',
      python('git_server.py'),
      pythonEnv,
      async (c) => [
        await call(c, 'git_diff_unstaged'),
        await call(c, 'git_show', { revision: 'HEAD~1' }),
        await call(c, 'git_show', { revision: 'HEAD' }),
        await call(c, 'git_log'),
        await call(c, 'git_status'),
      ],
      PYTHON,
    );
    for (const [name, recordings] of Object.entries({
      everything,
      filesystem,
      memory,
      thinking,
      demo,
      fastmcp,
      'python-sdk': pythonSdk,
      git,
    })) {
      const text = JSON.stringify(recordings, null, 1).split(dir).join('/workspace');
      writeFileSync(join(OUT, `${name}.json`), text + '\n');
      console.log(`${name}: ${recordings.length} results`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The recorded results of every server, for tests. */
export function loadRecordings(): Recording[] {
  return ['everything', 'filesystem', 'memory', 'thinking', 'demo', 'fastmcp', 'python-sdk', 'git'].flatMap(
    (name) => JSON.parse(readFileSync(join(OUT, `${name}.json`), 'utf8')) as Recording[],
  );
}

if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) await record();
