/**
 * Records the catalogs of real MCP servers (`npm run record:catalog`) into catalog.json: every
 * page of `tools/list` (and `prompts/list` and `resources/templates/list` where a server has
 * them), asked over stdio with the official SDK client. The servers: server-everything,
 * -filesystem and -memory from node_modules, and the GitHub, GitLab and Slack reference servers
 * and the Notion server, installed at the pinned versions below into a scratch folder outside the
 * checkout (`npm install --prefix`), never into package.json. They get dummy credentials and
 * loopback API addresses so they start; only the lists are asked, and where `unshare` can give a
 * process a network namespace of its own (Linux) they run in one, so nothing they do can leave
 * the machine.
 *
 * Beside each catalog, arguments that a tool accepts, for the compact-catalog test to validate
 * against the compacted schemas: calls the local servers were really given and answered without
 * an error, calls to the third-party servers as their READMEs describe them (written, not sent),
 * and two generated from each tool's own schema (its required properties only, and every
 * property), each checked against that schema with ajv before it is written.
 *
 * Paths of the scratch folder are written as /workspace, so the recording does not change from
 * run to run.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const OUT = fileURLToPath(new URL('catalog.json', import.meta.url));

/** Third-party servers from the npm registry, pinned so a new run lists the same tools. */
const REGISTRY_SERVERS = {
  '@modelcontextprotocol/server-github': '2025.4.8',
  '@modelcontextprotocol/server-gitlab': '2025.4.25',
  '@modelcontextprotocol/server-slack': '2025.4.25',
  '@notionhq/notion-mcp-server': '2.5.2',
};

/** Where an API base can be set, it points at a closed loopback port. */
const NOWHERE = 'http://127.0.0.1:9';

export interface CatalogServer {
  server: string;
  package: string;
  version: string;
  /** How it was started: node, then these arguments (`<pkg>` is the package's folder). */
  args: string[];
  env: Record<string, string>;
  /** Pages `tools/list` answered in. */
  pages: number;
  tools: Array<Record<string, unknown>>;
  prompts?: Array<Record<string, unknown>>;
  resourceTemplates?: Array<Record<string, unknown>>;
}

export interface CatalogCall {
  server: string;
  tool: string;
  /**
   * recorded: the server was called with it and answered without an error; written: a call such
   * as the server's README describes, written by hand and not sent (the server would reach its
   * API); generated-*: from the tool's schema.
   */
  source: 'recorded' | 'written' | 'generated-required' | 'generated-all';
  arguments: Record<string, unknown>;
}

export interface Catalog {
  servers: CatalogServer[];
  calls: CatalogCall[];
}

type Call = [tool: string, args: Record<string, unknown>];

interface Spec {
  server: string;
  package: string;
  folder: string;
  args: string[];
  env: Record<string, string>;
  /** Made, and refused by the server if invalid. */
  calls?: (dir: string) => Call[];
  /** Only checked against the tool's schema. */
  written?: Call[];
}

