import { describe, expect, it } from 'vitest';
import type { JsonRpcRequest } from '../jsonrpc/message.js';
import type { McpResult } from '../transformers/contract.js';
import { MAX_BYTES, MAX_TOOLS, ToolCatalog, type ToolAsker, type ToolLister } from './tool-catalog.js';

const call = (name: unknown): JsonRpcRequest => ({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name } });
const A: ToolAsker = { principal: 'token:a' };
const B: ToolAsker = { principal: 'token:b' };

const regionTool = {
  name: 'forecast',
  inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } },
  outputSchema: { type: 'object', properties: { t: { type: 'number' } } },
  execution: { taskSupport: 'optional' },
};

/** An upstream whose tools/list answers `pages` (by cursor) and records who listed. */
function upstream(pages: McpResult[] | (() => McpResult[])) {
  const listedBy: string[] = [];
  let released = 0;
  const lister = async (who: ToolAsker): Promise<ToolLister> => {
    listedBy.push(who.principal ?? '');
    const now = typeof pages === 'function' ? pages() : pages;
    return {
      page: async (cursor) => now[cursor === undefined ? 0 : Number(cursor)],
      release: () => void released++,
    };
  };
  return { lister, listedBy, released: () => released };
}

describe('the tool catalog', () => {
  it('learns each tool once listed: its header parameters, task support and output schema', async () => {
    const up = upstream([{ tools: [regionTool, { name: 'plain', inputSchema: { type: 'object' } }] }]);
    const catalog = new ToolCatalog({ lister: up.lister });
    expect(await catalog.paramHeaders(call('forecast'), A)).toEqual(new Map([['mcp-param-region', ['region']]]));
    expect(await catalog.taskSupport(call('forecast'), A)).toBe('optional');
    expect(catalog.view().known('forecast')?.outputSchema).toEqual(regionTool.outputSchema);
    expect(catalog.view().known('plain')).toEqual({ outputSchema: null });
    expect(await catalog.paramHeaders(call('plain'), A)).toBeUndefined();
    expect(await catalog.paramHeaders({ ...call('forecast'), method: 'tools/list' }, A)).toBeUndefined();
    expect(up.listedBy).toEqual(['token:a']); // listed once
    expect(up.released()).toBe(1);
  });

  it('reads every page, and one listing serves the calls that wait for it', async () => {
    const up = upstream([{ tools: [{ name: 'one', inputSchema: {} }], nextCursor: '1' }, { tools: [regionTool] }]);
    const catalog = new ToolCatalog({ lister: up.lister });
    const [one, two] = await Promise.all([catalog.paramHeaders(call('forecast'), A), catalog.paramHeaders(call('one'), A)]);
    expect(one?.get('mcp-param-region')).toEqual(['region']);
    expect(two).toBeUndefined();
    expect(up.listedBy).toEqual(['token:a']);
  });

  it("shares one listing among principals, and keeps each legacy session's own listings to itself", async () => {
    const up = upstream([{ tools: [regionTool] }]);
    const catalog = new ToolCatalog({ lister: up.lister });
    expect(await catalog.taskSupport(call('forecast'), A)).toBe('optional');
    expect(await catalog.taskSupport(call('forecast'), B)).toBe('optional');
    expect(up.listedBy).toEqual(['token:a']);
    const session = catalog.view({});
    expect(session.known('forecast')).toBeUndefined();
    session.learn({ tools: [{ ...regionTool, execution: { taskSupport: 'required' } }] });
    expect(session.known('forecast')?.taskSupport).toBe('required');
    expect(catalog.view().known('forecast')?.taskSupport).toBe('optional');
    expect(catalog.view({}).known('forecast')).toBeUndefined(); // another session
    session.changed();
    expect(session.known('forecast')).toBeUndefined();
    expect(catalog.view().known('forecast')).toBeDefined();
    session.learn({ tools: [regionTool] });
    catalog.changed(); // a change the pool or a modern upstream announced: the shared view forgets
    expect(catalog.view().known('forecast')).toBeUndefined();
    expect(session.known('forecast')).toBeDefined();
  });

  it("learns a client's listing without forgetting the pages it did not ask for; the proxy's own first page starts afresh", () => {
    const catalog = new ToolCatalog();
    catalog.learn({
      tools: [
        { name: 'a', inputSchema: {} },
        { name: 'b', inputSchema: {} },
      ],
    });
    catalog.learn({ tools: [{ name: 'b', inputSchema: {}, outputSchema: { type: 'object' } }] });
    expect(catalog.view().known('a')).toEqual({ outputSchema: null });
    expect(catalog.view().known('b')).toEqual({ outputSchema: { type: 'object' } });
    catalog.learn({ tools: [{ name: 'c', inputSchema: {} }] }, true);
    expect(catalog.view().known('a')).toBeUndefined();
    expect(catalog.view().known('c')).toBeDefined();
    expect(catalog.size.tools).toBe(1);
  });

  it('forgets on a list change and lists again; a listing the change overtook does not count', async () => {
    let tools = [regionTool];
    let overtake: (() => void) | undefined;
    let listings = 0;
    const catalog = new ToolCatalog({
      lister: async () => ({
        page: async () => (listings++, overtake?.(), { tools }),
        release: () => undefined,
      }),
    });
    expect(await catalog.taskSupport(call('forecast'), A)).toBe('optional');
    catalog.changed();
    expect(catalog.view().known('forecast')).toBeUndefined();
    tools = [{ ...regionTool, execution: { taskSupport: 'forbidden' } }];
    overtake = () => catalog.changed();
    expect(await catalog.taskSupport(call('forecast'), A)).toBe('forbidden');
    overtake = undefined;
    expect(await catalog.taskSupport(call('forecast'), A)).toBe('forbidden');
    expect(listings).toBe(3); // the overtaken listing is done again
    catalog.view({}).changed(); // a session's change leaves the shared view
    expect(catalog.view().known('forecast')).toBeDefined();
  });

  it('refuses the call when the listing fails, and lists again on the next one', async () => {
    let fail = true;
    const catalog = new ToolCatalog({
      lister: async () => ({
        page: async () => {
          if (fail) throw new Error('upstream gone');
          return { tools: [regionTool] };
        },
        release: () => undefined,
      }),
    });
    await expect(catalog.paramHeaders(call('forecast'), A)).rejects.toThrow('upstream gone');
    fail = false;
    expect(await catalog.paramHeaders(call('forecast'), A)).toBeDefined();
  });

  it('stops after 50 pages of a listing that never ends', async () => {
    let pages = 0;
    const catalog = new ToolCatalog({
      lister: async () => ({
        page: async () => ({ tools: [{ name: `t${pages}`, inputSchema: {} }], nextCursor: String(++pages) }),
        release: () => undefined,
      }),
    });
    expect(await catalog.paramHeaders(call('t0'), A)).toBeUndefined();
    expect(pages).toBe(50);
    expect(catalog.size.tools).toBe(50);
  });
});

