/**
 * The reference servers as users run them, through the proxy with its default rules:
 * - server-filesystem: a file read is the file, byte for byte, whatever format or verbosity the
 *   client prefers, in both eras; a directory tree (a presentation of data) is still reshaped;
 * - server-memory: read_graph declares an outputSchema, so it keeps structuredContent for every
 *   client, also one that never listed the tools (a raw HTTP client);
 * - a tag no rule acts on is not announced as honoured.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callTool, modern, rawPost, rawSession } from '../helpers/raw.js';
import { commandLine, fixtureArgv, ROOT, startProxy, stopAll, type Running } from '../helpers/processes.js';

const EXTENSION = 'io.modelcontextprotocol/content-negotiation';
const server = (name: string) => `${ROOT}node_modules/@modelcontextprotocol/${name}/dist/index.js`;
const negotiating = (features: string[]) => ({ extensions: { [EXTENSION]: { version: '1.0', features } } });

const FILES: Record<string, string> = {
  'notes.md':
    '# Notes\n\nMeeting on **4 March** with [Ada](mailto:ada@example.org).\n\n- budget: 12,500 CHF\n- room: 4.12\n\n```sh\nnpm test\n```\n',
  'cities.json': '[\n    { "name": "Bern",   "elevation_m": 540 },\n    { "name": "Lugano", "elevation_m": 273 }\n]\n',
  'table.csv': 'name,elevation_m\nBern,540\nLugano,273\n',
  'config.yaml': '# settings\nserver:\n  port: 8080   # *not* markdown\n  hosts: [a, b]\n',
};
const CLIENTS = [
  ['format=text'],
  ['format=markdown'],
  ['verbosity=compact'],
  ['format=json'],
  ['agent', 'format=json', 'verbosity=compact'],
  ['human', 'format=markdown', 'verbosity=compact'],
];

type ToolResult = { content: Array<{ type: string; text: string }>; structuredContent?: Record<string, unknown> };

describe('real servers through the default rules', () => {
  afterAll(stopAll);

  describe('server-filesystem', () => {
    let proxy: Running;
    let dir: string;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'real-fs-'));
      for (const [name, text] of Object.entries(FILES)) writeFileSync(join(dir, name), text);
      proxy = await startProxy(['--upstream', commandLine([process.execPath, server('server-filesystem'), dir])]);
    });

    it('reads every file byte for byte for format=text, markdown, json and compact clients (legacy sessions, no tools/list)', async () => {
      let id = 1;
      for (const features of CLIENTS) {
        const session = await rawSession(proxy.url, negotiating(features));
        for (const [name, text] of Object.entries(FILES)) {
          for (const tool of ['read_text_file', 'read_file']) {
            const reply = await rawPost(proxy.url, callTool(id++, tool, { path: join(dir, name) }), session);
            const result = reply.messages[0].result as ToolResult;
            expect(result.content, `${tool} ${name} for ${features.join(',')}`).toEqual([{ type: 'text', text }]);
            expect(result.structuredContent).toEqual({ content: text });
          }
        }
        const both = (
          await rawPost(
            proxy.url,
            callTool(id++, 'read_multiple_files', { paths: [join(dir, 'notes.md'), join(dir, 'cities.json')] }),
            session,
          )
        ).messages[0].result as ToolResult;
        expect(both.content[0].text).toContain(FILES['notes.md']);
        expect(both.content[0].text).toContain(FILES['cities.json']);
      }
    });

    it("reads files byte for byte behind an endpoint of several servers too, under the server's prefix", async () => {
      const several = await startProxy([
        '--upstream',
        `files=${commandLine([process.execPath, server('server-filesystem'), dir])}`,
        '--upstream',
        `memory=${commandLine([process.execPath, server('server-memory')])}`,
      ]);
      let id = 1;
      for (const features of CLIENTS) {
        const session = await rawSession(several.url, negotiating(features));
        const reply = await rawPost(several.url, callTool(id++, 'files_read_text_file', { path: join(dir, 'cities.json') }), session);
        const result = reply.messages[0].result as ToolResult;
        expect(result.content, features.join(',')).toEqual([{ type: 'text', text: FILES['cities.json'] }]);
      }
    });

    it('reads files byte for byte for modern clients too', async () => {
      for (const [i, features] of CLIENTS.entries()) {
        const { body, headers } = modern(
          i + 1,
          'tools/call',
          { name: 'read_text_file', arguments: { path: join(dir, 'cities.json') } },
          negotiating(features),
        );
        const result = (await rawPost(proxy.url, body, headers)).messages[0].result as ToolResult;
        expect(result.content).toEqual([{ type: 'text', text: FILES['cities.json'] }]);
      }
    });

    it('still reshapes what is a presentation of data: a directory tree becomes markdown', async () => {
      const plain = await rawSession(proxy.url);
      const human = await rawSession(proxy.url, negotiating(['human', 'format=markdown']));
      const tree = (s: Record<string, string>, id: number) =>
        rawPost(proxy.url, callTool(id, 'directory_tree', { path: dir }), s).then((r) => r.messages[0].result as ToolResult);
      const [raw, shaped] = await Promise.all([tree(plain, 1), tree(human, 2)]);
      expect(() => JSON.parse(raw.content[0].text)).not.toThrow();
      expect(shaped.content[0].text).not.toBe(raw.content[0].text);
      expect(shaped.content[0].text).toContain('notes.md');
      expect(shaped.structuredContent).toEqual(raw.structuredContent); // the tool declares an outputSchema
    });
  });

  it('server-memory: read_graph keeps structuredContent for markdown, text and compact clients that never listed the tools', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'real-memory-'));
    const proxy = await startProxy([
      '--upstream',
      commandLine([process.execPath, server('server-memory')]),
      '--env',
      `MEMORY_FILE_PATH=${join(dir, 'memory.jsonl')}`,
    ]);
    const plain = await rawSession(proxy.url);
    const people = ['Ada Lovelace', 'Charles Babbage'];
    await rawPost(
      proxy.url,
      callTool(1, 'create_entities', {
        entities: people.map((name) => ({ name, entityType: 'person', observations: [`${name} lived in London`] })),
      }),
      plain,
    );
    await rawPost(
      proxy.url,
      callTool(2, 'create_relations', { relations: [{ from: people[0], to: people[1], relationType: 'corresponded with' }] }),
      plain,
    );
    const graph = ((await rawPost(proxy.url, callTool(3, 'read_graph'), plain)).messages[0].result as ToolResult).structuredContent;
    expect(graph).toMatchObject({ entities: [{ name: 'Ada Lovelace' }, { name: 'Charles Babbage' }] });
    for (const features of [['format=markdown'], ['human', 'format=markdown'], ['format=text'], ['verbosity=compact']]) {
      const session = await rawSession(proxy.url, negotiating(features));
      const result = (await rawPost(proxy.url, callTool(4, 'read_graph'), session)).messages[0].result as ToolResult;
      expect(result.structuredContent, features.join(',')).toEqual(graph);
    }
    const { body, headers } = modern(5, 'tools/call', { name: 'read_graph', arguments: {} }, negotiating(['human', 'format=markdown']));
    expect(((await rawPost(proxy.url, body, headers)).messages[0].result as ToolResult).structuredContent).toEqual(graph);
  });

  it('learns which tools declare no outputSchema before shaping, when the client never listed them (both eras)', async () => {
    const proxy = await startProxy(['--upstream', commandLine(fixtureArgv('faulty-server'))]);
    const human = await rawSession(proxy.url, negotiating(['human', 'format=markdown']));
    const weather = (await rawPost(proxy.url, callTool(1, 'weather'), human)).messages[0].result as ToolResult;
    expect(weather.content[0].text).toContain('Bern');
    expect(weather.structuredContent).toBeUndefined(); // listed by the proxy: the tool declares none, and the markdown showed the data
    const { body, headers } = modern(2, 'tools/call', { name: 'weather', arguments: {} }, negotiating(['human', 'format=markdown']));
    expect(((await rawPost(proxy.url, body, headers)).messages[0].result as ToolResult).structuredContent).toBeUndefined();
    const plain = await rawSession(proxy.url);
    expect(((await rawPost(proxy.url, callTool(3, 'weather'), plain)).messages[0].result as ToolResult).structuredContent).toEqual({
      city: 'Bern',
      temp_c: 8,
    });
  });

  it('announces only the tags the rules act on: format=yaml is not "in effect"', async () => {
    const proxy = await startProxy([]);
    const init = async (features: string[]) => {
      const reply = await rawPost(proxy.url, {
        jsonrpc: '2.0',
        id: 0,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: negotiating(features), clientInfo: { name: 'tags', version: '1' } },
      });
      return reply.messages[0].result as { instructions?: string; capabilities: { extensions?: Record<string, unknown> } };
    };
    const yaml = await init(['format=yaml']);
    expect(yaml.capabilities.extensions?.[EXTENSION]).toEqual({});
    expect(yaml.instructions ?? '').not.toContain('format=yaml');
    const mixed = await init(['agent', 'format=yaml', 'verbosity=compact']);
    expect(mixed.instructions).toContain('Content negotiation: agent, verbosity=compact in effect for this session.');
    expect(proxy.stderr()).toContain('feature tags no rule acts on');
    expect((await init(['format=json'])).instructions).toContain('format=json in effect');
  });
});
