/**
 * Server variants through the proxy, in front of servers that know nothing of them: ranking at
 * initialize, per-request selection on one session, every SEP error with its exact data,
 * cursors bound to their variant over a paginating upstream, deprecation, and clients that send
 * nothing getting the upstream as it is.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INIT, modern, rawPost, sseMessages } from '../helpers/raw.js';
import { commandLine, eventually, fixtureArgv, ROOT, startProxy, stopAll, type Running } from '../helpers/processes.js';

const EXT = 'io.modelcontextprotocol/server-variants';
const KEY = 'io.modelcontextprotocol/server-variant';
const withHints = (hints?: Record<string, unknown>) => ({
  ...INIT,
  params: { ...INIT.params, capabilities: hints === undefined ? {} : { extensions: { [EXT]: { variantHints: { hints } } } } },
});

/** A raw session: initialize (with optional hints), then requests with an optional variant. */
async function session(url: string, hints?: Record<string, unknown>) {
  const init = await rawPost(url, withHints(hints), { accept: 'application/json' });
  const headers = {
    accept: 'application/json',
    'mcp-session-id': init.headers.get('mcp-session-id')!,
    'mcp-protocol-version': '2025-11-25',
  };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  let id = 1;
  const call = async (method: string, params: Record<string, unknown> = {}, variant?: string) => {
    const p = variant === undefined ? params : { ...params, _meta: { [KEY]: variant } };
    return (await rawPost(url, { jsonrpc: '2.0', id: id++, method, params: p }, headers)).messages[0];
  };
  return { init: init.messages[0].result, call };
}

