import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ProxyError } from '../jsonrpc/errors.js';
import { readAnswer } from '../jsonrpc/envelope.js';
import type { Frame, JsonRpcRequest, JsonRpcResponse } from '../jsonrpc/message.js';
import { CallAbort } from './call-abort.js';
import type { CallOptions, Caller, UpstreamAnswer, UpstreamCall } from './call.js';
import { ListCache } from './list-cache.js';

const log = pino({ level: 'silent' });
const ALICE: Caller = { principal: 'alice', clientKey: 'alice', capabilities: {} };
const BOB: Caller = { principal: 'bob', clientKey: 'bob', capabilities: {} };

/** An upstream whose answers the test gives by hand: each call waits until answered or aborted. */
class Upstream implements UpstreamCall {
  readonly calls: Array<{ req: JsonRpcRequest; o: CallOptions; answer(a: UpstreamAnswer): void; fail(e: Error): void }> = [];
  aborted = 0;

  call(req: JsonRpcRequest, o: CallOptions): Promise<UpstreamAnswer> {
    return new Promise((resolve, reject) => {
      this.calls.push({ req, o, answer: resolve, fail: reject });
      o.signal?.addEventListener('abort', () => {
        this.aborted++;
        reject(o.signal!.reason);
      });
    });
  }
}

/** An answer as the transports read it: undecoded bytes. */
function answer(id: JsonRpcRequest['id'], result: Record<string, unknown>): UpstreamAnswer {
  const read = readAnswer(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id, result })), 64);
  return { frame: (read as { frame: Frame }).frame, status: 200 };
}

const list = (id: number, params: Record<string, unknown> = {}): JsonRpcRequest => ({ jsonrpc: '2.0', id, method: 'tools/list', params });
const TOOLS = { tools: [{ name: 'a', inputSchema: { type: 'object' } }] };
const resultOf = (a: UpstreamAnswer) => a.frame.msg as JsonRpcResponse;