const version = (folder: string) => (JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8')) as { version: string }).version;

/** Every page of a list. */
async function pages<T>(list: (cursor?: string) => Promise<{ nextCursor?: string } & Record<string, unknown>>, key: string) {
  const items: T[] = [];
  let cursor: string | undefined;
  let n = 0;
  do {
    const page = await list(cursor);
    items.push(...((page[key] as T[] | undefined) ?? []));
    cursor = page.nextCursor;
    n++;
  } while (cursor !== undefined && n < 100);
  return { items, pages: n };
}

/** Whether `unshare -rn` can run a process without any network here. */
function canIsolate(): boolean {
  return spawnSync('unshare', ['-rn', 'true'], { stdio: 'ignore' }).status === 0;
}

async function list(spec: Spec, isolate: boolean, dir: string): Promise<{ server: CatalogServer; calls: CatalogCall[] }> {
  const args = spec.args.map((a) => a.replace('<pkg>', spec.folder));
  const command = isolate ? 'unshare' : process.execPath;
  const argv = isolate ? ['-rn', process.execPath, ...args] : args;
  const client = new Client({ name: 'catalog-recorder', version: '1.0.0' });
  await client.connect(
    new StdioClientTransport({ command, args: argv, env: { PATH: process.env.PATH ?? '', ...spec.env }, stderr: 'ignore' }),
  );
  try {
    const caps = client.getServerCapabilities() ?? {};
    const tools = await pages<Record<string, unknown>>((cursor) => client.listTools({ cursor }), 'tools');
    const server: CatalogServer = {
      server: spec.server,
      package: spec.package,
      version: version(spec.folder),
      args: spec.args,
      env: spec.env,
      pages: tools.pages,
      tools: tools.items,
    };
    if (caps.prompts) server.prompts = (await pages<Record<string, unknown>>((c) => client.listPrompts({ cursor: c }), 'prompts')).items;
    if (caps.resources) {
      const templates = await pages<Record<string, unknown>>((c) => client.listResourceTemplates({ cursor: c }), 'resourceTemplates');
      if (templates.items.length > 0) server.resourceTemplates = templates.items;
    }
    const calls: CatalogCall[] = [];
    for (const [tool, a] of spec.calls?.(dir) ?? []) {
      const result = await client.callTool({ name: tool, arguments: a });
      if (result.isError) throw new Error(`${spec.server} ${tool}: the server refused the recorded call: ${JSON.stringify(result)}`);
      calls.push({ server: spec.server, tool, source: 'recorded', arguments: a });
    }
    return { server, calls };
  } finally {
    await client.close();
  }
}

type Schema = Record<string, unknown>;

/**
 * A value the schema accepts: the first enum value or the const, the first branch of
 * anyOf/oneOf, `$ref`s followed into the root's `$defs`/`definitions`, objects with their
 * required properties (or all of them), strings of the format or length asked. Undefined when
 * it cannot tell (the caller then checks the result with ajv anyway).
 */
function sample(schema: unknown, root: Schema, all: boolean, depth = 0): unknown {
  if (depth > 16 || typeof schema !== 'object' || schema === null) return undefined;
  const s = schema as Schema;
  if (typeof s.$ref === 'string') {
    const m = /^#\/(\$defs|definitions)\/(.+)$/.exec(s.$ref);
    const defs = m ? (root[m[1]] as Schema | undefined) : undefined;
    return defs ? sample(defs[m![2]], root, all, depth + 1) : undefined;
  }
  if ('const' in s) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if ('default' in s && !all) return s.default;
  for (const k of ['anyOf', 'oneOf'])
    if (Array.isArray(s[k])) {
      const branch = (s[k] as Schema[]).find((b) => b.type !== 'null') ?? (s[k] as Schema[])[0];
      return sample(branch, root, all, depth + 1);
    }
  if (Array.isArray(s.allOf)) return Object.assign({}, ...(s.allOf as Schema[]).map((b) => sample(b, root, all, depth + 1) ?? {}));
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : (s.type as string | undefined);
  switch (type ?? (s.properties ? 'object' : undefined)) {
    case 'string':
      return sampleString(s);
    case 'integer':
    case 'number': {
      const min = typeof s.minimum === 'number' ? s.minimum : typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + 1 : 1;
      return type === 'integer' ? Math.ceil(min) : min;
    }
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array': {
      const n = Math.max(typeof s.minItems === 'number' ? s.minItems : 0, all ? 1 : 0);
      const item = sample(s.items, root, all, depth + 1);
      return item === undefined ? [] : Array.from({ length: n }, () => item);
    }
    case 'object': {
      const props = (s.properties ?? {}) as Record<string, unknown>;
      const required = new Set(Array.isArray(s.required) ? (s.required as string[]) : []);
      const out: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(props)) {
        if (!all && !required.has(k)) continue;
        const value = sample(v, root, all, depth + 1);
        if (value !== undefined) out[k] = value;
      }
      return out;
    }
    default:
      return undefined;
  }
}

function sampleString(s: Schema): string {
  const byFormat: Record<string, string> = {
    'date-time': '2026-03-04T12:00:00Z',
    date: '2026-03-04',
    time: '12:00:00Z',
    email: 'ada@example.org',
    uri: 'https://example.org/a',
    'uri-reference': 'https://example.org/a',
    uuid: '59833787-2cf8-4833-8e4b-8a9a1f3fbf5b',
  };
  let text = (typeof s.format === 'string' && byFormat[s.format]) || 'example';
  if (typeof s.minLength === 'number') text = text.padEnd(s.minLength, 'x');
  if (typeof s.maxLength === 'number') text = text.slice(0, s.maxLength);
  return text;
}

/** The written calls, each checked against its tool's schema. */
function written(server: CatalogServer, calls: Call[], ajv: Ajv): CatalogCall[] {
  return calls.map(([tool, args]) => {
    const schema = server.tools.find((t) => t.name === tool)?.inputSchema as Schema | undefined;
    if (!schema) throw new Error(`${server.server}: no tool ${tool}`);
    if (!ajv.validate(schema, args)) throw new Error(`${server.server} ${tool}: the written call is invalid: ${ajv.errorsText()}`);
    return { server: server.server, tool, source: 'written', arguments: args };
  });
}

