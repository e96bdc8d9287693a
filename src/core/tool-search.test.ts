import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import type { JsonRpcRequest } from '../jsonrpc/message.js';
import type { McpResult } from '../transformers/contract.js';
import { CALL_TOOL, rank, SEARCH_TOOL, ToolSearch, type Tool } from './tool-search.js';

/** The tools a recorded server listed (test/recordings). */
function recorded(server: string): Tool[] {
  const recordings = JSON.parse(readFileSync(new URL(`../../test/recordings/${server}.json`, import.meta.url), 'utf8')) as Array<{
    method: string;
    result: { tools?: Tool[] };
  }>;
  return recordings.find((r) => r.method === 'tools/list')!.result.tools!;
}

const catalog = [...recorded('everything'), ...recorded('filesystem'), ...recorded('memory')];
const names = (tools: McpResult[]) => tools.map((t) => t.name);
const call = (name: string, args: Record<string, unknown>, meta?: Record<string, unknown>): JsonRpcRequest => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name, arguments: args, ...(meta ? { _meta: meta } : {}) },
});

describe('ranking', () => {
  it.each([
    ['add two numbers', 'get-sum'],
    ['read the contents of a text file', 'read_text_file'],
    ['create entities in the knowledge graph', 'create_entities'],
    ['list the files in a folder', 'list_directory'],
    ['echo a message back', 'echo'],
  ])('finds the tool for "%s" among %s real tools', (query, expected) => {
    const found = names(rank(catalog, query, 3));
    expect(found).toContain(expected);
  });

  it('searches each word of a query once: repeating words changes nothing', () => {
    expect(names(rank(catalog, 'read file '.repeat(100), 5))).toEqual(names(rank(catalog, 'read file', 5)));
  });

  it('returns at most the limit, best first, and nothing for words no tool has', () => {
    expect(rank(catalog, 'file', 2)).toHaveLength(2);
    expect(rank(catalog, 'zzqx', 5)).toEqual([]);
  });
});

describe('the search step', () => {
  it('turns search_tools into a listing and ranks its result', () => {
    const step = new ToolSearch(false).onRequest(call(SEARCH_TOOL, { query: 'add two numbers', limit: 1 }, { a: 1 }));
    expect(step && 'request' in step && step.request).toEqual({ jsonrpc: '2.0', id: 7, method: 'tools/list', params: { _meta: { a: 1 } } });
    const answer = step && 'finish' in step ? step.finish!({ tools: catalog }) : undefined;
    expect(answer?.structuredContent).toEqual({ tools: [catalog.find((t) => t.name === 'get-sum')] });
    expect(JSON.parse((answer?.content as Array<{ text: string }>)[0].text)).toEqual(answer?.structuredContent);
  });

  it('turns call_tool into the call it names, keeping _meta', () => {
    const step = new ToolSearch(false).onRequest(call(CALL_TOOL, { name: 'echo', arguments: { message: 'hi' } }, { a: 1 }));
    expect(step).toEqual({ request: call('echo', { message: 'hi' }, { a: 1 }) });
  });

  it("keeps the call's own params through call_tool: its input round's state and answers, its task", () => {
    const retry = {
      ...call(CALL_TOOL, { name: 'deploy', arguments: { to: 'prod' } }, { a: 1 }),
      params: {
        name: CALL_TOOL,
        arguments: { name: 'deploy', arguments: { to: 'prod' } },
        requestState: 'sealed',
        inputResponses: { ask: { action: 'accept' } },
        task: { ttl: 1000 },
        _meta: { a: 1 },
      },
    };
    expect(new ToolSearch(false).onRequest(retry)).toEqual({
      request: {
        ...retry,
        params: {
          name: 'deploy',
          arguments: { to: 'prod' },
          requestState: 'sealed',
          inputResponses: { ask: { action: 'accept' } },
          task: { ttl: 1000 },
          _meta: { a: 1 },
        },
      },
    });
  });

  it('says when the server lists more tools than the page searched', () => {
    const step = new ToolSearch(false).onRequest(call(SEARCH_TOOL, { query: 'zzqx' })) as { finish(r: McpResult): McpResult };
    const answer = step.finish({ tools: catalog, nextCursor: 'page-2' });
    expect(answer.structuredContent).toEqual({ tools: [], partial: true });
    expect((answer.content as Array<{ text: string }>)[0].text).toContain('first page only');
  });

  it('leaves other tools and methods alone', () => {
    expect(new ToolSearch(false).onRequest(call('echo', { message: 'hi' }))).toBeUndefined();
    expect(new ToolSearch(false).onRequest({ jsonrpc: '2.0', id: 1, method: 'prompts/list' })).toBeUndefined();
  });

  it.each([
    [SEARCH_TOOL, {}, '"query"'],
    [SEARCH_TOOL, { query: '  ' }, '"query"'],
    [SEARCH_TOOL, { query: 'x'.repeat(501) }, 'longer than 500'],
    [SEARCH_TOOL, { query: 'file', limit: 0 }, '"limit"'],
    [SEARCH_TOOL, { query: 'file', limit: 2.5 }, '"limit"'],
    [CALL_TOOL, {}, '"name"'],
    [CALL_TOOL, { name: 'echo', arguments: [1] }, '"arguments"'],
  ])('refuses %s with %j, saying what is wrong', (tool, args, says) => {
    const step = new ToolSearch(false).onRequest(call(tool, args));
    expect(step && 'error' in step && step.error.code).toBe(-32602);
    expect(step && 'error' in step && step.error.message).toContain(says);
  });

  it("lists its two tools in place of the catalog, and a session's found tools after them, told once", () => {
    const session = new ToolSearch(true);
    const list = () =>
      names(
        (session.onRequest({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) as { finish(r: McpResult): McpResult }).finish({
          tools: catalog,
        }).tools as McpResult[],
      );
    expect(list()).toEqual([SEARCH_TOOL, CALL_TOOL]);
    expect(session.announce()).toBeUndefined();
    const step = session.onRequest(call(SEARCH_TOOL, { query: 'add two numbers', limit: 1 })) as { finish(r: McpResult): McpResult };
    step.finish({ tools: catalog });
    expect(session.announce()).toEqual({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    expect(session.announce()).toBeUndefined();
    expect(list()).toEqual([SEARCH_TOOL, CALL_TOOL, 'get-sum']);
    step.finish({ tools: catalog }); // found again, unchanged: nothing to tell
    expect(session.announce()).toBeUndefined();
  });

  it("keeps at most 50 found tools in a session's list, the least recently found going first", () => {
    const session = new ToolSearch(true);
    const many = Array.from({ length: 60 }, (_, i) => ({ name: `tool_${i}`, description: `widget number ${i}` }));
    (session.onRequest(call(SEARCH_TOOL, { query: 'widget', limit: 20 })) as { finish(r: McpResult): McpResult }).finish({
      tools: many.slice(0, 20),
    });
    (session.onRequest(call(SEARCH_TOOL, { query: 'widget', limit: 20 })) as { finish(r: McpResult): McpResult }).finish({
      tools: many.slice(20, 40),
    });
    (session.onRequest(call(SEARCH_TOOL, { query: 'widget', limit: 20 })) as { finish(r: McpResult): McpResult }).finish({
      tools: many.slice(40, 60),
    });
    const listed = names(
      (session.onRequest({ jsonrpc: '2.0', id: 1, method: 'tools/list' }) as { finish(r: McpResult): McpResult }).finish({})
        .tools as McpResult[],
    );
    expect(listed).toHaveLength(52);
    expect(listed).not.toContain('tool_0');
    expect(listed).toContain('tool_59');
  });
});
