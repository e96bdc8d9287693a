/**
 * One filter chain for both eras: a filter registered with the gateway (in process, in front of
 * the faulty fixture as a real child process, reached over real HTTP) sees a legacy session's
 * requests and results and a modern request's alike, and what it changes reaches both clients.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import type { Filter } from '../../src/extensions/contract.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { modern, rawPost } from '../helpers/raw.js';
import { fixtureArgv } from '../helpers/processes.js';

/** Records what passes, and marks every tools/call result it sees. */
function recordingFilter(seen: string[]): Filter<{ client: string }> {
  return {
    name: 'recording',
    negotiate: (capabilities, era) => ({ client: `${era}:${Object.keys(capabilities).sort().join(',')}` }),
    onRequest(req, ctx) {
      seen.push(`${ctx.era} request ${req.method}`);
      return undefined;
    },
    onResult(result, ctx) {
      seen.push(`${ctx.era} result ${ctx.method}`);
      return ctx.method === 'tools/call' ? { ...result, _meta: { ...(result._meta as object), 'test/seen-by': ctx.state.client } } : undefined;
    },
  };
}

describe('a filter registered with the gateway', () => {
  let gateway: Gateway | undefined;
  afterAll(() => gateway?.close());

  it('sees a legacy and a modern request pass through it, and changes both results', async () => {
    const seen: string[] = [];
    const [command, ...args] = fixtureArgv('faulty-server');
    const config = loadConfig({ overrides: { upstream: { command: [command, ...args] }, listen: { port: 0 } } });
    gateway = createGateway(config, { log: pino({ level: 'silent' }), filters: [recordingFilter(seen)] });
    const { url } = await gateway.start();

    const legacy = new Client({ name: 'filters-test', version: '1' }, { capabilities: { roots: {} } });
    await legacy.connect(new StreamableHTTPClientTransport(new URL(url!)));
    const legacyResult = await legacy.callTool({ name: 'echo', arguments: { text: 'legacy' } });
    await legacy.close();

    const m = modern(7, 'tools/call', { name: 'echo', arguments: { text: 'modern' } }, { sampling: {} });
    const modernResult = (await rawPost(url!, m.body, m.headers)).messages[0].result;

    expect(legacyResult).toMatchObject({ content: [{ text: 'legacy' }], _meta: { 'test/seen-by': 'legacy:roots' } });
    expect(modernResult).toMatchObject({ content: [{ text: 'modern' }], resultType: 'complete', _meta: { 'test/seen-by': 'modern:sampling' } });
    expect(seen).toEqual(expect.arrayContaining(['legacy request tools/call', 'legacy result tools/call', 'modern request tools/call', 'modern result tools/call']));
  });
});
