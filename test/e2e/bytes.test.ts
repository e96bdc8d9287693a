/**
 * Backward compatibility at the byte level: a client that declares nothing gets exactly the
 * bytes the upstream wrote, through the stdio front and through the HTTP front, for every
 * method the built-in demo server offers. A body that breaks lines still reaches a stdio
 * upstream as one line. A modern answer nothing reshapes is the upstream's result bytes with what
 * the revision adds written before its closing brace.
 */
import { spawn } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { lineSplitter } from '../../src/jsonrpc/lines.js';
import { callTool, INIT, modern, rawPost } from '../helpers/raw.js';
import { commandLine, eventually, PROXY_MAIN, ROOT, startProxy, stopAll } from '../helpers/processes.js';

const DEMO = `${ROOT}dist/demo/main.js`;
const initialize = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bytes', version: '1' } },
};
const initialized = { jsonrpc: '2.0', method: 'notifications/initialized' };
const REQUESTS = [
  ['tools/list', {}],
  ['tools/call', { name: 'get_weather', arguments: { city: 'Lugano' } }],
  ['tools/call', { name: 'plan_journey', arguments: { from: 'Bern', to: 'Lugano', date: '2026-05-01' } }],
  ['tools/call', { name: 'convert_units', arguments: { value: 12, from: 'km', to: 'mi' } }],
  ['tools/call', { name: 'convert_units', arguments: { value: 1, from: 'kg', to: 'km' } }],
  ['resources/list', {}],
  ['resources/templates/list', {}],
  ['resources/read', { uri: 'demo://cities' }],
  ['resources/read', { uri: 'demo://guide' }],
  ['resources/read', { uri: 'demo://weather/bern' }],
  ['prompts/list', {}],
  ['prompts/get', { name: 'trip_briefing', arguments: { destination: 'Zurich', days: '2' } }],
  ['completion/complete', { ref: { type: 'ref/resource', uri: 'demo://weather/{city}' }, argument: { name: 'city', value: 'Lu' } }],
  ['ping', {}],
  ['no/such/method', { extra: [1, 2] }],
].map(([method, params], i) => ({ jsonrpc: '2.0', id: i + 1, method, params }));

/** Speaks raw lines to a stdio process; returns every line it answered, by request id (the server answers concurrent requests in any order). */
async function converse(argv: string[]): Promise<string[]> {
  const proc = spawn(process.execPath, argv, { stdio: ['pipe', 'pipe', 'ignore'] });
  const lines: string[] = [];
  proc.stdout.on(
    'data',
    lineSplitter((l) => lines.push(l)),
  );
  const send = (m: unknown) => proc.stdin.write(JSON.stringify(m) + '\n');
  send(initialize);
  await eventually(() => lines.length === 1, 15_000, 'initialize answer');
  send(initialized);
  for (const r of REQUESTS) send(r);
  await eventually(() => lines.length === REQUESTS.length + 1, 15_000, 'all answers');
  proc.stdin.end();
  await new Promise((r) => proc.once('exit', r));
  return lines.sort((a, b) => JSON.parse(a).id - JSON.parse(b).id);
}

