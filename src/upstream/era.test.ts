import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { ProxyError } from '../jsonrpc/errors.js';
import { classifyDiscover, refusedHandshake, UpstreamEra, type EraSetting } from './era.js';
import type { UpstreamAnswer } from './call.js';

const answer = (status: number, msg: Record<string, unknown>): UpstreamAnswer => ({
  status,
  frame: { msg: { jsonrpc: '2.0', id: 1, ...msg } as never },
});
const DISCOVERED = {
  result: {
    supportedVersions: ['2026-07-28'],
    capabilities: { tools: {} },
    instructions: 'hi',
    resultType: 'complete',
    _meta: { 'io.modelcontextprotocol/serverInfo': { name: 's', version: '1' } },
  },
};
const log = pino({ level: 'silent' });

/** An era found by asking `discover`; the upstream refuses initialize unless `takesInitialize` says otherwise. */
function eraOf(
  setting: EraSetting,
  discover: () => Promise<UpstreamAnswer>,
  askFirst: boolean,
  takesInitialize: () => Promise<boolean> = async () => false,
): UpstreamEra {
  return new UpstreamEra({ setting, discover, takesInitialize, askFirst, log });
}

describe('the upstream era', () => {
  it('is modern for a discover result that lists 2026-07-28, legacy for errors and other versions, unknown for error statuses', () => {
    expect(classifyDiscover(answer(200, DISCOVERED))).toEqual({
      era: 'modern',
      server: { protocolVersion: '2026-07-28', capabilities: { tools: {} }, instructions: 'hi', serverInfo: { name: 's', version: '1' } },
    });
    expect(classifyDiscover(answer(400, { error: { code: -32000, message: 'Bad Request: Server not initialized' } }))).toEqual({
      era: 'legacy',
    });
    expect(classifyDiscover(answer(200, { error: { code: -32601, message: 'Method not found' } }))).toEqual({ era: 'legacy' });
    expect(classifyDiscover(answer(200, { result: { supportedVersions: ['2099-01-01'] } }))).toEqual({ era: 'legacy' });
    for (const status of [401, 403, 408, 429, 500, 503])
      expect(classifyDiscover(answer(status, { error: { code: -32603, message: 'x' } }))).toBeUndefined();
  });

  it('asks once, is kept, asks again once forgotten; an unreachable upstream decides nothing and a silent one is legacy', async () => {
    let asked = 0;
    let reply: () => Promise<UpstreamAnswer> = async () => answer(200, DISCOVERED);
    const era = eraOf('auto', () => (asked++, reply()), true);
    expect(era.now).toBeUndefined();
    expect(await Promise.all([era.resolve(), era.resolve()])).toEqual(['modern', 'modern']);
    expect(asked).toBe(1);
    expect(era.now).toBe('modern');
    reply = () => Promise.reject(new ProxyError('UPSTREAM_UNREACHABLE', 'refused'));
    era.refusedLegacy();
    expect(await era.resolve()).toBe('legacy');
    expect(era.now).toBeUndefined();
    await expect(era.server()).rejects.toThrow(/refused/);
    // Within 30 s of a failed question, new uses do not each ask again.
    const before = asked;
    expect(await era.resolve()).toBe('legacy');
    expect(asked).toBe(before);
    const silent = eraOf('auto', () => Promise.reject(new ProxyError('REQUEST_TIMEOUT', 'slow')), true);
    expect(await silent.resolve()).toBe('legacy');
    expect(silent.now).toBe('legacy');
  });

  it('keeps a known modern upstream modern when a later question times out or gets an error status', async () => {
    let reply: () => Promise<UpstreamAnswer> = async () => answer(200, DISCOVERED);
    const era = eraOf('auto', () => reply(), true);
    expect(await era.resolve()).toBe('modern');
    reply = () => Promise.reject(new ProxyError('REQUEST_TIMEOUT', 'slow'));
    await expect(era.server(true)).rejects.toThrow(/slow/);
    reply = async () => answer(429, { error: { code: -32000, message: 'busy' } });
    await expect(era.server(true)).rejects.toThrow(/429/);
    expect(era.now).toBe('modern');
  });

  it('takes a configured era without asking; a stdio upstream is legacy until it refuses the legacy handshake', async () => {
    expect(eraOf('legacy', async () => answer(200, DISCOVERED), true).now).toBe('legacy');
    const stdio = eraOf('auto', async () => answer(200, DISCOVERED), false);
    expect(stdio.now).toBe('legacy');
    stdio.refusedLegacy();
    expect(stdio.now).toBe('modern');
    expect(await stdio.server()).toMatchObject({ serverInfo: { name: 's' } });
    const modern = eraOf('modern', async () => answer(400, { error: { code: -32000, message: 'no' } }), true);
    expect(modern.now).toBe('modern');
    await expect(modern.server()).rejects.toThrow(/server\/discover/);
  });

  it('takes a refusal of initialize with UnsupportedProtocolVersion, as an error to a client or a failure of its own, only when found out', () => {
    const refusal = { code: -32022, message: 'Unsupported protocol version' };
    const failure = new ProxyError('UPSTREAM_PROTOCOL', 'refused', { upstreamCode: -32022 });
    const configured = eraOf('legacy', async () => answer(200, DISCOVERED), false);
    expect(configured.tookRefusal(refusal)).toBe(false);
    expect(configured.tookRefusal(failure)).toBe(false);
    expect(configured.now).toBe('legacy');
    const stdio = eraOf('auto', async () => answer(200, DISCOVERED), false);
    expect(stdio.tookRefusal({ code: -32602, message: 'Unsupported protocol version' })).toBe(false);
    expect(stdio.tookRefusal(new ProxyError('UPSTREAM_PROTOCOL', 'refused', { upstreamCode: -32602 }))).toBe(false);
    expect(stdio.tookRefusal(Object.assign(new Error('not the upstream'), { code: -32022 }))).toBe(false);
    expect(stdio.now).toBe('legacy');
    expect(stdio.tookRefusal(failure)).toBe(true);
    expect(stdio.now).toBe('modern');
    expect(eraOf('auto', async () => answer(200, DISCOVERED), false).tookRefusal(refusal)).toBe(true);
  });

  it('is dual when an upstream that answers discover takes initialize too, asked once; modern when it refuses it', async () => {
    let initializes = 0;
    let takes: () => Promise<boolean> = async () => true;
    const era = eraOf(
      'auto',
      async () => answer(200, DISCOVERED),
      true,
      () => (initializes++, takes()),
    );
    expect(await Promise.all([era.resolve(), era.resolve()])).toEqual(['dual', 'dual']);
    expect(await era.server()).toMatchObject({ serverInfo: { name: 's' } });
    // A fresh discover (readiness) keeps what initialize showed.
    await era.server(true);
    expect(initializes).toBe(1);
    expect(era.now).toBe('dual');
    // A session refused as only a 2026-07-28 server does: asked again, both questions.
    takes = async () => false;
    era.refusedLegacy();
    expect(await era.resolve()).toBe('modern');
    expect(initializes).toBe(2);
  });

  it('takes an upstream that said nothing to initialize as dual until the next question, which asks again', async () => {
    let takes: () => Promise<boolean> = () => Promise.reject(new ProxyError('UPSTREAM_UNREACHABLE', 'reset'));
    const era = eraOf(
      'auto',
      async () => answer(200, DISCOVERED),
      true,
      () => takes(),
    );
    expect(await era.resolve()).toBe('dual');
    takes = async () => false;
    await era.server(true);
    expect(era.now).toBe('modern');
  });

  it('takes a configured dual era without asking initialize', async () => {
    const era = eraOf(
      'dual',
      async () => answer(200, DISCOVERED),
      false,
      () => Promise.reject(new Error('not asked')),
    );
    expect(era.now).toBe('dual');
    expect(await era.server()).toMatchObject({ instructions: 'hi' });
    expect(era.now).toBe('dual');
  });

  it("counts a JSON-RPC error or HTTP 400, 404 or 405 to the proxy's initialize as a refusal, nothing else", () => {
    expect(refusedHandshake(new ProxyError('UPSTREAM_START_FAILED', 'x', { upstreamCode: -32022 }))).toBe(true);
    expect(refusedHandshake(new ProxyError('UPSTREAM_START_FAILED', 'x', { upstreamCode: -32601 }))).toBe(true);
    for (const status of [400, 404, 405]) expect(refusedHandshake(new ProxyError('UPSTREAM_START_FAILED', 'x', { status }))).toBe(true);
    for (const status of [401, 403, 429, 500, 503])
      expect(refusedHandshake(new ProxyError('UPSTREAM_START_FAILED', 'x', { status }))).toBe(false);
    expect(refusedHandshake(new ProxyError('REQUEST_TIMEOUT', 'slow'))).toBe(false);
    expect(refusedHandshake(new ProxyError('UPSTREAM_UNREACHABLE', 'reset'))).toBe(false);
  });
});
