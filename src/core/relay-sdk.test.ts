/**
 * The legacy relay in front of an official SDK server linked in memory (test/kit): the same
 * filters a legacy session binds, a real server's answers, cancellation and the server's end.
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RecordingSink } from '../../test/kit/sink.js';
import { inMemoryUpstream } from '../../test/kit/upstream.js';
import { serverVariantsSchema } from '../extensions/server-variants/variants.js';
import { VariantCatalog } from '../extensions/server-variants/scope.js';
import { ProxyError } from '../jsonrpc/errors.js';
import type { JsonRpcId } from '../jsonrpc/message.js';
import { compileRules } from '../rules/compile.js';
import { DEFAULT_RULES } from '../rules/defaults.js';
import { builtinTransformers } from '../transformers/index.js';
import { builtinChain } from './filters.js';
import { RelaySession } from './relay.js';

const log = pino({ level: 'silent' });

/** A weather server that answers in JSON text, and a tool that runs until it is cancelled. */
function weatherServer(seen: { aborted?: boolean }): McpServer {
  const server = new McpServer({ name: 'weather', version: '1.0.0' });
  server.registerTool('weather', { description: 'The weather in a city' }, async () => ({
    content: [{ type: 'text', text: '{"city":"Bern","celsius":8}' }],
  }));
  server.registerTool('wait', { description: 'Runs until cancelled' }, (extra) => {
    const stopped = () => ((seen.aborted = true), { content: [] });
    if (extra.signal.aborted) return stopped(); // cancelled before the tool ran
    return new Promise((resolve) => extra.signal.addEventListener('abort', () => resolve(stopped())));
  });
  return server;
}

function session(features: string[] = []) {
  const seen: { aborted?: boolean } = {};
  const sink = new RecordingSink();
  const chain = builtinChain({
    rules: compileRules(DEFAULT_RULES, builtinTransformers()),
    variants: new VariantCatalog(serverVariantsSchema.parse({})),
  });
  const filters = chain.forSession(log);
  const relay = new RelaySession(
    inMemoryUpstream(() => weatherServer(seen)),
    sink,
    {
      requestTimeoutMs: 5000,
      initializeTimeoutMs: 5000,
      shaper: filters,
      log,
    },
  );
  filters.bindUpstream(relay, 5000);
  const send = (id: JsonRpcId | undefined, method: string, params: Record<string, unknown> = {}) =>
    relay.fromClient({
      msg: id === undefined ? { jsonrpc: '2.0', method, params } : { jsonrpc: '2.0', id, method, params },
    });
  const capabilities = features.length ? { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: 1, features } } } : {};
  send(0, 'initialize', { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 'kit', version: '1' } });
  return { relay, sink, send, seen };
}

describe('the legacy relay in front of an SDK server', () => {
  it('relays what a client that declares nothing gets as the server sent it', async () => {
    const { sink, send } = session();
    expect(await sink.answer(0)).toMatchObject({ result: { serverInfo: { name: 'weather' } } });
    send(undefined, 'notifications/initialized');
    send(1, 'tools/call', { name: 'weather', arguments: {} });
    expect(await sink.answer(1)).toEqual({
      jsonrpc: '2.0',
      id: 1,
      result: { content: [{ type: 'text', text: '{"city":"Bern","celsius":8}' }] },
    });
  });

  it('shapes the result for a session that declared format=json', async () => {
    const { sink, send } = session(['format=json']);
    await sink.answer(0);
    send(undefined, 'notifications/initialized');
    send(1, 'tools/call', { name: 'weather', arguments: {} });
    expect(await sink.answer(1)).toMatchObject({ result: { structuredContent: { city: 'Bern', celsius: 8 } } });
  });

  it("carries the client's cancellation to the server, and answers nothing for the cancelled call", async () => {
    const { sink, send, seen, relay } = session();
    await sink.answer(0);
    send(undefined, 'notifications/initialized');
    send(1, 'tools/call', { name: 'wait', arguments: {} });
    send(undefined, 'notifications/cancelled', { requestId: 1, reason: 'stop' });
    send(2, 'ping');
    await sink.answer(2);
    expect(seen.aborted).toBe(true);
    expect(relay.pendingCount).toBe(0);
    expect(sink.delivered.some(({ msg }) => msg.id === 1)).toBe(false);
  });

  it('answers every pending request when the server goes away', async () => {
    const { sink, send, relay } = session();
    await sink.answer(0);
    send(1, 'tools/call', { name: 'wait', arguments: {} });
    await relay.close(new ProxyError('UPSTREAM_CLOSED', 'gone'));
    expect(await sink.answer(1)).toMatchObject({ error: { message: 'gone' } });
    expect(sink.ended?.code).toBe('UPSTREAM_CLOSED');
  });
});