describe('a client that declares nothing gets the upstream bytes unchanged', () => {
  afterAll(stopAll);

  it('through the stdio front and the HTTP front', async () => {
    const direct = await converse([DEMO]);
    expect(direct.length).toBe(REQUESTS.length + 1);
    expect(await converse([PROXY_MAIN, '--stdio', '--log-level', 'silent'])).toEqual(direct);

    const proxy = await startProxy([]);
    const headers = { accept: 'application/json' }; // plain JSON bodies: one message each, nothing added
    const init = await rawPost(proxy.url, initialize, headers);
    const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await rawPost(proxy.url, initialized, session);
    const overHttp = [init.text];
    for (const r of REQUESTS) overHttp.push((await rawPost(proxy.url, r, session)).text);
    expect(overHttp).toEqual(direct);
  });

  it('relays a body whose JSON breaks lines between tokens to a stdio upstream as one line', async () => {
    const proxy = await startProxy([]);
    const pretty = (m: unknown) => JSON.stringify(m, null, 2); // valid JSON, many lines
    const init = await rawPost(proxy.url, pretty(initialize), { accept: 'application/json' });
    expect(init.messages[0].result.serverInfo).toBeDefined();
    const session = {
      accept: 'application/json',
      'mcp-session-id': init.headers.get('mcp-session-id')!,
      'mcp-protocol-version': '2025-11-25',
    };
    await rawPost(proxy.url, pretty(initialized), session);
    const call = await rawPost(proxy.url, pretty(REQUESTS[3]), session);
    expect(call.messages[0].result.content[0].text).toContain('mi');
    const crlf = await rawPost(proxy.url, '{\r\n"jsonrpc": "2.0",\r\n"id": 9,\r\n"method": "ping"\r\n}', session);
    expect(crlf.messages[0]).toEqual({ jsonrpc: '2.0', id: 9, result: {} });
  });

  it('relays an answer without decoding it, and decodes it only for a client whose results the rules reshape', async () => {
    const proxy = await startProxy(['--upstream', commandLine([process.execPath, `${ROOT}test/fixtures/verbatim-server.mjs`])]);
    const json = { accept: 'application/json' };
    const plain = await rawPost(proxy.url, INIT, json);
    const session = { ...json, 'mcp-session-id': plain.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    const post = (body: unknown, headers: Record<string, string>) =>
      fetch(proxy.url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }).then(
        (r) => r.text(),
      );
    // A decode and re-encode would turn 1.50 into 1.5, \u00e9 into é and drop the spaces.
    expect(await post(callTool(1, 'odd'), session)).toBe(
      '{"result" : {"content":[{"type":"text","text":"caf\\u00e9 at 1.50"}], "n": 1.50 } , "id":1,"jsonrpc":"2.0"}',
    );
    // Nothing decodes it, but a strict scan proved it JSON: a result that is not is the upstream's error, not bytes the client cannot read.
    expect(JSON.parse(await post(callTool(2, 'broken'), session))).toMatchObject({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32603, message: expect.stringContaining('not valid JSON'), data: { code: 'UPSTREAM_PROTOCOL' } },
    });

    const features = { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: '1.0', features: ['format=markdown'] } } };
    const negotiating = await rawPost(proxy.url, { ...INIT, params: { ...INIT.params, capabilities: features } }, json);
    const shaped = { ...json, 'mcp-session-id': negotiating.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    const odd = JSON.parse(await post(callTool(3, 'odd'), shaped));
    expect(odd.result.content[0].text).toContain('café at 1.50');
    // Here the proxy decodes the result to reshape it: a result that is not JSON is an error answer, not a hang.
    const broken = JSON.parse(await post(callTool(4, 'broken'), shaped));
    expect(broken).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32603 } });
  });

  it('completes a modern answer on the upstream bytes when nothing reshapes it, and decodes it when something does', async () => {
    const proxy = await startProxy(['--upstream', commandLine([process.execPath, `${ROOT}test/fixtures/verbatim-server.mjs`])]);
    const post = async (id: number, name: string, capabilities: Record<string, unknown> = {}) => {
      const { body, headers } = modern(id, 'tools/call', { name, arguments: {} }, capabilities);
      const res = await fetch(proxy.url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
        body: JSON.stringify(body),
      });
      return res.text();
    };
    // The result's own bytes, then what the revision adds; nothing in between is re-encoded.
    expect(await post(1, 'odd')).toBe(
      '{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"caf\\u00e9 at 1.50"}], "n": 1.50 ,"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"verbatim","version":"1"}}}}',
    );
    // The proxy writes around the result only what a strict scan proved JSON: a broken result is the upstream's error.
    expect(JSON.parse(await post(2, 'broken'))).toMatchObject({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32603, message: expect.stringContaining('not valid JSON'), data: { code: 'UPSTREAM_PROTOCOL' } },
    });

    const features = { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: '1.0', features: ['format=markdown'] } } };
    const odd = JSON.parse(await post(3, 'odd', features));
    expect(odd.result).toMatchObject({ resultType: 'complete', n: 1.5 });
    expect(odd.result.content[0].text).toContain('café at 1.50');
    expect(JSON.parse(await post(4, 'broken', features))).toMatchObject({ jsonrpc: '2.0', id: 4, error: { code: -32603 } });
  });
});
