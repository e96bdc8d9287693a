/**
 * The proxy is transparent: against @modelcontextprotocol/server-everything, every tool,
 * resource, template, prompt and completion gives the same result through the proxy as
 * directly, on all four transport combinations, including sampling, elicitation and roots
 * round trips and progress.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDirect, connectViaProxy, type Connected, type Front, type UpstreamRef } from '../helpers/clients.js';
import { EVERYTHING_STDIO, commandLine, startEverythingHttp, stopAll } from '../helpers/processes.js';

/** Arguments for each server-everything tool (no network: gzip gets a data: URI). */
const TOOL_ARGS: Record<string, Record<string, unknown>> = {
  echo: { message: 'hello through the proxy' },
  'get-annotated-message': { messageType: 'success', includeImage: true },
  'get-resource-links': { count: 4 },
  'get-resource-reference': { resourceType: 'Text', resourceId: 2 },
  'get-structured-content': { location: 'Chicago' },
  'get-sum': { a: 2, b: 40 },
  'gzip-file-as-resource': { name: 'hello.gz', data: 'data:text/plain;base64,aGVsbG8gd29ybGQ=', outputType: 'resource' },
  'trigger-long-running-operation': { duration: 1, steps: 4 },
  'trigger-sampling-request': { prompt: 'What is a proxy?', maxTokens: 20 },
  'simulate-research-query': { topic: 'proxies' },
};
/** Tools whose output legitimately differs between two server processes. */
const NONDETERMINISTIC = new Set(['get-env']);

/** Masks what two server processes legitimately disagree on: session ids and clock times. */
function normalize(value: unknown, key = ''): unknown {
  if (typeof value === 'string') {
    const text = key === 'blob' ? Buffer.from(value, 'base64').toString('latin1') : value;
    return text
      .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, '<uuid>')
      .replace(/\d{1,2}:\d{2}:\d{2}\s?[AP]M/g, '<time>');
  }
  if (Array.isArray(value)) return value.map((v) => normalize(v));
  if (value && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, normalize(v, k)]));
  return value;
}

async function settle<T>(p: Promise<T>): Promise<T | { error: unknown }> {
  try {
    return await p;
  } catch (err) {
    const e = err as { code?: number; message?: string };
    return { error: { code: e.code, message: e.message } };
  }
}

/** Runs every feature of the upstream once and returns what came back, by label. */
async function exercise(conn: Connected): Promise<Record<string, unknown>> {
  const c: Client = conn.client;
  const out: Record<string, unknown> = {
    serverCapabilities: c.getServerCapabilities(),
    serverVersion: c.getServerVersion(),
    instructions: c.getInstructions(),
  };
  const tools = (await c.listTools()).tools;
  out.tools = tools;
  for (const tool of tools) {
    const events: string[] = [];
    const result = await settle(
      c.callTool({ name: tool.name, arguments: TOOL_ARGS[tool.name] ?? {} }, undefined, {
        onprogress: (p) => events.push(`progress ${p.progress}/${p.total}`),
        timeout: 20_000,
      }),
    );
    events.push('result');
    out[`tool:${tool.name}`] = NONDETERMINISTIC.has(tool.name) ? typeof result : result;
    // The server may send its last progress after the result (clients drop it then), so the
    // count can differ by one between runs; what must match is that progress arrived at all.
    out[`progress:${tool.name}`] = events.length > 1;
  }
  const resources = (await c.listResources()).resources;
  out.resources = resources;
  for (const r of resources) out[`read:${r.uri}`] = await settle(c.readResource({ uri: r.uri }));
  const templates = (await c.listResourceTemplates()).resourceTemplates;
  out.templates = templates;
  for (const t of templates) {
    const uri = t.uriTemplate.replace('{resourceId}', '3');
    out[`read:${uri}`] = await settle(c.readResource({ uri }));
  }
  out['read:missing'] = await settle(c.readResource({ uri: 'demo://does/not/exist' }));
  const prompts = (await c.listPrompts()).prompts;
  out.prompts = prompts;
  for (const p of prompts) {
    const args = Object.fromEntries(
      (p.arguments ?? []).map((a) => [a.name, a.name === 'resourceId' ? '1' : a.name === 'resourceType' ? 'Text' : 'Engineering']),
    );
    out[`prompt:${p.name}`] = await settle(c.getPrompt({ name: p.name, arguments: args }));
  }
  out.completion = await settle(
    c.complete({ ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } }),
  );
  out.unknownTool = await settle(c.callTool({ name: 'no-such-tool', arguments: {} }));
  out.ping = await c.ping();
  out.setLevel = await settle(c.setLoggingLevel('warning'));
  out.received = conn.received;
  return normalize(out) as Record<string, unknown>;
}

const COMBOS: Array<{ front: Front; upstream: 'stdio' | 'http' }> = [
  { front: 'http', upstream: 'stdio' },
  { front: 'http', upstream: 'http' },
  { front: 'stdio', upstream: 'stdio' },
  { front: 'stdio', upstream: 'http' },
];

describe.each(COMBOS)('server-everything, $front front ← $upstream upstream', ({ front, upstream }) => {
  let direct: Connected;
  let proxied: Connected;

  beforeAll(async () => {
    let ref: UpstreamRef = { argv: EVERYTHING_STDIO };
    let arg = commandLine(EVERYTHING_STDIO);
    if (upstream === 'http') {
      // One server each: server-everything lists resources made in one session to all of them.
      const [a, b] = await Promise.all([startEverythingHttp(), startEverythingHttp()]);
      ref = { url: a.url };
      arg = b.url;
    }
    [direct, proxied] = await Promise.all([connectDirect(ref), connectViaProxy(front, arg)]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([direct?.close(), proxied?.close()]);
    await stopAll();
  });

  it('answers every feature exactly as the server does directly', async () => {
    const [want, got] = await Promise.all([exercise(direct), exercise(proxied)]);
    expect(got).toEqual(want);
    // The round trips really happened, and progress came before the result.
    expect(Object.keys(got.received as object).sort()).toEqual(['elicitation/create', 'roots/list', 'sampling/createMessage']);
    expect(got['progress:trigger-long-running-operation']).toBe(true);
  }, 90_000);
});