describe('the tool catalog, given a hostile tools/list', () => {
  it('skips entries that are not tools, and takes no tools that are not an array', () => {
    const catalog = new ToolCatalog();
    catalog.learn({ tools: { name: 'x' } });
    catalog.learn({ tools: 'forecast' });
    catalog.learn(undefined);
    expect(catalog.size.tools).toBe(0);
    catalog.learn({ tools: [null, 7, 'forecast', [], { name: 7 }, { name: { a: 1 } }, { inputSchema: {} }, regionTool] });
    expect(catalog.size.tools).toBe(1);
    expect(catalog.view().known('forecast')?.taskSupport).toBe('optional');
    expect(catalog.view().known('7')).toBeUndefined();
  });

  it('keeps the last of duplicate names, counted once', () => {
    const catalog = new ToolCatalog();
    catalog.learn({ tools: [regionTool, { name: 'forecast', inputSchema: {} }, { name: 'forecast', inputSchema: {}, execution: 5 }] });
    expect(catalog.view().known('forecast')).toEqual({ outputSchema: null });
    expect(catalog.size.tools).toBe(1);
  });

  it("does not keep a tool whose name alone is over the byte bound, nor forget a session's tools for it", () => {
    const catalog = new ToolCatalog();
    const session = catalog.view({});
    session.learn({ tools: [regionTool] });
    const huge = 'n'.repeat(MAX_BYTES + 1);
    catalog.learn({ tools: [{ name: huge, inputSchema: {} }, regionTool] });
    expect(session.known('forecast')).toBeDefined();
    expect(catalog.view().known(huge)).toBeUndefined();
    expect(catalog.view().known('forecast')).toBeDefined();
    expect(catalog.size.bytes).toBeLessThan(2000);
  });

  it('does not keep a tool whose output schema is too deep to measure', () => {
    const deep: Record<string, unknown> = {};
    let at = deep;
    for (let i = 0; i < 100_000; i++) at = at.n = {};
    const catalog = new ToolCatalog();
    catalog.learn({ tools: [{ name: 'deep', inputSchema: {}, outputSchema: deep }, regionTool] });
    expect(catalog.view().known('deep')).toBeUndefined();
    expect(catalog.view().known('forecast')).toBeDefined();
  });

  it('keeps 10,000 tools and no more; tools past the bound are unknown', () => {
    const catalog = new ToolCatalog();
    const tools = Array.from({ length: MAX_TOOLS + 500 }, (_, i) => ({ name: `tool-${i}`, inputSchema: { type: 'object' } }));
    catalog.learn({ tools });
    expect(catalog.size.tools).toBe(MAX_TOOLS);
    expect(catalog.view().known(`tool-${MAX_TOOLS - 1}`)).toBeDefined();
    expect(catalog.view().known(`tool-${MAX_TOOLS}`)).toBeUndefined();
    // Listed again in full: still bounded.
    catalog.learn({ tools });
    expect(catalog.size.tools).toBe(MAX_TOOLS);
  });

  it('keeps at most 8 MiB of output schemas', () => {
    const catalog = new ToolCatalog();
    const schema = { type: 'object', description: 'd'.repeat(100_000) };
    catalog.learn({ tools: Array.from({ length: 100 }, (_, i) => ({ name: `t${i}`, inputSchema: {}, outputSchema: schema })) });
    expect(catalog.size.bytes).toBeLessThanOrEqual(MAX_BYTES);
    expect(catalog.size.tools).toBe(83); // 83 × ~100 KB fit in 8 MiB
  });

  it("forgets sessions' holders least recently used to make room, never the shared view the Mcp-Param checks need", async () => {
    const tools = (prefix: string) => Array.from({ length: 6000 }, (_, i) => ({ name: `${prefix}${i}`, inputSchema: {} }));
    const up = upstream(() => [{ tools: tools('a') }]);
    const catalog = new ToolCatalog({ lister: up.lister });
    expect(await catalog.paramHeaders(call('a1'), A)).toBeUndefined();
    const first = catalog.view({});
    first.learn({ tools: tools('b') });
    // The shared view stays whole: the session keeps what fits beside it.
    expect(catalog.size.tools).toBe(MAX_TOOLS);
    expect(catalog.view().known('a5999')).toBeDefined();
    expect([first.known('b0'), first.known('b5999')]).toEqual([expect.anything(), undefined]);
    // Another session's listing takes the place of the one used least recently, not the shared view's.
    const second = catalog.view({});
    second.learn({ tools: tools('c') });
    expect(first.known('b0')).toBeUndefined();
    expect(second.known('c0')).toBeDefined();
    await catalog.paramHeaders(call('a1'), A);
    expect(up.listedBy).toEqual(['token:a']); // listed once: nothing forced the shared view out
  });

  it('counts a holder that lists nothing, so empty holders cannot grow without bound', () => {
    const catalog = new ToolCatalog();
    for (let i = 0; i < 50_000; i++) catalog.view({}).learn({ tools: [] });
    expect(catalog.size.bytes).toBeLessThanOrEqual(MAX_BYTES);
  });
});
