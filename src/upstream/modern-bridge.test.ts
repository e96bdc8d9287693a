import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcId, JsonRpcRequest } from '../jsonrpc/message.js';
import { MAX_INPUT_REQUESTS } from './client-rounds.js';
import { bridgedSession, MAX_INPUT_ROUNDS } from './modern-bridge.js';
import type { CallOptions, UpstreamAnswer } from './call.js';

interface Sent {
  req: JsonRpcRequest;
  o: CallOptions;
  answer(result: Record<string, unknown>): void;
}

/** A bridge over an upstream the test answers by hand; what reaches the client is recorded. */
function bridged(capabilities: Record<string, unknown> = { elicitation: {} }) {
  const sent: Sent[] = [];
  const arrived: Array<() => void> = [];
  const toClient: Array<{ msg: any; relatedId?: JsonRpcId }> = [];
  const failures: Array<{ id: JsonRpcId; err: ProxyError }> = [];
  const waiting: Array<[JsonRpcId, boolean]> = [];
  const upstream = {
    mirrorsHeaders: true,
    call: (req: JsonRpcRequest, o: CallOptions) =>
      new Promise<UpstreamAnswer>((resolve, reject) => {
        o.signal?.addEventListener('abort', () => reject(o.signal!.reason), { once: true });
        sent.push({ req, o, answer: (result) => resolve({ status: 200, frame: { msg: { jsonrpc: '2.0', id: req.id, result } } }) });
        arrived.splice(0).forEach((f) => f());
      }),
  };
  const bridge = bridgedSession(
    {
      onMessage: (frame: Frame, relatedId?: JsonRpcId) => toClient.push({ msg: frame.msg, relatedId }),
      onFailure: (id, err) => failures.push({ id, err }),
      onClose: () => undefined,
      onWaiting: (id, on) => waiting.push([id, on]),
    },
    {
      upstream,
      who: { principal: '', clientKey: 'test' },
      server: async () => ({ capabilities: { tools: {} }, serverInfo: { name: 'up', version: '1' } }),
      paramHeaders: async (req) => (req.method === 'tools/call' ? new Map([['mcp-param-region', ['region']]]) : undefined),
      toolsSeen: () => undefined,
      requestTimeoutMs: 5000,
      inputTimeoutMs: 5000,
      log: pino({ level: 'silent' }),
    },
  );
  const next = async (count: number) => {
    while (sent.length < count) await new Promise<void>((resolve) => arrived.push(resolve));
    return sent[count - 1];
  };
  const settled = () => new Promise((resolve) => setTimeout(resolve, 10));
  bridge.send({
    msg: {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities, clientInfo: { name: 'c', version: '1' } },
    },
  });
  return { bridge, sent, next, toClient, failures, waiting, settled };
}

const call = (id: JsonRpcId, name = 'ask', args: Record<string, unknown> = {}): Frame => ({
  msg: { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } },
});
const elicit = (message: string) => ({
  method: 'elicitation/create',
  params: { message, requestedSchema: { type: 'object', properties: {} } },
});

