/**
 * Modern clients in front of a legacy server: the official v2 client, pinned to 2026-07-28 and
 * auto-negotiating, reaches @modelcontextprotocol/server-everything through the proxy and gets
 * the same lists, calls, reads, prompts and completions as a legacy client reaching the server
 * directly; sampling and elicitation arrive as input_required rounds the client fulfils; a
 * legacy client uses the same proxy at the same time.
 */
import type { Client as LegacyClient } from '@modelcontextprotocol/sdk/client/index.js';
import type { Client } from '@modelcontextprotocol/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDirect, connectViaProxy, type Connected, type Front } from '../helpers/clients.js';
import { connectModern, type ModernConnected } from '../helpers/modern-clients.js';
import { EVERYTHING_STDIO, commandLine, startEverythingHttp, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { modern, rawPost } from '../helpers/raw.js';

const TOOL_ARGS: Record<string, Record<string, unknown>> = {
  echo: { message: 'hello, modern client' },
  'get-annotated-message': { messageType: 'success', includeImage: true },
  'get-resource-links': { count: 3 },
  'get-resource-reference': { resourceType: 'Text', resourceId: 2 },
  'get-structured-content': { location: 'Chicago' },
  'get-sum': { a: 2, b: 40 },
  'trigger-long-running-operation': { duration: 1, steps: 2 },
  'trigger-sampling-request': { prompt: 'What is a proxy?', maxTokens: 20 },
  'trigger-elicitation-request': {},
};
const SERVER_INFO = 'io.modelcontextprotocol/serverInfo';
// get-roots-list reports the roots server-everything asked for right after initialize, which
// belongs to no call: the proxy answers that one itself (no roots) for modern clients, who have
// no session. Roots asked during a call are bridged (see modern-http.test.ts).

/** Drops what only the modern era adds (serverInfo in _meta, cache hints); errors keep their code only. */
function normalize(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(normalize);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) {
      if (k === 'ttlMs' || k === 'cacheScope') continue;
      if (k === '_meta' && v && typeof v === 'object') {
        const { [SERVER_INFO]: _s, ...rest } = v as Record<string, unknown>;
        if (Object.keys(rest).length) out[k] = normalize(rest);
        continue;
      }
      out[k] = normalize(v);
    }
    return out;
  }
  if (typeof value === 'string') {
    return value
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
      .replace(/\d{1,2}:\d{2}:\d{2}\s?[AP]M/g, '<time>');
  }
  return value;
}

/** Every error `settle` saw, with its message: compared by code only, told in full when a comparison fails. */
const errorsSeen: string[] = [];

async function settle<T>(p: Promise<T>): Promise<T | { error: unknown }> {
  try {
    return await p;
  } catch (err) {
    const e = err as { code?: number; message?: string };
    errorsSeen.push(`${e.code}: ${e.message}`);
    return { error: { code: e.code === -32002 ? -32602 : e.code } };
  }
}

/** The same features, asked through either client (both have these methods). */
async function exercise(
  c:
    | Pick<
        Client,
        'listTools' | 'callTool' | 'listResources' | 'readResource' | 'listResourceTemplates' | 'listPrompts' | 'getPrompt' | 'complete'
      >
    | LegacyClient,
): Promise<Record<string, unknown>> {
  const client = c as LegacyClient;
  const out: Record<string, unknown> = {};
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  for (const [name, args] of Object.entries(TOOL_ARGS)) out[`tool:${name}`] = await settle(client.callTool({ name, arguments: args }));
  const resources = (await client.listResources()).resources;
  out.resources = resources;
  for (const r of resources.slice(0, 4)) out[`read:${r.uri}`] = await settle(client.readResource({ uri: r.uri }));
  out.templates = (await client.listResourceTemplates()).resourceTemplates;
  out['read:missing'] = await settle(client.readResource({ uri: 'demo://does/not/exist' }));
  const prompts = (await client.listPrompts()).prompts;
  out.prompts = prompts;
  out['prompt:simple-prompt'] = await settle(client.getPrompt({ name: 'simple-prompt', arguments: {} }));
  out.completion = await settle(
    client.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } }),
  );
  out.unknownTool = await settle(client.callTool({ name: 'no-such-tool', arguments: {} }));
  return normalize(out) as Record<string, unknown>;
}

