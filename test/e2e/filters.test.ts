/**
 * One filter chain for both eras: a filter registered with the gateway (in process, in front of
 * the faulty fixture as a real child process, reached over real HTTP) sees a legacy session's
 * requests and results and a modern request's alike, and what it changes reaches both clients.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  EmptyResultSchema,
  LoggingMessageNotificationSchema,
  McpError,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import type { Filter } from '../../src/extensions/contract.js';
import { createGateway, type Gateway } from '../../src/gateway.js';
import { modern, rawPost } from '../helpers/raw.js';
import { eventually, fixtureArgv } from '../helpers/processes.js';

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
      return ctx.method === 'tools/call'
        ? { ...result, _meta: { ...(result._meta as object), 'test/seen-by': ctx.state.client } }
        : undefined;
    },
  };
}

/** Throws from every hook but onRequest (tools/call echo only, for results). */
function throwingFilter(): Filter<object> {
  const boom = (hook: string) => {
    throw new Error(`${hook} is broken`);
  };
  return {
    name: 'throwing',
    negotiate: () => ({}),
    learnUpstream: () => boom('learnUpstream'),
    onInitializeResult: () => boom('onInitializeResult'),
    onResult: (result, ctx) => (ctx.name === 'echo' ? boom('onResult') : undefined),
    onError: () => boom('onError'),
    onNotification: () => boom('onNotification'),
  };
}

function gatewayWith(filter: Filter<any>): Gateway {
  const [command, ...args] = fixtureArgv('faulty-server');
  const config = loadConfig({ overrides: { upstream: { command: [command, ...args] }, listen: { port: 0 } } });
  return createGateway(config, { log: pino({ level: 'silent' }), filters: [filter] });
}

describe('a filter registered with the gateway', () => {
  let gateway: Gateway | undefined;
  afterAll(() => gateway?.close());

  it('sees a legacy and a modern request pass through it, and changes both results', async () => {
    const seen: string[] = [];
    gateway = gatewayWith(recordingFilter(seen));
    const { url } = await gateway.start();

    const legacy = new Client({ name: 'filters-test', version: '1' }, { capabilities: { roots: {} } });
    await legacy.connect(new StreamableHTTPClientTransport(new URL(url!)));
    const legacyResult = await legacy.callTool({ name: 'echo', arguments: { text: 'legacy' } });
    await legacy.close();

    const m = modern(7, 'tools/call', { name: 'echo', arguments: { text: 'modern' } }, { sampling: {} });
    const modernResult = (await rawPost(url!, m.body, m.headers)).messages[0].result;

    expect(legacyResult).toMatchObject({ content: [{ text: 'legacy' }], _meta: { 'test/seen-by': 'legacy:roots' } });
    expect(modernResult).toMatchObject({
      content: [{ text: 'modern' }],
      resultType: 'complete',
      _meta: { 'test/seen-by': 'modern:sampling' },
    });
    expect(seen).toEqual(
      expect.arrayContaining([
        'legacy request tools/call',
        'legacy result tools/call',
        'modern request tools/call',
        'modern result tools/call',
      ]),
    );
  });

  it('costs no client an answer or a notification when it throws: results fail as errors, in both eras, everything else passes unchanged', async () => {
    await gateway?.close();
    gateway = gatewayWith(throwingFilter());
    const { url } = await gateway.start();

    const legacy = new Client({ name: 'filters-test', version: '1' });
    const notified: string[] = [];
    legacy.setNotificationHandler(LoggingMessageNotificationSchema, (n) => void notified.push(`log ${n.params.data}`));
    legacy.setNotificationHandler(ToolListChangedNotificationSchema, () => void notified.push('tools changed'));
    await legacy.connect(new StreamableHTTPClientTransport(new URL(url!)));
    const legacyFailure = await legacy.callTool({ name: 'echo', arguments: { text: 'legacy' } }).catch((err: unknown) => err);
    expect(legacyFailure).toBeInstanceOf(McpError);
    expect((legacyFailure as McpError).code).toBe(-32603);
    // An upstream error (unknown method) passes as it came although onError throws.
    const unknown = await legacy.request({ method: 'no/such', params: {} }, EmptyResultSchema).catch((err: unknown) => err);
    expect((unknown as McpError).code).toBe(-32601);
    await legacy.setLoggingLevel('info');
    await legacy.callTool({ name: 'log', arguments: { level: 'warning', message: 'careful' } });
    await legacy.callTool({ name: 'add_tool', arguments: { name: 'extra' } });
    await eventually(() => notified.length >= 2, 5000, 'notifications');
    expect(notified).toEqual(expect.arrayContaining(['log careful', 'tools changed']));
    await legacy.close();

    const failing = modern(7, 'tools/call', { name: 'echo', arguments: { text: 'modern' } });
    expect((await rawPost(url!, failing.body, failing.headers)).messages[0]).toMatchObject({ id: 7, error: { code: -32603 } });
    const working = modern(8, 'tools/call', { name: 'pid', arguments: {} });
    expect((await rawPost(url!, working.body, working.headers)).messages[0]).toMatchObject({ id: 8, result: { resultType: 'complete' } });
  });
});
