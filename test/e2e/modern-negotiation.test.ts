/**
 * Content negotiation and server variants for modern clients, per request: two v2 clients
 * with different feature tags interleave calls on one proxy in front of the demo server (which
 * speaks neither); a raw modern request selects a variant in `_meta` and gets its view, and an
 * unknown variant gets the SEP's error.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectModern, type ModernConnected } from '../helpers/modern-clients.js';
import { rawPost } from '../helpers/raw.js';
import { startProxy, stopAll, type Running } from '../helpers/processes.js';

const V = '2026-07-28';
const VARIANT = 'io.modelcontextprotocol/server-variant';

describe('per-request negotiation for modern clients (demo upstream)', () => {
  let proxy: Running;
  const clients: ModernConnected[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modern-neg-'));
    const config = join(dir, 'proxy.yaml');
    writeFileSync(
      config,
      [
        'serverVariants:',
        '  variants:',
        '    - { id: full, description: Everything }',
        '    - { id: weather, description: Weather only, tools: { include: [get_weather] } }',
      ].join('\n'),
    );
    proxy = await startProxy(['--config', config]);
  }, 30_000);

  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await stopAll();
  });

  it('shapes each request for the features it declares, with clients interleaved', async () => {
    const [agent, plain] = await Promise.all([
      connectModern('http', { url: proxy.url }, { features: ['agent', 'format=json'] }),
      connectModern('http', { url: proxy.url }),
    ]);
    clients.push(agent, plain);
    const call = (c: ModernConnected) => c.client.callTool({ name: 'get_weather', arguments: { city: 'Bern' } });
    const [a1, p1, a2, p2] = await Promise.all([call(agent), call(plain), call(agent), call(plain)]);
    for (const shaped of [a1, a2]) {
      expect(shaped.structuredContent).toMatchObject({ temperature_c: expect.any(Number), humidity_percent: expect.any(Number) });
    }
    for (const unshaped of [p1, p2]) {
      expect(unshaped.structuredContent).toBeUndefined();
      expect((unshaped.content as Array<{ text: string }>)[0].text).toMatch(/Bern/);
    }
  });

  it('selects a server variant per request from _meta, and names the variants on an unknown one', async () => {
    const post = (id: number, method: string, params: Record<string, unknown>, variant?: string) =>
      rawPost(
        proxy.url,
        {
          jsonrpc: '2.0',
          id,
          method,
          params: {
            ...params,
            _meta: {
              'io.modelcontextprotocol/protocolVersion': V,
              'io.modelcontextprotocol/clientCapabilities': {},
              ...(variant ? { [VARIANT]: variant } : {}),
            },
          },
        },
        { 'mcp-protocol-version': V, 'mcp-method': method, ...(params.name ? { 'mcp-name': String(params.name) } : {}) },
      );
    const all = (await post(1, 'tools/list', {}, 'full')).messages[0].result.tools.map((t: { name: string }) => t.name);
    const lean = (await post(2, 'tools/list', {}, 'weather')).messages[0].result.tools.map((t: { name: string }) => t.name);
    expect(all.length).toBeGreaterThan(1);
    expect(lean).toEqual(['get_weather']);
    const outside = (await post(3, 'tools/call', { name: all.find((n: string) => n !== 'get_weather'), arguments: {} }, 'weather'))
      .messages[0];
    expect(outside.error).toMatchObject({ code: -32602, data: { activeVariant: 'weather' } });
    const unknown = (await post(4, 'tools/list', {}, 'nope')).messages[0];
    expect(unknown.error).toMatchObject({
      code: -32602,
      message: 'Invalid server variant',
      data: { requestedVariant: 'nope', availableVariants: ['full', 'weather'] },
    });
    const discover = (await post(5, 'server/discover', {})).messages[0].result;
    expect(
      discover.capabilities.extensions['io.modelcontextprotocol/server-variants'].availableVariants.map((v: { id: string }) => v.id),
    ).toEqual(['full', 'weather']);
  });
});