function setup(o: Partial<ConstructorParameters<typeof ListCache>[0]> = {}) {
  const upstream = new Upstream();
  const cache = new ListCache({ maxAgeMs: 60_000, maxEntries: 10, maxBytes: 1 << 20, stateless: false, log, ...o });
  const call = cache.wrap(upstream);
  return { upstream, cache, call };
}

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('ListCache', () => {
  it('shares one upstream request among identical requests under way, each answered under its own id', async () => {
    const { upstream, cache, call } = setup();
    const first = call(list(1), { caller: ALICE, timeoutMs: 1000 });
    const second = call(list(2), { caller: ALICE, timeoutMs: 1000 });
    expect(upstream.calls).toHaveLength(1);
    upstream.calls[0].answer(answer(1, TOOLS));
    const [a, b] = await Promise.all([first, second]);
    expect([resultOf(a).id, resultOf(b).id]).toEqual([1, 2]);
    expect(resultOf(b).result).toEqual(TOOLS);
    // Each client decodes its own copy: what one's filters do to it, no other sees.
    (resultOf(a).result!.tools as unknown[]).pop();
    const third = await call(list(3), { caller: ALICE, timeoutMs: 1000 });
    expect(resultOf(third)).toMatchObject({ id: 3, result: TOOLS });
    expect(upstream.calls).toHaveLength(1);
    expect(cache.counts['tools/list']).toEqual({ hit: 2, miss: 1 });
  });

  it('lets one waiter cancel without failing the others, and cancels upstream when none waits', async () => {
    const { upstream, call } = setup();
    const leaving = new CallAbort();
    const left = call(list(1), { caller: ALICE, timeoutMs: 1000, signal: leaving });
    const staying = call(list(2), { caller: ALICE, timeoutMs: 1000 });
    leaving.abort(new ProxyError('CLIENT_GONE', 'gone'));
    await expect(left).rejects.toMatchObject({ code: 'CLIENT_GONE' });
    expect(upstream.aborted).toBe(0);
    upstream.calls[0].answer(answer(1, TOOLS));
    expect(resultOf(await staying).id).toBe(2);

    const { upstream: lone, call: alone } = setup();
    const only = new CallAbort();
    const gone = alone(list(1), { caller: ALICE, timeoutMs: 1000, signal: only });
    only.abort(new ProxyError('CLIENT_GONE', 'gone'));
    await expect(gone).rejects.toMatchObject({ code: 'CLIENT_GONE' });
    expect(lone.aborted).toBe(1);
    // Nobody joins the cancelled request: the next one asks again.
    void alone(list(2), { caller: ALICE, timeoutMs: 1000 });
    expect(lone.calls).toHaveLength(2);
  });

  it('never keeps a failure or an error answer', async () => {
    const { upstream, call } = setup();
    const failed = call(list(1), { caller: ALICE, timeoutMs: 1000 });
    const joined = call(list(2), { caller: ALICE, timeoutMs: 1000 });
    upstream.calls[0].fail(new ProxyError('REQUEST_TIMEOUT', 'late'));
    await expect(failed).rejects.toMatchObject({ code: 'REQUEST_TIMEOUT' });
    await expect(joined).rejects.toMatchObject({ code: 'REQUEST_TIMEOUT' });
    const refused = call(list(3), { caller: ALICE, timeoutMs: 1000 });
    upstream.calls[1].answer({ frame: { msg: { jsonrpc: '2.0', id: 3, error: { code: -32603, message: 'no' } } }, status: 200 });
    expect(resultOf(await refused).error).toMatchObject({ message: 'no' });
    // An answer under another HTTP status (the proxy's credentials refused) reaches every waiter with it.
    const refusedHttp = call(list(4), { caller: ALICE, timeoutMs: 1000 });
    const joinedHttp = call(list(5), { caller: ALICE, timeoutMs: 1000 });
    upstream.calls[2].answer({ frame: { msg: { jsonrpc: '2.0', id: 4, error: { code: -32001, message: 'unauthorized' } } }, status: 401 });
    expect((await refusedHttp).status).toBe(401);
    expect(await joinedHttp).toMatchObject({ status: 401, frame: { msg: { id: 5 } } });
    void call(list(6), { caller: ALICE, timeoutMs: 1000 });
    expect(upstream.calls).toHaveLength(4);
  });

  it('keys by principal, cursor and the request shape, not by client info or trace context', async () => {
    const { upstream, call } = setup();
    const meta = (extra: Record<string, unknown>) => ({
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, ...extra },
    });
    const first = call(list(1, meta({ 'io.modelcontextprotocol/clientInfo': { name: 'x' } })), { caller: ALICE, timeoutMs: 1000 });
    upstream.calls[0].answer(answer(1, TOOLS));
    await first;
    const same = meta({
      'io.modelcontextprotocol/clientInfo': { name: 'y' },
      traceparent: '00-' + '1'.repeat(32) + '-' + '2'.repeat(16) + '-01',
    });
    await call(list(2, same), { caller: ALICE, timeoutMs: 1000 });
    expect(upstream.calls).toHaveLength(1);
    for (const [params, caller] of [
      [meta({}), BOB],
      [{ ...meta({}), cursor: 'p2' }, ALICE],
      [meta({ 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } }), ALICE],
      [meta({ 'io.modelcontextprotocol/server-variant': 'compact' }), ALICE],
    ] as const)
      void call(list(3, params), { caller, timeoutMs: 1000 });
    expect(upstream.calls).toHaveLength(5);
    // The proxy's own requests (no caller) and requests with a progress token go alone.
    void call(list(4), { timeoutMs: 1000 });
    void call(list(5, { _meta: { progressToken: 1 } }), { caller: ALICE, timeoutMs: 1000 });
    expect(upstream.calls).toHaveLength(7);
  });

  it('drops a list on its list_changed, and does not keep an answer the change overtook', async () => {
    const { upstream, cache, call } = setup();
    const first = call(list(1), { caller: ALICE, timeoutMs: 1000 });
    upstream.calls[0].answer(answer(1, TOOLS));
    await first;
    cache.heard({ jsonrpc: '2.0', method: 'notifications/prompts/list_changed' });
    await call(list(2), { caller: ALICE, timeoutMs: 1000 });
    expect(upstream.calls).toHaveLength(1);
    cache.heard({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' });
    const overtaken = call(list(3), { caller: ALICE, timeoutMs: 1000 });
    // Heard on a call's own notifications too (a listen stream through the same upstream).
    upstream.calls[1].o.onNotification?.({ msg: { jsonrpc: '2.0', method: 'notifications/tools/list_changed' } });
    upstream.calls[1].answer(answer(3, TOOLS));
    await overtaken;
    void call(list(4), { caller: ALICE, timeoutMs: 1000 });
    expect(upstream.calls).toHaveLength(3);
  });

  it("honours a 2026-07-28 server's ttlMs and cacheScope, and the byte and entry budgets", async () => {
    const kept = async (result: Record<string, unknown>, o: Parameters<typeof setup>[0] = {}) => {
      const { upstream, call } = setup(o);
      const first = call(list(1), { caller: ALICE, timeoutMs: 1000 });
      upstream.calls[0].answer(answer(1, result));
      await first;
      void call(list(2), { caller: ALICE, timeoutMs: 1000 });
      await settle();
      return upstream.calls.length === 1;
    };
    const complete = { ...TOOLS, resultType: 'complete', cacheScope: 'public' };
    expect(await kept({ ...complete, ttlMs: 60_000 })).toBe(true);
    expect(await kept({ ...complete, ttlMs: 0 })).toBe(false);
    expect(await kept({ ...TOOLS, resultType: 'complete' })).toBe(false); // no ttlMs: 0
    expect(await kept({ ...complete, ttlMs: 60_000, cacheScope: 'private' })).toBe(true);
    expect(await kept({ ...complete, ttlMs: 60_000, cacheScope: 'private' }, { stateless: true })).toBe(false);
    expect(await kept({ ...TOOLS, resultType: 'input_required' })).toBe(false);
    expect(await kept(TOOLS, { maxBytes: 100 })).toBe(false);
    expect(await kept(TOOLS, { maxAgeMs: 0 })).toBe(false);

    // A copy handed out later says what is left of the server's ttlMs; a legacy answer, which has none, goes as its bytes.
    const { upstream: server, call: viaCache } = setup();
    const fetched = viaCache(list(1), { caller: ALICE, timeoutMs: 1000 });
    server.calls[0].answer(answer(1, { ...complete, ttlMs: 60_000 }));
    await fetched;
    const since = Date.now();
    while (Date.now() < since + 3); // the clock moves on (a bounded wait: 3 ms)
    const later = await viaCache(list(2), { caller: ALICE, timeoutMs: 1000 });
    expect(resultOf(later).result?.ttlMs).toBeLessThanOrEqual(60_000 - 3);
    expect(resultOf(later).result?.ttlMs).toBeGreaterThan(50_000);
    const { upstream: legacy, call: viaLegacy } = setup();
    const first = viaLegacy(list(1), { caller: ALICE, timeoutMs: 1000 });
    legacy.calls[0].answer(answer(1, TOOLS));
    await first;
    expect((await viaLegacy(list(2), { caller: ALICE, timeoutMs: 1000 })).frame.raw).toBeDefined();

    const { upstream, cache, call } = setup({ maxEntries: 2 });
    for (let id = 1; id <= 3; id++) {
      const got = call(list(id, { cursor: String(id) }), { caller: ALICE, timeoutMs: 1000 });
      upstream.calls[id - 1].answer(answer(id, TOOLS));
      await got;
    }
    expect(cache.size.entries).toBe(2);
    void call(list(4, { cursor: '1' }), { caller: ALICE, timeoutMs: 1000 }); // the least recently used went first
    expect(upstream.calls).toHaveLength(4);
  });
});
