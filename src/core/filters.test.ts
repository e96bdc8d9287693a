import pino from 'pino';
import { describe, expect, it, vi } from 'vitest';
import { z } from 'zod';
import { serverVariantsSchema } from '../extensions/server-variants/variants.js';
import { VariantCatalog } from '../extensions/server-variants/scope.js';
import { NOTHING_ASSIGNED } from '../mcp/features.js';
import { compileRules, ruleSchema } from '../rules/compile.js';
import type { Transformer } from '../transformers/contract.js';
import { builtinChain } from './filters.js';
import { Profiles } from './profiles.js';
import type { UpstreamCall } from '../upstream/call.js';
import { ToolCatalog } from '../upstream/tool-catalog.js';

const log = pino({ level: 'silent' });
const NEGOTIATION = { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: 1, features: ['agent'] } } };

/** Writes the output schema the pipeline handed it into the result. */
const schemaReporter: Transformer<Record<string, never>> = {
  name: 'report-schema',
  description: 'test',
  options: z.object({}).default({}),
  create: () => (result, ctx) => ({ ...result, seenSchema: ctx.outputSchema === undefined ? 'unknown' : ctx.outputSchema }),
};
const rules = compileRules(
  [ruleSchema.parse({ when: { method: 'tools/call' }, apply: [{ 'report-schema': {} }] })],
  new Map([['report-schema', schemaReporter]]),
);

describe('the filter chain across a reload', () => {
  it("keeps the upstream's tool catalog: a chain built again sees the tools listed under the old one", async () => {
    const tools = new ToolCatalog();
    const build = () => builtinChain({ rules, variants: new VariantCatalog(serverVariantsSchema.parse({})), tools });
    const schema = { type: 'object', properties: { n: { type: 'number' } } };
    const request = { era: 'modern' as const, capabilities: NEGOTIATION, assigned: NOTHING_ASSIGNED, log };

    build(); // the chain before the reload
    tools.learn({ tools: [{ name: 'count', inputSchema: { type: 'object' }, outputSchema: schema }] });
    const after = build().forRequest(request, {});
    expect(await after.shape('tools/call', 'count', { content: [] })).toMatchObject({ seenSchema: schema });
    // A legacy session knows only what its own upstream session listed.
    const session = build().forSession(log);
    session.onInitialize({ capabilities: NEGOTIATION });
    expect(await session.shape('tools/call', 'count', { content: [] })).toMatchObject({ seenSchema: 'unknown' });
  });
});

/** An upstream whose answers `ask` makes up. */
function upstreamOf(ask: (method: string) => Promise<Record<string, unknown>>): UpstreamCall {
  return { call: async (req) => ({ frame: { msg: { jsonrpc: '2.0', id: req.id, result: await ask(req.method) } }, status: 200 }) };
}

