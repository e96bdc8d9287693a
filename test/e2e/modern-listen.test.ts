/**
 * subscriptions/listen for modern clients in front of a legacy server: the acknowledgement
 * names what the upstream can send, list_changed and resources/updated reach the listeners that
 * opted in (tagged with their subscriptionId), and a closed listen stream ends cleanly.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModern, type ModernConnected } from '../helpers/modern-clients.js';
import { commandLine, eventually, fixtureArgv, startProxy, stopAll, type Running } from '../helpers/processes.js';
import { rawPost } from '../helpers/raw.js';

describe('subscriptions/listen (faulty-server fixture over stdio)', () => {
  let proxy: Running;
  let a: ModernConnected;
  let b: ModernConnected;

  beforeAll(async () => {
    proxy = await startProxy(['--upstream', commandLine(fixtureArgv('faulty-server')), '--log-level', 'debug']);
    [a, b] = await Promise.all([connectModern('http', { url: proxy.url }, { input: false }), connectModern('http', { url: proxy.url }, { input: false })]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await proxy?.stop();
    await stopAll();
  });

  it('acknowledges first, then fans out only what each listener opted in to', async () => {
    const seen = { a: [] as string[], b: [] as string[] };
    a.client.setNotificationHandler('notifications/tools/list_changed', () => void seen.a.push('tools'));
    a.client.setNotificationHandler('notifications/resources/updated', (n) => void seen.a.push(`updated ${n.params.uri}`));
    b.client.setNotificationHandler('notifications/tools/list_changed', () => void seen.b.push('tools'));
    b.client.setNotificationHandler('notifications/resources/updated', (n) => void seen.b.push(`updated ${n.params.uri}`));
    const subA = await a.client.listen({ toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['faulty://counter'] });
    const subB = await b.client.listen({ toolsListChanged: true });
    // The fixture's prompts do not change (no listChanged): not honoured.
    expect(subA.honoredFilter).toEqual({ toolsListChanged: true, resourceSubscriptions: ['faulty://counter'] });
    expect(subB.honoredFilter).toEqual({ toolsListChanged: true });
    await a.client.callTool({ name: 'bump', arguments: {} });
    await eventually(() => seen.a.includes('updated faulty://counter'), 5000, 'resources/updated to reach listener a');
    await b.client.callTool({ name: 'add_tool', arguments: { name: 'fresh' } });
    await eventually(() => seen.a.includes('tools') && seen.b.includes('tools'), 5000, 'list_changed to reach both listeners');
    expect(seen.b).not.toContain('updated faulty://counter');
    await subB.close();
    await subA.close();
    expect(await subA.closed).toBeDefined();
    // The proxy answers as before once the streams are gone.
    const list = await a.client.listTools();
    expect(list.tools.map((t) => t.name)).toContain('fresh');
  });

  it('rejects a listen request without a notifications filter', async () => {
    const V = '2026-07-28';
    const res = await rawPost(
      proxy.url,
      { jsonrpc: '2.0', id: 9, method: 'subscriptions/listen', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': V, 'io.modelcontextprotocol/clientCapabilities': {} } } },
      { 'mcp-protocol-version': V, 'mcp-method': 'subscriptions/listen' },
    );
    expect(res.messages.at(-1).error).toMatchObject({ code: -32602, data: { code: 'INVALID_META' } });
    expect(res.messages.at(-1).id).toBe(9);
  });
});
