import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { serverVariantsSchema } from '../extensions/server-variants/variants.js';
import { VariantCatalog } from '../extensions/server-variants/scope.js';
import type { JsonRpcRequest, JsonRpcResponse } from '../jsonrpc/message.js';
import { NOTHING_ASSIGNED } from '../mcp/features.js';
import { compileRules } from '../rules/compile.js';
import { DEFAULT_RULES } from '../rules/defaults.js';
import { builtinTransformers } from '../transformers/index.js';
import { AS_SENT, Exchange } from './exchange.js';
import { builtinChain } from './filters.js';

const log = pino({ level: 'silent' });
const VARIANT = 'io.modelcontextprotocol/server-variant';
const declaring = (features: string[]) => ({
  extensions: { 'io.modelcontextprotocol/content-negotiation': { version: 1, features }, 'io.modelcontextprotocol/server-variants': {} },
});

/** A modern request's filters, as the engine binds them: the default rules, two variants. */
function negotiation(features: string[]) {
  const variants = new VariantCatalog(
    serverVariantsSchema.parse({
      variants: [
        { id: 'full', description: 'all' },
        { id: 'lean', description: 'some', tools: { include: ['weather'] } },
      ],
    }),
  );
  const chain = builtinChain({ rules: compileRules(DEFAULT_RULES, builtinTransformers()), variants });
  return chain.forRequest({ era: 'modern', capabilities: declaring(features), assigned: NOTHING_ASSIGNED, log }, {});
}

const call = (name: string, variant?: string): JsonRpcRequest => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'tools/call',
  params: { name, arguments: {}, ...(variant ? { _meta: { [VARIANT]: variant } } : {}) },
});

/** A response whose result throws when read: proves an exchange relays it without decoding it. */
function undecodable(): JsonRpcResponse {
  return {
    jsonrpc: '2.0',
    id: 1,
    get result(): Record<string, unknown> {
      throw new Error('decoded');
    },
  };
}

describe('an exchange', () => {
  it('with nothing negotiated passes the request and its answer as they are, never reading the result', () => {
    const req = call('weather');
    const exchange = Exchange.open(req, undefined);
    if ('refused' in exchange) throw new Error('refused');
    expect(exchange.request).toBe(req);
    expect(exchange.wantsResult()).toBe(false);
    const frame = { msg: undecodable() };
    expect(exchange.answer(1, frame.msg, frame, AS_SENT, log)).toBe(frame);
  });

  it('is refused at once when the filters refuse the request (a tool outside the variant)', () => {
    const opened = Exchange.open(call('forecast', 'lean'), negotiation([]));
    expect(opened).toMatchObject({ refused: { code: -32602, data: { activeVariant: 'lean' } } });
  });

  it('goes upstream as the filters rewrote it, and annotates an error with its variant', () => {
    const exchange = Exchange.open(call('weather', 'lean'), negotiation([]));
    if ('refused' in exchange) throw new Error('refused');
    expect(exchange.variant).toBe('lean');
    expect(exchange.request.params?._meta).toBeUndefined(); // the proxy serves the variant; the upstream hears none
    const res: JsonRpcResponse = { jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'no' } };
    const answer = exchange.answer(1, res, { msg: res }, AS_SENT, log);
    expect(answer).toEqual({ msg: { jsonrpc: '2.0', id: 1, error: { code: -32000, message: 'no', data: { activeVariant: 'lean' } } } });
  });

  it("shapes a result for the request's feature tags, and a later result (a task's) the same way", async () => {
    const exchange = Exchange.open(call('weather'), negotiation(['format=json']));
    if ('refused' in exchange) throw new Error('refused');
    expect(exchange.wantsResult()).toBe(true);
    const result = { content: [{ type: 'text', text: '{"city":"Bern","n":8}' }] };
    const res: JsonRpcResponse = { jsonrpc: '2.0', id: 1, result };
    const answer = await exchange.answer(1, res, { msg: res }, AS_SENT, log);
    expect(answer).toMatchObject({ msg: { id: 1, result: { structuredContent: { city: 'Bern', n: 8 } } } });
    expect(await exchange.shapeLater(result)).toMatchObject({ structuredContent: { city: 'Bern', n: 8 } });
    // Nothing to reshape: the result as it was.
    const prose = { content: [{ type: 'text', text: 'sunny' }] };
    expect(await exchange.shapeLater(prose)).toEqual(prose);
  });

  it('refuses an answer that would send the client to a URL no client may open, whatever was negotiated', () => {
    for (const negotiated of [undefined, negotiation(['format=json'])]) {
      const exchange = Exchange.open(call('weather'), negotiated);
      if ('refused' in exchange) throw new Error('refused');
      const error = { code: -32042, message: 'open this', data: { elicitations: [{ mode: 'url', url: 'javascript:alert(1)' }] } };
      const res: JsonRpcResponse = { jsonrpc: '2.0', id: 1, error };
      expect(() => exchange.answer(1, res, { msg: res }, AS_SENT, log)).toThrow(/"javascript:" URL/);
    }
  });
});