describe('the legacy-session bridge to a modern upstream', () => {
  it("answers initialize from discover in the client's version, and sends each request with the session's _meta and the tool's Mcp-Param headers", async () => {
    const { bridge, next, toClient, settled } = bridged();
    await settled();
    expect(toClient[0].msg.result).toMatchObject({
      protocolVersion: '2025-06-18',
      capabilities: { tools: {} },
      serverInfo: { name: 'up' },
    });
    bridge.send(call(1, 'lookup', { region: 'eu' }));
    const up = await next(1);
    expect(up.req.params?._meta).toMatchObject({
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
      'io.modelcontextprotocol/clientInfo': { name: 'c' },
    });
    expect(up.o.paramHeaders).toEqual(new Map([['mcp-param-region', ['region']]]));
    up.answer({
      content: [],
      resultType: 'complete',
      ttlMs: 5,
      cacheScope: 'public',
      _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'up' } },
    });
    await settled();
    expect(toClient.at(-1)!.msg).toEqual({ jsonrpc: '2.0', id: 1, result: { content: [] } });
  });

  it("puts a round to the client with the call's time limit held, and sends the answers with the server's requestState", async () => {
    const { bridge, next, toClient, waiting, settled } = bridged();
    bridge.send(call(2));
    (await next(1)).answer({ resultType: 'input_required', inputRequests: { a: elicit('A?'), b: elicit('B?') }, requestState: 'opaque-1' });
    await settled();
    const asked = toClient.filter((m) => m.msg.method === 'elicitation/create');
    expect(asked.map((q) => [q.msg.params.message, q.relatedId])).toEqual([
      ['A?', 2],
      ['B?', 2],
    ]);
    expect(waiting).toEqual([[2, true]]);
    for (const q of asked)
      bridge.send({ msg: { jsonrpc: '2.0', id: q.msg.id, result: { action: 'accept', content: { v: q.msg.params.message } } } });
    const retry = await next(2);
    expect(waiting).toEqual([
      [2, true],
      [2, false],
    ]);
    expect(retry.req.id).not.toBe(2);
    expect(retry.req.params).toMatchObject({
      requestState: 'opaque-1',
      inputResponses: { a: { content: { v: 'A?' } }, b: { content: { v: 'B?' } } },
    });
    retry.answer({ content: [{ type: 'text', text: 'done' }] });
    await settled();
    expect(toClient.at(-1)!.msg).toMatchObject({ id: 2, result: { content: [{ text: 'done' }] } });
  });

  it('cuts off a server that keeps asking, asks too much at once, asks for what the client did not declare, or answers with a task', async () => {
    const { bridge, next, toClient, failures, settled } = bridged();
    bridge.send(call(3));
    for (let round = 1; round <= MAX_INPUT_ROUNDS; round++) {
      (await next(round)).answer({ resultType: 'input_required', requestState: `s${round}` });
    }
    await settled();
    expect(failures.at(-1)).toMatchObject({ id: 3, err: { code: 'UPSTREAM_PROTOCOL' } });

    const many = Object.fromEntries(Array.from({ length: MAX_INPUT_REQUESTS + 1 }, (_, i) => [`k${i}`, elicit(`${i}`)]));
    bridge.send(call(4));
    (await next(MAX_INPUT_ROUNDS + 1)).answer({ resultType: 'input_required', inputRequests: many });
    bridge.send(call(5));
    (await next(MAX_INPUT_ROUNDS + 2)).answer({ resultType: 'input_required', inputRequests: { r: { method: 'roots/list', params: {} } } });
    bridge.send(call(6));
    (await next(MAX_INPUT_ROUNDS + 3)).answer({ resultType: 'task', taskId: 't' });
    bridge.send({ msg: { jsonrpc: '2.0', id: 7, method: 'tools/list', params: {} } });
    (await next(MAX_INPUT_ROUNDS + 4)).answer({ resultType: 'input_required', inputRequests: { a: elicit('?') } });
    await settled();
    expect(failures.slice(1).map((f) => [f.id, f.err.code])).toEqual([
      [4, 'UPSTREAM_PROTOCOL'],
      [5, 'MISSING_CLIENT_CAPABILITY'],
      [6, 'UPSTREAM_PROTOCOL'],
      [7, 'UPSTREAM_PROTOCOL'],
    ]);
    expect(toClient.filter((m) => m.msg.method !== undefined)).toEqual([]); // no input request ever reached the client
  });

  it("fails the call with an internal error when the client refuses an input request, and withdraws the round's others", async () => {
    const { bridge, next, toClient, settled } = bridged();
    bridge.send(call(8));
    (await next(1)).answer({ resultType: 'input_required', inputRequests: { a: elicit('A?'), b: elicit('B?') } });
    await settled();
    const [a, b] = toClient.filter((m) => m.msg.method === 'elicitation/create');
    bridge.send({ msg: { jsonrpc: '2.0', id: a.msg.id, error: { code: -32601, message: 'no handler' } } });
    await settled();
    expect(toClient.find((m) => m.msg.id === 8)?.msg.error).toMatchObject({ code: -32603, data: { clientCode: -32601 } });
    expect(toClient.find((m) => m.msg.method === 'notifications/cancelled')?.msg.params).toMatchObject({ requestId: b.msg.id });
  });

  it("closes the upstream request when the client cancels, withdraws its input requests, and keeps a reused id's new request cancellable", async () => {
    const { bridge, sent, next, toClient, settled } = bridged();
    bridge.send(call(9));
    (await next(1)).answer({ resultType: 'input_required', inputRequests: { a: elicit('A?') } });
    await settled();
    const asked = toClient.find((m) => m.msg.method === 'elicitation/create')!;
    bridge.send({ msg: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } } });
    await settled();
    expect(toClient.find((m) => m.msg.method === 'notifications/cancelled')?.msg.params.requestId).toBe(asked.msg.id);
    expect(toClient.some((m) => m.msg.id === 9)).toBe(false);
    // Id 9 again, then cancelled: its own upstream request is closed.
    bridge.send(call(9));
    const again = await next(2);
    bridge.send({ msg: { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 9 } } });
    expect(again.o.signal?.aborted).toBe(true);
    expect(sent).toHaveLength(2);
  });
});