describe('server variants in front of the demo server', () => {
  let proxy: Running;
  beforeAll(async () => {
    proxy = await startProxy(['--config', `${ROOT}config/examples/variants.yaml`]);
  });
  afterAll(stopAll);

  it('ranks the variants for the client hints, and keeps capability flags as they are', async () => {
    const plain = await session(proxy.url);
    const compactFirst = await session(proxy.url, { contextSize: ['compact', 'verbose'] });
    const offer = compactFirst.init.capabilities.extensions[EXT];
    expect(offer.availableVariants.map((v: { id: string }) => v.id)).toEqual(['compact', 'full', 'readonly', 'v1']);
    expect(offer.moreVariantsAvailable).toBe(false);
    expect(offer.availableVariants[3]).toMatchObject({ status: 'deprecated', deprecationInfo: { replacement: 'full' } });
    const { extensions: _e, ...flags } = compactFirst.init.capabilities;
    expect(flags).toEqual(plain.init.capabilities);
    expect(plain.init.capabilities.extensions).toBeUndefined(); // nothing declared, nothing added
    const humanFirst = await session(proxy.url, { useCase: ['human-assistant'] });
    expect(humanFirst.init.capabilities.extensions[EXT].availableVariants[0].id).toBe('full');
  });

  it('changes tools/list and tools/call per request on one session', async () => {
    const s = await session(proxy.url, { contextSize: 'verbose' });
    const names = async (variant?: string) =>
      (await s.call('tools/list', {}, variant)).result.tools.map((t: { name: string }) => t.name).sort();
    expect(await names()).toEqual(['convert_units', 'get_weather', 'plan_journey']); // default: the first ranked ("full")
    expect(await names('readonly')).toEqual(['convert_units', 'get_weather']);
    const compact = (await s.call('tools/list', {}, 'compact')).result.tools.find((t: { name: string }) => t.name === 'get_weather');
    expect(compact.description).toBe('Current weather and a 3-day forecast for a city.');
    expect(Object.values(compact.inputSchema.properties).every((p) => (p as { description?: string }).description === undefined)).toBe(
      true,
    );
    const call = (variant: string) =>
      s.call('tools/call', { name: 'plan_journey', arguments: { from: 'Bern', to: 'Lugano', date: '2026-05-01' } }, variant);
    expect((await call('full')).result.content[0].text).toContain('Your journey from Bern to Lugano');
    expect(await call('readonly')).toMatchObject({
      error: { code: -32602, message: 'Unknown tool: plan_journey', data: { activeVariant: 'readonly', hint: expect.any(String) } },
    });
    expect((await call('compact')).result.content[0].text).not.toContain('## Tips'); // the variant's trim rule
    // An error the upstream raises for a request made in a variant names the variant too.
    expect(await s.call('resources/read', { uri: 'demo://nowhere' }, 'full')).toMatchObject({ error: { data: { activeVariant: 'full' } } });
  });

  it('answers an unknown variant with the SEP error and the variants this session was offered', async () => {
    const s = await session(proxy.url, {});
    expect(await s.call('tools/list', {}, 'nope')).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: {
        code: -32602,
        message: 'Invalid server variant',
        data: { requestedVariant: 'nope', availableVariants: ['full', 'compact', 'readonly', 'v1'] },
      },
    });
    expect((await s.call('prompts/get', { name: 'trip_briefing', arguments: { destination: 'Bern' } }, 'readonly')).error.data).toEqual({
      activeVariant: 'readonly',
      hint: expect.any(String),
    });
  });

  it('takes the variant from the MCP-Server-Variant header too, with _meta winning', async () => {
    const init = await rawPost(proxy.url, withHints({}), { accept: 'application/json' });
    const headers = {
      accept: 'application/json',
      'mcp-session-id': init.headers.get('mcp-session-id')!,
      'mcp-protocol-version': '2025-11-25',
      'mcp-server-variant': 'readonly',
    };
    const list = async (meta?: string) =>
      (await rawPost(proxy.url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: meta ? { _meta: { [KEY]: meta } } : {} }, headers))
        .messages[0].result.tools.length;
    expect(await list()).toBe(2);
    expect(await list('full')).toBe(3);
  });

  it('keeps deprecated variants working, marks their results and warns once', async () => {
    const s = await session(proxy.url, {});
    const first = await s.call('tools/list', {}, 'v1');
    expect(first.result._meta[`${EXT}/deprecation`]).toMatchObject({ variant: 'v1', replacement: 'full' });
    await s.call('tools/list', {}, 'v1');
    await eventually(() => proxy.stderr().includes('deprecated variant'), 5000, 'the warning');
    expect(proxy.stderr().match(/client uses a deprecated variant/g)).toHaveLength(1);
  });

  it('works for the official SDK client selecting variants in _meta', async () => {
    const client = new Client(
      { name: 'variants-sdk', version: '1' },
      { capabilities: { extensions: { [EXT]: { variantHints: { hints: { useCase: 'chat' } } } } } },
    );
    await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
    const ext = (client.getServerCapabilities() as { extensions: Record<string, { availableVariants: Array<{ id: string }> }> }).extensions[
      EXT
    ];
    expect(ext.availableVariants[0].id).toBe('readonly');
    expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('plan_journey');
    expect((await client.listTools({ _meta: { [KEY]: 'full' } })).tools.map((t) => t.name)).toContain('plan_journey');
    await client.close();
  });
});