const COMBOS: Array<{ front: Front; upstream: 'stdio' | 'http'; mode: 'pin' | 'auto' }> = [
  { front: 'http', upstream: 'stdio', mode: 'pin' },
  { front: 'http', upstream: 'http', mode: 'auto' },
  { front: 'stdio', upstream: 'stdio', mode: 'auto' },
  { front: 'stdio', upstream: 'http', mode: 'pin' },
];

describe.each(COMBOS)('v2 client ($mode), $front front ← $upstream upstream (server-everything)', ({ front, upstream, mode }) => {
  let direct: Connected;
  let modern: ModernConnected;
  let legacy: Connected | undefined;
  let proxy: Running | undefined;

  beforeAll(async () => {
    let upstreamArg = commandLine(EVERYTHING_STDIO);
    let directRef: { argv: string[] } | { url: string } = { argv: EVERYTHING_STDIO };
    if (upstream === 'http') {
      const [a, b] = await Promise.all([startEverythingHttp(), startEverythingHttp()]);
      directRef = { url: a.url };
      upstreamArg = b.url;
    }
    // Over HTTP, server-everything asks a new session for roots 350 ms after its initialize and, with no GET
    // stream open yet, sends that request on the next request's stream: a call in flight on a pooled session the
    // proxy just opened takes it for its own input (a race the proxy does not settle yet). Here neither client
    // declares roots, so both see the same tools; the other combinations keep them.
    const roots = !(front === 'http' && upstream === 'http');
    direct = await connectDirect(directRef, roots);
    if (front === 'http') {
      proxy = await startProxy(['--upstream', upstreamArg]);
      modern = await connectModern('http', { url: proxy.url }, { mode, roots });
      legacy = await connectViaProxy('http', upstreamArg, [], {}, roots);
    } else {
      modern = await connectModern('stdio', { upstreamArg }, { mode });
    }
  }, 60_000);

  afterAll(async () => {
    await Promise.all([direct?.close(), modern?.close(), legacy?.close()]);
    await proxy?.stop();
    await stopAll();
  });

  it('negotiates 2026-07-28 and answers every feature as the server does directly, with input through input_required', async () => {
    expect(modern.client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const [want, got] = await Promise.all([exercise(direct.client), exercise(modern.client)]);
    expect(got, `errors seen: ${errorsSeen.join(' | ')}`).toEqual(want);
    expect(Object.keys(modern.received)).toEqual(expect.arrayContaining(['elicitation/create', 'sampling/createMessage']));
    expect(JSON.stringify(got['tool:trigger-sampling-request'])).toMatch(/sampled: .*What is a proxy\?/);
  }, 90_000);

  it.runIf(front === 'http')(
    'serves a legacy client on the same endpoint at the same time',
    async () => {
      const [viaLegacy, viaModern] = await Promise.all([exercise(legacy!.client), exercise(modern.client)]);
      expect(viaModern, `errors seen: ${errorsSeen.join(' | ')}`).toEqual(viaLegacy);
    },
    90_000,
  );
});

describe('a modern tools/call carrying the legacy task parameter (server-everything, which offers tasks)', () => {
  afterAll(stopAll);

  it('is served as an ordinary call (SEP-2663: the parameter is ignored)', async () => {
    const proxy = await startProxy(['--upstream', commandLine(EVERYTHING_STDIO)]);
    const m = modern(1, 'tools/call', { name: 'get-sum', arguments: { a: 2, b: 40 }, task: { ttl: 60_000 } });
    const reply = await rawPost(proxy.url, m.body, m.headers);
    expect(reply.status).toBe(200);
    expect(reply.messages[0].result).toMatchObject({
      resultType: 'complete',
      content: [{ type: 'text', text: expect.stringContaining('42') }],
    });
  });
});
