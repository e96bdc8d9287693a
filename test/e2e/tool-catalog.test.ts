/**
 * What the proxy knows of the upstream's tools follows the upstream: a legacy session that
 * negotiates content forgets what its tools declared when the upstream says its tool list
 * changed, and learns it again before it shapes the next result (a tool that now declares an
 * outputSchema keeps its structuredContent, as MCP requires).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { callTool, rawPost, rawSession, sseMessages } from '../helpers/raw.js';
import { commandLine, fixtureArgv, startProxy, stopAll } from '../helpers/processes.js';

const markdown = {
  extensions: { 'io.modelcontextprotocol/content-negotiation': { version: '1.0', features: ['human', 'format=markdown'] } },
};
type ToolResult = { content: Array<{ type: string; text: string }>; structuredContent?: Record<string, unknown> };

describe('the tool catalog across a list change', () => {
  afterAll(stopAll);

  it("a legacy session relearns a tool's outputSchema after list_changed, and keeps structuredContent it now requires", async () => {
    const proxy = await startProxy(['--upstream', commandLine(fixtureArgv('schema-change-server'))]);
    const headers = await rawSession(proxy.url, markdown);
    const listed = (await rawPost(proxy.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers)).messages[0].result;
    expect(listed.tools.find((t: { name: string }) => t.name === 'weather').outputSchema).toBeUndefined();
    const before = (await rawPost(proxy.url, callTool(2, 'weather'), headers)).messages[0].result as ToolResult;
    expect(before.content[0].text).toContain('Bern');
    expect(before.structuredContent).toBeUndefined(); // declares none, and the markdown shows the data

    const abort = new AbortController();
    const stream = await fetch(proxy.url, { headers: { accept: 'text/event-stream', ...headers }, signal: abort.signal });
    try {
      const changed = sseMessages(stream).next((m) => m.method === 'notifications/tools/list_changed');
      expect((await rawPost(proxy.url, callTool(3, 'declare_schema'), headers)).messages[0].result.content[0].text).toBe('declared');
      await changed;
    } finally {
      abort.abort();
    }
    // The client has not listed again; the proxy has, before shaping.
    const after = (await rawPost(proxy.url, callTool(4, 'weather'), headers)).messages[0].result as ToolResult;
    expect(after.structuredContent).toEqual({ city: 'Bern', temp_c: 8 });
  });
});