describe("learning a legacy session's tools", () => {
  const schema = { type: 'object', properties: { n: { type: 'number' } } };
  const session = (ask: (method: string) => Promise<Record<string, unknown>>) => {
    const bound = builtinChain({ rules, variants: new VariantCatalog(serverVariantsSchema.parse({})) }).forSession(log);
    bound.onInitialize({ capabilities: NEGOTIATION });
    bound.bindUpstream(upstreamOf(ask), 5000);
    return bound;
  };

  it('lists once, before the first shaped tool result, and shapes with what it learnt', async () => {
    const asked: string[] = [];
    const bound = session(
      async (method) => (
        asked.push(method),
        {
          tools: [
            { name: 'count', inputSchema: {}, outputSchema: schema },
            { name: 'plain', inputSchema: {} },
          ],
        }
      ),
    );
    expect(await bound.shape('tools/call', 'count', { content: [] })).toMatchObject({ seenSchema: schema });
    expect(await bound.shape('tools/call', 'plain', { content: [] })).toMatchObject({ seenSchema: null });
    expect(await bound.shape('tools/call', 'unlisted', { content: [] })).toMatchObject({ seenSchema: 'unknown' });
    expect(asked).toEqual(['tools/list']);
  });

  it("learns from its client's listing, keeps it to itself, and forgets it when its list changes", async () => {
    const tools = new ToolCatalog();
    const chain = builtinChain({ rules, variants: new VariantCatalog(serverVariantsSchema.parse({})), tools });
    const open = (ask: (method: string) => Promise<Record<string, unknown>>) => {
      const bound = chain.forSession(log);
      bound.onInitialize({ capabilities: NEGOTIATION });
      bound.bindUpstream(upstreamOf(ask), 5000);
      return bound;
    };
    const asked: string[] = [];
    const first = open(async (method) => (asked.push(`first ${method}`), { tools: [{ name: 'count', inputSchema: {} }] }));
    const second = open(async (method) => (asked.push(`second ${method}`), { tools: [] }));
    // What the exchange hands it of every listing its client gets (shaped or not).
    first.learn('tools/list', { tools: [{ name: 'count', inputSchema: {}, outputSchema: schema }] });
    expect(await first.shape('tools/call', 'count', { content: [] })).toMatchObject({ seenSchema: schema });
    expect(await second.shape('tools/call', 'count', { content: [] })).toMatchObject({ seenSchema: 'unknown' });
    expect(asked).toEqual(['second tools/list']);
    first.onNotification({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    // Forgotten: listed again, and the tool no longer declares a schema.
    expect(await first.shape('tools/call', 'count', { content: [] })).toMatchObject({ seenSchema: null });
    expect(asked).toEqual(['second tools/list', 'first tools/list']);
  });

  it('holds a result at most 5 s for a listing that hangs, and only once', async () => {
    vi.useFakeTimers();
    try {
      let asked = 0;
      const bound = session(() => (asked++, new Promise(() => undefined)));
      const first = bound.shape('tools/call', 'count', { content: [] });
      await vi.advanceTimersByTimeAsync(5000);
      expect(await first).toMatchObject({ seenSchema: 'unknown' });
      expect(await bound.shape('tools/call', 'other', { content: [] })).toMatchObject({ seenSchema: 'unknown' });
      expect(asked).toBe(1);
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('tags and a variant assigned to a session', () => {
  const variants = () =>
    new VariantCatalog(
      serverVariantsSchema.parse({
        variants: [
          { id: 'full', description: 'all' },
          { id: 'lean', description: 'some', tools: { include: ['a'] } },
        ],
      }),
    );
  const chain = () =>
    builtinChain({
      rules,
      variants: variants(),
      profiles: new Profiles({ agents: { features: ['format=json'], variant: 'lean', principals: ['token:ci'], clientNames: [] } }),
    });

  it('are assigned at initialize (header and profile), kept in the snapshot, and restored by another replica', async () => {
    const bound = chain().forSession(log, { principal: 'token:ci', featuresHeader: 'agent' });
    bound.onInitialize({ capabilities: {}, clientInfo: { name: 'host' } });
    expect(bound.tagsInEffect()).toEqual({
      profile: { name: 'agents', why: 'principal token:ci' },
      tags: ['agent', 'format=json'],
      overridden: [],
    });
    const snapshot = JSON.parse(JSON.stringify(bound.snapshot()));
    expect(snapshot.assigned).toEqual({
      tags: ['agent', 'format=json'],
      variant: 'lean',
      profile: { name: 'agents', why: 'principal token:ci' },
    });
    const restored = chain().restore(snapshot, log);
    expect(restored.tagsInEffect()?.tags).toEqual(['agent', 'format=json']);
    // The profile's variant is the session's when a request names none.
    expect(restored.onRequest({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })).toEqual({ scope: 'lean' });
    expect(restored.onRequest({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'b' } })).toMatchObject({
      error: { message: 'Unknown tool: b' },
    });
    expect(
      restored.onRequest({
        jsonrpc: '2.0',
        id: 3,
        method: 'tools/list',
        params: { _meta: { 'io.modelcontextprotocol/server-variant': 'full' } },
      }),
    ).toMatchObject({ scope: 'full' });
  });

  it('a session token from elsewhere is input: malformed assigned tags are dropped', () => {
    const restored = chain().restore({ client: {}, assigned: { tags: ['agent', 'Bad Tag', 7] as never, variant: 3 as never } }, log);
    expect(restored.tagsInEffect()?.tags).toEqual(['agent']);
    expect(restored.onRequest({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} })).toBeUndefined();
  });
});