describe('cursors and carry-over over a paginating upstream', () => {
  afterAll(stopAll);

  it('binds cursors to their variant, refuses forged ones, and filters pages without losing items', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'variants-')), 'v.yaml');
    writeFileSync(
      config,
      [
        `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}`,
        'serverVariants:',
        '  cursorSecret: test-secret',
        '  variants:',
        '    - { id: all, description: Everything }',
        '    - { id: odd, description: Odd items only, resources: { include: ["faulty://item/1", "faulty://item/3", "faulty://item/5"] } }',
      ].join('\n'),
    );
    const proxy = await startProxy(['--config', config]);
    const s = await session(proxy.url, {});
    const walk = async (variant: string) => {
      const uris: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 10; page++) {
        const r = (await s.call('resources/list', cursor ? { cursor } : {}, variant)).result;
        uris.push(...r.resources.map((x: { uri: string }) => x.uri));
        cursor = r.nextCursor;
        if (!cursor) break;
      }
      return uris;
    };
    expect(await walk('all')).toEqual([1, 2, 3, 4, 5].map((n) => `faulty://item/${n}`));
    expect(await walk('odd')).toEqual([1, 3, 5].map((n) => `faulty://item/${n}`));
    const allCursor = (await s.call('resources/list', {}, 'all')).result.nextCursor;
    expect(await s.call('resources/list', { cursor: allCursor }, 'odd')).toMatchObject({
      error: { code: -32602, message: 'Cursor invalid for requested variant', data: { cursorVariant: 'all', requestedVariant: 'odd' } },
    });
    expect(await s.call('resources/list', { cursor: allCursor.slice(0, -3) + 'abc' }, 'all')).toMatchObject({
      error: { code: -32602, message: 'Invalid cursor' },
    });
    expect(await s.call('resources/read', { uri: 'faulty://item/2' }, 'odd')).toMatchObject({
      error: { code: -32602, data: { activeVariant: 'odd' } },
    });
    // Subscriptions are made in a variant: only to resources that variant shows.
    expect(await s.call('resources/subscribe', { uri: 'faulty://counter' }, 'odd')).toMatchObject({
      error: { code: -32602, message: 'Unknown resource: faulty://counter', data: { activeVariant: 'odd' } },
    });
    expect(await s.call('resources/subscribe', { uri: 'faulty://counter' }, 'all')).toMatchObject({ result: {} });
  });

  it('sends list_changed once per offered variant, naming it in _meta', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'variants-lc-')), 'v.yaml');
    writeFileSync(
      config,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\nserverVariants:\n  variants:\n    - { id: all, description: All }\n    - { id: lean, description: Lean, tools: { include: [echo] } }\n`,
    );
    const proxy = await startProxy(['--config', config]);
    const seen: unknown[] = [];
    const connect = async (declare: boolean) => {
      const client = new Client(
        { name: 'lc', version: '1' },
        { capabilities: declare ? { extensions: { [EXT]: { variantHints: { hints: {} } } } } : {} },
      );
      client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => void seen.push([declare, n.params?._meta?.[KEY] ?? null]));
      await client.connect(new StreamableHTTPClientTransport(new URL(proxy.url)));
      return client;
    };
    const [declared, legacy] = await Promise.all([connect(true), connect(false)]);
    await declared.callTool({ name: 'add_tool', arguments: { name: 'x1' } });
    await legacy.callTool({ name: 'add_tool', arguments: { name: 'x2' } });
    await eventually(() => seen.length >= 3, 5000, 'notifications');
    expect(seen).toEqual([
      [true, 'all'],
      [true, 'lean'],
      [false, null],
    ]);
    await Promise.all([declared.close(), legacy.close()]);
  });

  it("tags a modern listen stream's list_changed once per offered variant too (the same filter chain)", async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'variants-listen-')), 'v.yaml');
    writeFileSync(
      config,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\nserverVariants:\n  variants:\n    - { id: all, description: All }\n    - { id: lean, description: Lean, tools: { include: [echo] } }\n`,
    );
    const proxy = await startProxy(['--config', config]);
    const caps = { extensions: { [EXT]: { variantHints: { hints: {} } } } };
    const listen = modern(1, 'subscriptions/listen', { notifications: { toolsListChanged: true } }, caps);
    const abort = new AbortController();
    const res = await fetch(proxy.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...listen.headers },
      body: JSON.stringify(listen.body),
      signal: abort.signal,
    });
    const stream = sseMessages(res);
    await stream.next((m) => m.method === 'notifications/subscriptions/acknowledged');
    const add = modern(2, 'tools/call', { name: 'add_tool', arguments: { name: 'x3' } });
    expect((await rawPost(proxy.url, add.body, add.headers)).messages[0].result.content[0].text).toBe('added x3');
    await stream.next((m) => m.method === 'notifications/tools/list_changed' && m.params._meta[KEY] === 'lean');
    const changes = stream.messages.filter((m) => m.method === 'notifications/tools/list_changed');
    expect(changes.map((m) => [m.params._meta[KEY], m.params._meta['io.modelcontextprotocol/subscriptionId']])).toEqual([
      ['all', 1],
      ['lean', 1],
    ]);
    abort.abort();
  });

  it('says "Server variants not supported" when no variants are configured, and relays everything else as is', async () => {
    const proxy = await startProxy(['--upstream', commandLine(fixtureArgv('faulty-server'))]);
    const s = await session(proxy.url);
    expect(await s.call('tools/list', {}, 'compact')).toEqual({
      jsonrpc: '2.0',
      id: 1,
      error: { code: -32602, message: 'Server variants not supported' },
    });
    expect((await s.call('tools/list')).result.tools.length).toBeGreaterThan(5);
  });
});

