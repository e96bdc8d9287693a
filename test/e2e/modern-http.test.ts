/**
 * The modern era on the wire, with a raw HTTP client: every rejection the 2026-07-28 revision
 * defines (status, code, id, data), the era routing that keeps legacy traffic away from modern
 * checks, what a modern result carries, and input_required rounds: several requests at once,
 * several rounds, tampered, replayed and expired requestState, an undeclared capability.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INIT, meta, modern, rawPost, rawSession } from '../helpers/raw.js';
import { commandLine, eventually, fixtureArgv, startProxy, stopAll, type Running } from '../helpers/processes.js';

const V = '2026-07-28';
const FULL_CAPS = { elicitation: { form: {} }, sampling: {}, roots: {} };

describe('modern requests on the HTTP endpoint (conformance fixture over stdio)', () => {
  let proxy: Running;
  let url: string;
  const send = (r: { body: unknown; headers: Record<string, string> }, over: Record<string, string | undefined> = {}) => {
    const headers = { ...r.headers, ...over };
    for (const [k, v] of Object.entries(over)) if (v === undefined) delete headers[k];
    return rawPost(url, r.body, headers as Record<string, string>);
  };

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'modern-http-'));
    const config = join(dir, 'proxy.yaml');
    writeFileSync(
      config,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('conformance-server')))}\nmodern:\n  inputTimeoutMs: 1500\n  cache:\n    tools/list: { ttlMs: 60000, cacheScope: public }\n    resources/read: { ttlMs: 30000, cacheScope: public }\n`,
    );
    proxy = await startProxy(['--config', config]);
    url = proxy.url;
  }, 30_000);

  afterAll(async () => {
    await proxy?.stop();
    await stopAll();
  });

  it('rejects what the revision rejects, with its status, code, the request id and data', async () => {
    const cases: Array<[string, Promise<Awaited<ReturnType<typeof rawPost>>>, number, number, (data: any) => void]> = [
      [
        'no clientCapabilities',
        rawPost(
          url,
          { jsonrpc: '2.0', id: 11, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/protocolVersion': V } } },
          { 'mcp-protocol-version': V, 'mcp-method': 'tools/list' },
        ),
        400,
        -32602,
        () => undefined,
      ],
      [
        'no _meta, modern header',
        rawPost(
          url,
          { jsonrpc: '2.0', id: 12, method: 'tools/list', params: {} },
          { 'mcp-protocol-version': V, 'mcp-method': 'tools/list' },
        ),
        400,
        -32602,
        () => undefined,
      ],
      [
        'unsupported version',
        rawPost(
          url,
          {
            jsonrpc: '2.0',
            id: 13,
            method: 'tools/list',
            params: { _meta: { ...meta(), 'io.modelcontextprotocol/protocolVersion': '1900-01-01' } },
          },
          { 'mcp-protocol-version': '1900-01-01', 'mcp-method': 'tools/list' },
        ),
        400,
        -32022,
        (d) => expect(d).toMatchObject({ supported: expect.arrayContaining([V]), requested: '1900-01-01' }),
      ],
      ['version header missing', send(modern(14, 'tools/list'), { 'mcp-protocol-version': undefined }), 400, -32020, () => undefined],
      ['version header differs', send(modern(15, 'tools/list'), { 'mcp-protocol-version': '2025-11-25' }), 400, -32020, () => undefined],
      ['Mcp-Method differs', send(modern(16, 'tools/list'), { 'mcp-method': 'prompts/list' }), 400, -32020, () => undefined],
      [
        'Mcp-Name missing',
        send(modern(17, 'tools/call', { name: 'test_simple_text', arguments: {} }), { 'mcp-name': undefined }),
        400,
        -32020,
        () => undefined,
      ],
      [
        'Mcp-Name differs',
        send(modern(18, 'tools/call', { name: 'test_simple_text', arguments: {} }), { 'mcp-name': 'test_error_handling' }),
        400,
        -32020,
        () => undefined,
      ],
      [
        'Mcp-Name bad base64',
        send(modern(19, 'tools/call', { name: 'test_simple_text', arguments: {} }), { 'mcp-name': '=?base64?***?=' }),
        400,
        -32020,
        () => undefined,
      ],
      ['removed: ping', send(modern(20, 'ping')), 404, -32601, () => undefined],
      ['removed: logging/setLevel', send(modern(21, 'logging/setLevel', { level: 'info' })), 404, -32601, () => undefined],
      [
        'removed: resources/subscribe',
        send(modern(22, 'resources/subscribe', { uri: 'test://static-text' })),
        404,
        -32601,
        () => undefined,
      ],
      ['unknown method', send(modern(23, 'no/such')), 404, -32601, () => undefined],
      [
        'bad logLevel',
        send(modern(24, 'tools/list', { _meta: { 'io.modelcontextprotocol/logLevel': 'loud' } })),
        400,
        -32602,
        () => undefined,
      ],
    ];
    for (const [what, pending, status, code, checkData] of cases) {
      const res = await pending;
      expect({ what, status: res.status }).toEqual({ what, status });
      const [msg] = res.messages;
      expect({ what, code: msg.error?.code }).toEqual({ what, code });
      expect(msg.id).toBe(JSON.parse(JSON.stringify(msg)).id);
      expect(typeof msg.error.data?.code).toBe('string');
      checkData(msg.error.data);
    }
    const batch = await rawPost(url, [modern(30, 'tools/list').body, modern(31, 'tools/list').body], {
      'mcp-protocol-version': V,
      'mcp-method': 'tools/list',
    });
    expect(batch.status).toBe(400);
    expect(batch.messages[0].error.code).toBe(-32600);
    // Ids are echoed on rejections.
    const rejected = await send(modern(77, 'ping'));
    expect(rejected.messages[0].id).toBe(77);
  });

  it('accepts the base64 sentinel and serves a modern result with resultType, cache hints and serverInfo', async () => {
    const name = `=?base64?${Buffer.from('test_simple_text').toString('base64')}?=`;
    const call = await send(modern(40, 'tools/call', { name: 'test_simple_text', arguments: {} }), { 'mcp-name': name });
    expect(call.status).toBe(200);
    const result = call.messages[0].result;
    expect(result.resultType).toBe('complete');
    expect(result._meta['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'conformance-fixture-server' });
    expect(result.ttlMs).toBeUndefined();
    const list = (await send(modern(41, 'tools/list'))).messages[0].result;
    expect(list).toMatchObject({ resultType: 'complete', ttlMs: 60000, cacheScope: 'public' });
    const read = (await send(modern(42, 'resources/read', { uri: 'test://static-text' }))).messages[0].result;
    expect(read).toMatchObject({ resultType: 'complete', ttlMs: 30000, cacheScope: 'public' });
    // A read that needed the client's input is never cacheable.
    const asked = (await send(modern(44, 'resources/read', { uri: 'test://needs-roots' }, FULL_CAPS))).messages[0].result;
    expect(asked).toMatchObject({ resultType: 'input_required', inputRequests: { client_roots: { method: 'roots/list' } } });
    expect(asked.ttlMs).toBeUndefined();
    const answered = (
      await send(
        modern(
          45,
          'resources/read',
          {
            uri: 'test://needs-roots',
            inputResponses: { client_roots: { roots: [{ uri: 'file:///r' }] } },
            requestState: asked.requestState,
          },
          FULL_CAPS,
        ),
      )
    ).messages[0].result;
    expect(answered).toMatchObject({ resultType: 'complete', ttlMs: 0, cacheScope: 'private', contents: [{ text: 'roots: file:///r' }] });
    const discover = (await send(modern(43, 'server/discover'))).messages[0].result;
    expect(discover).toMatchObject({ resultType: 'complete', supportedVersions: [V, '2025-11-25'], ttlMs: 0, cacheScope: 'private' });
    expect(discover.capabilities.extensions['io.modelcontextprotocol/content-negotiation']).toEqual({});
    expect(discover.capabilities.tasks).toBeUndefined();
    expect(discover._meta['io.modelcontextprotocol/serverInfo'].name).toBe('conformance-fixture-server');
  });

  it('keeps legacy traffic legacy: initialize, sessions and unversioned requests never meet modern checks', async () => {
    const init = await rawPost(url, INIT);
    expect(init.status).toBe(200);
    expect(init.messages[0].result.protocolVersion).toBe('2025-11-25');
    expect(init.messages[0].result.resultType).toBeUndefined();
    const headers = await rawSession(url);
    // A legacy session's request is relayed as it is, even with no Mcp-Method header.
    const list = await rawPost(url, { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} }, headers);
    expect(list.status).toBe(200);
    expect(list.messages[0].result.resultType).toBeUndefined();
    const ping = await rawPost(url, { jsonrpc: '2.0', id: 3, method: 'ping' }, headers);
    expect(ping.messages[0].result).toEqual({});
    // No session, no version: a legacy client that skipped initialize.
    const stray = await rawPost(url, { jsonrpc: '2.0', id: 4, method: 'tools/list' });
    expect(stray.status).toBe(400);
    expect(stray.text).toContain('Mcp-Session-Id');
  });

  it('bridges several input requests asked at once, then several rounds, to the final result', async () => {
    const together = modern(60, 'tools/call', { name: 'test_input_together', arguments: {} }, FULL_CAPS);
    const first = (await send(together)).messages[0].result;
    expect(first.resultType).toBe('input_required');
    const methods = Object.values(first.inputRequests)
      .map((r: any) => r.method)
      .sort();
    expect(methods).toEqual(['elicitation/create', 'roots/list', 'sampling/createMessage']);
    const answers: Record<string, unknown> = {};
    for (const [key, r] of Object.entries<any>(first.inputRequests)) {
      answers[key] =
        r.method === 'elicitation/create'
          ? { action: 'accept', content: { name: 'Ada' } }
          : r.method === 'roots/list'
            ? { roots: [{ uri: 'file:///work', name: 'work' }] }
            : { model: 'm', role: 'assistant', content: { type: 'text', text: 'forty-two' } };
    }
    const retry = modern(
      61,
      'tools/call',
      { name: 'test_input_together', arguments: {}, inputResponses: answers, requestState: first.requestState },
      FULL_CAPS,
    );
    const done = (await send(retry)).messages[0].result;
    expect(done.resultType).toBe('complete');
    expect(done.content[0].text).toContain('"name":"Ada"');
    expect(done.content[0].text).toContain('forty-two');
    expect(done.content[0].text).toContain('file:///work');
    // A replay of a state already answered is refused.
    const replay = (await send({ ...retry, body: { ...retry.body, id: 62 } })).messages[0];
    expect(replay.error).toMatchObject({ code: -32602, data: { code: 'INVALID_REQUEST_STATE' } });

    const rounds = modern(63, 'tools/call', { name: 'test_input_two_rounds', arguments: {} }, FULL_CAPS);
    const r1 = (await send(rounds)).messages[0].result;
    const [k1, q1] = Object.entries<any>(r1.inputRequests)[0];
    expect(q1.method).toBe('elicitation/create');
    const r2 = (
      await send(
        modern(
          64,
          'tools/call',
          {
            name: 'test_input_two_rounds',
            arguments: {},
            inputResponses: { [k1]: { action: 'accept', content: { name: 'Bo' } } },
            requestState: r1.requestState,
          },
          FULL_CAPS,
        ),
      )
    ).messages[0].result;
    expect(r2.resultType).toBe('input_required');
    const [k2, q2] = Object.entries<any>(r2.inputRequests)[0];
    expect(q2.method).toBe('sampling/createMessage');
    const r3 = (
      await send(
        modern(
          65,
          'tools/call',
          {
            name: 'test_input_two_rounds',
            arguments: {},
            inputResponses: { [k2]: { model: 'm', role: 'assistant', content: { type: 'text', text: 'ok' } } },
            requestState: r2.requestState,
          },
          FULL_CAPS,
        ),
      )
    ).messages[0].result;
    expect(r3.resultType).toBe('complete');
    expect(r3.content[0].text).toBe('round 1: {"name":"Bo"}; round 2: {"type":"text","text":"ok"}');
  });

  it('refuses tampered state, state for other arguments, and expired state, and cancels a call nobody resumes', async () => {
    const ask = modern(70, 'tools/call', { name: 'test_elicitation', arguments: { message: 'who?' } }, FULL_CAPS);
    const first = (await send(ask)).messages[0].result;
    expect(first.resultType).toBe('input_required');
    const key = Object.keys(first.inputRequests)[0];
    const responses = { [key]: { action: 'accept', content: { username: 'u', email: 'e@example.com' } } };
    const state: string = first.requestState;
    const tampered = state.slice(0, -3) + (state.endsWith('AAA') ? 'BBB' : 'AAA');
    const bad = (
      await send(
        modern(
          71,
          'tools/call',
          { name: 'test_elicitation', arguments: { message: 'who?' }, inputResponses: responses, requestState: tampered },
          FULL_CAPS,
        ),
      )
    ).messages[0];
    expect(bad.error).toMatchObject({ code: -32602, data: { code: 'INVALID_REQUEST_STATE' } });
    expect(JSON.stringify(bad.error)).not.toContain('call');
    const other = (
      await send(
        modern(
          72,
          'tools/call',
          { name: 'test_elicitation', arguments: { message: 'someone else' }, inputResponses: responses, requestState: state },
          FULL_CAPS,
        ),
      )
    ).messages[0];
    expect(other.error).toMatchObject({ code: -32602, data: { code: 'INVALID_REQUEST_STATE' } });
    // Nobody resumes: after inputTimeoutMs the proxy ends the call upstream and says so.
    await eventually(() => proxy.stderr().includes('got no retry in time'), 10_000, 'the parked call to expire');
    const late = (
      await send(
        modern(
          73,
          'tools/call',
          { name: 'test_elicitation', arguments: { message: 'who?' }, inputResponses: responses, requestState: state },
          FULL_CAPS,
        ),
      )
    ).messages[0];
    expect(late.error).toMatchObject({ code: -32602, data: { code: 'INVALID_REQUEST_STATE' } });
    // The proxy still serves.
    expect((await send(modern(74, 'tools/list'))).status).toBe(200);
  });

  it('answers a retry sent twice at once exactly once; the other copy is refused, neither hangs', async () => {
    const params = { name: 'test_elicitation', arguments: { message: 'twice?' } };
    const first = (await send(modern(90, 'tools/call', params, FULL_CAPS))).messages[0].result;
    const key = Object.keys(first.inputRequests)[0];
    const retry = (id: number) =>
      send(
        modern(
          id,
          'tools/call',
          {
            ...params,
            inputResponses: { [key]: { action: 'accept', content: { username: 'u', email: 'e@example.com' } } },
            requestState: first.requestState,
          },
          FULL_CAPS,
        ),
      );
    const answers = (await Promise.all([retry(91), retry(92)])).map((r) => r.messages.at(-1));
    expect(answers.filter((a) => a.result?.resultType === 'complete')).toHaveLength(1);
    expect(answers.filter((a) => a.error?.data?.code === 'INVALID_REQUEST_STATE')).toHaveLength(1);
  });

  it('answers -32021 with requiredCapabilities when the upstream needs input the request did not declare', async () => {
    const res = await send(modern(80, 'tools/call', { name: 'test_input_two_rounds', arguments: {} }, { sampling: {} }));
    expect(res.messages[0].error).toMatchObject({ code: -32021, data: { requiredCapabilities: { elicitation: { form: {} } } } });
  });
});

describe('arguments mirrored into Mcp-Param-* headers (x-mcp-header)', () => {
  afterAll(stopAll);

  it('are checked on the first call, before any client listed tools, and compared by type', async () => {
    const proxy = await startProxy(['--upstream', commandLine(fixtureArgv('conformance-server'))]);
    const call = (id: number, args: Record<string, unknown>, headers: Record<string, string>) => {
      const r = modern(id, 'tools/call', { name: 'test_custom_headers', arguments: args });
      return rawPost(proxy.url, r.body, { ...r.headers, ...headers });
    };
    // Nothing listed the tools yet: the proxy learns them itself, and a wrong header is refused.
    const wrong = await call(1, { region: 'eu', priority: 2 }, { 'mcp-param-region': 'us', 'mcp-param-priority': '2' });
    expect(wrong.status).toBe(400);
    expect(wrong.messages[0].error).toMatchObject({ code: -32020, message: expect.stringContaining('mcp-param-region') });
    // An object is no string: "[object Object]" does not match it.
    const object = await call(2, { region: { a: 1 }, priority: 2 }, { 'mcp-param-region': '[object Object]', 'mcp-param-priority': '2' });
    expect(object.status).toBe(400);
    expect(object.messages[0].error.code).toBe(-32020);
    const right = await call(3, { region: 'eu', priority: 2 }, { 'mcp-param-region': 'eu', 'mcp-param-priority': '2' });
    expect(right.status).toBe(200);
    expect(right.messages[0].result.resultType).toBe('complete');
  });
});