function generated(server: CatalogServer, ajv: Ajv): CatalogCall[] {
  const calls: CatalogCall[] = [];
  for (const tool of server.tools) {
    const schema = tool.inputSchema as Schema;
    const check = ajv.compile(schema);
    for (const source of ['generated-required', 'generated-all'] as const) {
      const args = sample(schema, schema, source === 'generated-all');
      if (args === undefined || !check(args)) {
        if (source === 'generated-required')
          throw new Error(`${server.server} ${String(tool.name)}: no valid arguments generated: ${ajv.errorsText(check.errors)}`);
        continue; // A pattern or a combination the sampler does not know: the required-only call stands.
      }
      calls.push({ server: server.server, tool: String(tool.name), source, arguments: args as Record<string, unknown> });
    }
  }
  return calls;
}

async function record(): Promise<void> {
  const scratch = realpathSync(mkdtempSync(join(tmpdir(), 'catalog-')));
  try {
    const registry = join(scratch, 'servers');
    mkdirSync(registry);
    const packages = Object.entries(REGISTRY_SERVERS).map(([name, v]) => `${name}@${v}`);
    execFileSync('npm', ['install', '--prefix', registry, '--no-audit', '--no-fund', '--ignore-scripts', ...packages], {
      stdio: 'inherit',
    });
    const dir = join(scratch, 'workspace');
    mkdirSync(dir);
    writeFileSync(join(dir, 'notes.md'), '# Notes\n\nMeeting on 2026-03-04.\n');
    const local = (name: string) => join(ROOT, 'node_modules/@modelcontextprotocol', name);
    const fromRegistry = (name: string) => join(registry, 'node_modules', name);
    const specs: Spec[] = [
      {
        server: 'server-everything',
        package: '@modelcontextprotocol/server-everything',
        folder: local('server-everything'),
        args: ['<pkg>/dist/index.js', 'stdio'],
        env: {},
        calls: () => [
          ['echo', { message: 'Hello from 127.0.0.1, 42 times' }],
          ['get-sum', { a: 17, b: 25.5 }],
          ['get-structured-content', { location: 'Chicago' }],
          ['get-annotated-message', { messageType: 'success', includeImage: true }],
          ['get-resource-links', { count: 3 }],
          ['get-resource-reference', { resourceType: 'Text', resourceId: 2 }],
        ],
      },
      {
        server: 'server-filesystem',
        package: '@modelcontextprotocol/server-filesystem',
        folder: local('server-filesystem'),
        args: ['<pkg>/dist/index.js', '/workspace'],
        env: {},
        calls: (d) => [
          ['read_text_file', { path: join(d, 'notes.md'), head: 2 }],
          ['read_multiple_files', { paths: [join(d, 'notes.md')] }],
          ['list_directory', { path: d }],
          ['list_directory_with_sizes', { path: d, sortBy: 'size' }],
          ['directory_tree', { path: d, excludePatterns: ['*.log'] }],
          ['search_files', { path: d, pattern: '**/*.md' }],
          ['get_file_info', { path: join(d, 'notes.md') }],
          ['edit_file', { path: join(d, 'notes.md'), edits: [{ oldText: 'Meeting', newText: 'Call' }], dryRun: true }],
          ['list_allowed_directories', {}],
        ],
      },
      {
        server: 'server-memory',
        package: '@modelcontextprotocol/server-memory',
        folder: local('server-memory'),
        args: ['<pkg>/dist/index.js'],
        env: { MEMORY_FILE_PATH: '/workspace/memory.jsonl' },
        calls: () => [
          ['create_entities', { entities: [{ name: 'Ada Lovelace', entityType: 'person', observations: ['Born 10 December 1815'] }] }],
          ['create_relations', { relations: [{ from: 'Ada Lovelace', to: 'Ada Lovelace', relationType: 'is' }] }],
          ['add_observations', { observations: [{ entityName: 'Ada Lovelace', contents: ['Wrote the first program'] }] }],
          ['search_nodes', { query: 'Ada' }],
          ['open_nodes', { names: ['Ada Lovelace'] }],
          ['read_graph', {}],
        ],
      },
      {
        server: 'server-github',
        package: '@modelcontextprotocol/server-github',
        folder: fromRegistry('@modelcontextprotocol/server-github'),
        args: ['<pkg>/dist/index.js'],
        env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'dummy' },
        written: [
          ['search_repositories', { query: 'modelcontextprotocol language:typescript', perPage: 10 }],
          ['search_code', { q: 'listTools repo:modelcontextprotocol/servers', order: 'desc', per_page: 20 }],
          ['create_issue', { owner: 'octocat', repo: 'hello-world', title: 'Crash on start', body: 'Steps: run it.', labels: ['bug'] }],
          ['list_commits', { owner: 'octocat', repo: 'hello-world', sha: 'main' }],
          [
            'create_pull_request_review',
            {
              owner: 'octocat',
              repo: 'hello-world',
              pull_number: 42,
              body: 'Looks good, one nit.',
              event: 'COMMENT',
              comments: [{ path: 'src/index.ts', line: 12, body: 'Rename this.' }],
            },
          ],
        ],
      },
      {
        server: 'server-gitlab',
        package: '@modelcontextprotocol/server-gitlab',
        folder: fromRegistry('@modelcontextprotocol/server-gitlab'),
        args: ['<pkg>/dist/index.js'],
        env: { GITLAB_PERSONAL_ACCESS_TOKEN: 'dummy', GITLAB_API_URL: `${NOWHERE}/api/v4` },
        written: [
          ['search_repositories', { search: 'mcp server', per_page: 5 }],
          [
            'create_merge_request',
            { project_id: 'group/project', title: 'Fix the crash', source_branch: 'fix', target_branch: 'main', draft: true },
          ],
        ],
      },
      {
        server: 'server-slack',
        package: '@modelcontextprotocol/server-slack',
        folder: fromRegistry('@modelcontextprotocol/server-slack'),
        args: ['<pkg>/dist/index.js'],
        env: { SLACK_BOT_TOKEN: 'xoxb-dummy', SLACK_TEAM_ID: 'T00000000' },
        written: [
          ['slack_post_message', { channel_id: 'C0123456789', text: 'Deploy finished: v2.1 is live.' }],
          ['slack_get_channel_history', { channel_id: 'C0123456789', limit: 20 }],
        ],
      },
      {
        server: 'notion',
        package: '@notionhq/notion-mcp-server',
        folder: fromRegistry('@notionhq/notion-mcp-server'),
        args: ['<pkg>/bin/cli.mjs'],
        env: { NOTION_TOKEN: 'ntn_dummy', BASE_URL: NOWHERE },
        written: [
          ['API-post-search', { query: 'Getting started', filter: { value: 'page', property: 'object' }, page_size: 10 }],
          [
            'API-query-data-source',
            {
              data_source_id: '59833787-2cf8-4833-8e4b-8a9a1f3fbf5b',
              sorts: [{ property: 'Due', direction: 'ascending' }],
              filter: { property: 'Done', checkbox: { equals: false } },
            },
          ],
          [
            'API-patch-block-children',
            {
              block_id: '59833787-2cf8-4833-8e4b-8a9a1f3fbf5b',
              children: [{ type: 'paragraph', paragraph: { rich_text: [{ type: 'text', text: { content: 'Hello MCP' } }] } }],
            },
          ],
          [
            'API-post-page',
            {
              parent: { page_id: '59833787-2cf8-4833-8e4b-8a9a1f3fbf5b' },
              properties: { title: [{ text: { content: 'Meeting notes' } }] },
            },
          ],
        ],
      },
    ];
    const isolate = canIsolate();
    if (!isolate) console.warn('unshare -rn is not available: the servers run with loopback API addresses only');
    const ajv = new Ajv({ strict: false, validateFormats: false });
    const catalog: Catalog = { servers: [], calls: [] };
    for (const spec of specs) {
      spec.env = Object.fromEntries(Object.entries(spec.env).map(([k, v]) => [k, v.replace('/workspace', dir)]));
      spec.args = spec.args.map((a) => a.replace('/workspace', dir));
      const { server, calls } = await list(spec, isolate, dir);
      catalog.servers.push(server);
      catalog.calls.push(...calls, ...written(server, spec.written ?? [], ajv), ...generated(server, ajv));
      console.log(`${spec.server} ${server.version}: ${server.tools.length} tools in ${server.pages} page(s), ${calls.length} calls made`);
    }
    const text = JSON.stringify(catalog, null, 1).split(dir).join('/workspace').split(ROOT).join('');
    writeFileSync(OUT, text + '\n');
    console.log(`${catalog.servers.reduce((n, s) => n + s.tools.length, 0)} tools, ${catalog.calls.length} valid calls`);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** The recorded catalog, for tests and the token bench. */
export function loadCatalog(): Catalog {
  return JSON.parse(readFileSync(OUT, 'utf8')) as Catalog;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === realpathSync(process.argv[1])) await record();