describe('carry-through to an upstream that implements variants itself', () => {
  afterAll(stopAll);
  const upstream = commandLine([process.execPath, `${ROOT}test/fixtures/native-variants-server.mjs`]);
  const which = async (s: Awaited<ReturnType<typeof session>>, variant?: string) => {
    const r = await s.call('tools/call', { name: 'which', arguments: {} }, variant);
    return r.result?.content[0].text ?? r.error;
  };

  it('forwards the mapped upstreamVariant and relays the backend errors', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'variants-native-')), 'v.yaml');
    writeFileSync(
      config,
      [
        `upstream:\n  command: ${JSON.stringify(upstream)}`,
        'serverVariants:',
        '  variants:',
        '    - { id: quick, description: Quick answers, upstreamVariant: fast }',
        '    - { id: thorough, description: Deep answers, upstreamVariant: deep }',
        '    - { id: mirror, description: Same id as the backend has none }',
      ].join('\n'),
    );
    const proxy = await startProxy(['--config', config]);
    const s = await session(proxy.url, {});
    // "fast" and "deep" are mapped by quick and thorough, so nothing of the backend's is added.
    expect(s.init.capabilities.extensions[EXT].availableVariants.map((v: { id: string }) => v.id)).toEqual(['quick', 'thorough', 'mirror']);
    expect([await which(s), await which(s, 'quick'), await which(s, 'thorough')]).toEqual(['fast', 'fast', 'deep']);
    expect(await which(s, 'mirror')).toEqual({
      code: -32602,
      message: 'Invalid server variant',
      data: { requestedVariant: 'mirror', availableVariants: ['fast', 'deep'] },
    });
  });

  it("merges the backend's unmapped variants into the offer, forwarding them as they are", async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'variants-merge-')), 'v.yaml');
    writeFileSync(
      config,
      `upstream:\n  command: ${JSON.stringify(upstream)}\nserverVariants:\n  variants:\n    - { id: quick, description: Quick, upstreamVariant: fast }\n`,
    );
    const proxy = await startProxy(['--config', config]);
    const s = await session(proxy.url, {});
    expect(s.init.capabilities.extensions[EXT].availableVariants.map((v: { id: string }) => v.id)).toEqual(['quick', 'deep']);
    expect([await which(s, 'quick'), await which(s, 'deep')]).toEqual(['fast', 'deep']);
  });

  it('passes variant keys through untouched when none are configured here', async () => {
    const proxy = await startProxy(['--upstream', upstream]);
    const s = await session(proxy.url, {});
    expect(s.init.capabilities.extensions[EXT].availableVariants.map((v: { id: string }) => v.id)).toEqual(['fast', 'deep']);
    expect([await which(s), await which(s, 'deep')]).toEqual(['none', 'deep']);
  });
});
