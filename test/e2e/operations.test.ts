/**
 * What an operator sees: one access-log line per request (no credentials in it), and the
 * human log format.
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashToken } from '../../src/fronts/http/auth.js';
import {
  commandLine,
  eventually,
  fixtureArgv,
  logEntries,
  logged,
  PROXY_MAIN,
  startHttpFixture,
  startProxy,
  stopAll,
  type Running,
} from '../helpers/processes.js';
import { callTool, INIT, metricIn, metricValue, modern, rawPost, rawSession, sseMessages } from '../helpers/raw.js';

const TOKEN = 'operations-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}` };

/** The access-log lines the proxy has written so far. */
const accessLines = (proxy: Running): any[] => logEntries(proxy).filter((e) => e.msg === 'request');

describe('access log', () => {
  let proxy: Running;

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-ops-')), 'proxy.yaml');
    writeFileSync(
      file,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\nauth:\n  tokens:\n    - { name: ops, sha256: ${hashToken(TOKEN)} }\n`,
    );
    proxy = await startProxy(['--config', file]);
  }, 30_000);
  afterAll(stopAll);

  it('writes a line per request with method, tool, era, session, principal, status, duration, bytes and address', async () => {
    const init = await rawPost(proxy.url, INIT, auth);
    const headers = { ...auth, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await rawPost(proxy.url, callTool(1, 'echo', { text: 'logged' }), headers);
    const m = modern(2, 'tools/call', { name: 'echo', arguments: { text: 'modern' } });
    await rawPost(proxy.url, m.body, { ...m.headers, ...auth });
    await rawPost(proxy.url, INIT); // refused: no credential

    await eventually(() => accessLines(proxy).length >= 4, 5000, 'four access-log lines');
    const [initLine, call, modernCall, refused] = accessLines(proxy);
    expect(initLine).toMatchObject({ http: 'POST', rpc: 'initialize', era: 'legacy', principal: 'token:ops', status: 200 });
    expect(call).toMatchObject({
      http: 'POST',
      rpc: 'tools/call',
      target: 'echo',
      era: 'legacy',
      session: initLine.session,
      principal: 'token:ops',
      status: 200,
      address: '127.0.0.1',
    });
    expect(call.session).toMatch(/^[0-9a-f]{8}$/);
    expect(call.bytesIn).toBeGreaterThan(0);
    expect(call.bytesOut).toBeGreaterThan(0);
    expect(call.ms).toBeGreaterThanOrEqual(0);
    expect(modernCall).toMatchObject({ rpc: 'tools/call', target: 'echo', era: 'modern', principal: 'token:ops', status: 200 });
    expect(refused).toMatchObject({ http: 'POST', status: 401 });
    expect(refused.principal).toBeUndefined();
    // Neither the credential nor the session id (a credential too) is written anywhere.
    expect(proxy.stderr()).not.toContain(TOKEN);
    expect(proxy.stderr()).not.toContain(headers['mcp-session-id']);
  });

  it('bounds every field a client controls: a 2 MB method or tool name makes a line of a few kilobytes', async () => {
    const huge = 'x'.repeat(2_000_000);
    const init = await rawPost(proxy.url, INIT, auth);
    const session = { ...auth, 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    const legacy = await rawPost(proxy.url, { jsonrpc: '2.0', id: 1, method: huge }, session);
    expect(legacy.messages[0].error.code).toBe(-32601);
    const m = modern(2, 'tools/list');
    await rawPost(proxy.url, { ...m.body, method: huge }, { ...m.headers, ...auth });
    await rawPost(proxy.url, callTool(3, huge), session);
    const mine = () => accessLines(proxy).filter((l) => l.rpc?.startsWith('xxx') || l.target?.startsWith('xxx'));
    await eventually(() => mine().length === 3, 10_000, 'the access-log lines');
    const lines = mine();
    expect(lines.map((l) => [l.rpc.slice(0, 3), l.target?.slice(0, 3), l.era])).toEqual([
      ['xxx', undefined, 'legacy'],
      ['xxx', undefined, 'modern'],
      ['too', 'xxx', 'legacy'],
    ]);
    expect(lines.every((l) => JSON.stringify(l).length < 2000)).toBe(true);
    // No line anywhere in the log grew with what was sent.
    expect(
      Math.max(
        ...proxy
          .stderr()
          .split('\n')
          .map((l) => l.length),
      ),
    ).toBeLessThan(8192);
  });
});

describe('metrics', () => {
  afterAll(stopAll);

  it('has request, upstream and transformer latency with bounded labels, event-loop delay and process metrics', async () => {
    const proxy = await startProxy(['--upstream', commandLine(fixtureArgv('faulty-server'))]);
    const negotiating = {
      ...INIT,
      params: {
        ...INIT.params,
        capabilities: { extensions: { 'io.modelcontextprotocol/content-negotiation': { version: 1, features: ['format=json'] } } },
      },
    };
    const init = await rawPost(proxy.url, negotiating);
    const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await rawPost(proxy.url, callTool(1, 'echo', { text: '{"a":1}' }), headers);
    for (let i = 0; i < 3; i++) await rawPost(proxy.url, { jsonrpc: '2.0', id: 10 + i, method: `vendor/made-up-${i}` }, headers);
    const text = await (await fetch(proxy.url.replace('/mcp', '/metrics'))).text();
    const value = (series: string) => metricIn(text, series);
    expect(value('mcp_proxy_request_duration_seconds_count{method="tools/call",era="legacy",outcome="2xx"}')).toBe(1);
    expect(value('mcp_proxy_upstream_request_duration_seconds_count{method="tools/call",outcome="ok"}')).toBe(1);
    expect(value('mcp_proxy_transformer_duration_seconds_count{transformer="json-extract"}')).toBeGreaterThanOrEqual(1);
    // Made-up methods share one label value.
    expect(value('mcp_proxy_request_duration_seconds_count{method="other",era="legacy",outcome="2xx"}')).toBe(3);
    expect(text).not.toContain('made-up');
    expect(text).toMatch(/^mcp_proxy_nodejs_eventloop_lag_seconds /m);
    expect(text).toMatch(/^mcp_proxy_process_resident_memory_bytes /m);
    expect(value('mcp_proxy_sessions')).toBe(1);
  });
});

describe('token counts (contentNegotiation.tokens.count)', () => {
  afterAll(stopAll);

  it('counts what the upstream sent and what a negotiating client got, per method and tool', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-tokens-')), 'proxy.yaml');
    writeFileSync(file, 'contentNegotiation:\n  tokens: { count: true }\n');
    const proxy = await startProxy(['--config', file]); // the built-in demo upstream
    const headers = await rawSession(proxy.url, {
      extensions: { 'io.modelcontextprotocol/content-negotiation': { version: 1, features: ['verbosity=compact', 'format=text'] } },
    });
    await rawPost(proxy.url, callTool(1, 'get_weather', { city: 'Bern' }), headers);
    await rawPost(proxy.url, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, headers);
    const metric = (method: string, tool: string, direction: string) =>
      metricValue(proxy.url, `mcp_proxy_result_tokens_total{method="${method}",tool="${tool}",direction="${direction}"}`);
    await eventually(async () => (await metric('tools/list', '', 'out')) > 0, 5000, 'the tools/list count');
    const callIn = await metric('tools/call', 'get_weather', 'in');
    const callOut = await metric('tools/call', 'get_weather', 'out');
    expect(callIn).toBeGreaterThan(50);
    expect(callOut).toBeGreaterThan(0);
    expect(callOut).toBeLessThan(callIn); // the markdown's markup is gone
    expect(await metric('tools/list', '', 'out')).toBeLessThanOrEqual(await metric('tools/list', '', 'in'));
  });

  it("counts a server variant's view against what the upstream sent", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-tokens-')), 'proxy.yaml');
    writeFileSync(
      file,
      'contentNegotiation:\n  tokens: { count: true }\nserverVariants:\n  variants:\n    - { id: full, description: Everything. }\n    - { id: weather, description: Weather only., tools: { include: [get_weather] } }\n',
    );
    const proxy = await startProxy(['--config', file]);
    const headers = await rawSession(proxy.url);
    const list = await rawPost(
      proxy.url,
      { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/server-variant': 'weather' } } },
      headers,
    );
    expect(list.messages[0].result.tools.map((t: { name: string }) => t.name)).toEqual(['get_weather']);
    const metric = (direction: string) =>
      metricValue(proxy.url, `mcp_proxy_result_tokens_total{method="tools/list",tool="",direction="${direction}"}`);
    await eventually(async () => (await metric('out')) > 0, 5000, 'the tools/list count');
    expect(await metric('out')).toBeLessThan((await metric('in')) / 2);
  });
});

describe('--log-format pretty', () => {
  it('writes lines for humans', async () => {
    const proc = spawn(process.execPath, [PROXY_MAIN, '--port', '0', '--log-format', 'pretty'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    proc.stderr.on('data', (d) => (stderr += d));
    try {
      await eventually(() => /INFO.*listening/.test(stderr), 10_000, 'the pretty listening line');
      expect(stderr).not.toMatch(/^\{"level"/m);
    } finally {
      proc.kill('SIGTERM');
      await new Promise((resolve) => (proc.exitCode !== null ? resolve(undefined) : proc.once('exit', resolve)));
    }
  });
});

describe('graceful drain on SIGTERM', () => {
  afterAll(stopAll);

  it('refuses new work with 503 and Retry-After, lets the call in flight finish (answers still get through), then exits 0', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-ops-')), 'proxy.yaml');
    writeFileSync(
      file,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\ntimeouts:\n  shutdownGraceMs: 20000\n`,
    );
    const proxy = await startProxy(['--config', file]);
    const init = await rawPost(proxy.url, { ...INIT, params: { ...INIT.params, capabilities: { elicitation: { form: {} } } } });
    const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
    await rawPost(proxy.url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
    // A call that waits for the client's answer to an elicitation: in flight until the test answers.
    const res = await fetch(proxy.url, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', accept: 'text/event-stream' },
      body: JSON.stringify(callTool(5, 'elicit', { message: 'who?' })),
    });
    const stream = sseMessages(res);
    const asked = await stream.next((m) => m.method === 'elicitation/create');

    const exited = new Promise((resolve) => proxy.proc.once('exit', resolve));
    proxy.proc.kill('SIGTERM');
    await eventually(() => proxy.stderr().includes('draining'), 5000, 'the drain to begin');
    const refused = await rawPost(proxy.url, INIT);
    expect(refused.status).toBe(503);
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    expect((await rawPost(proxy.url, callTool(6, 'echo', { text: 'x' }), headers)).status).toBe(503);
    expect((await fetch(proxy.url.replace('/mcp', '/readyz'))).status).toBe(503);

    expect(
      (await rawPost(proxy.url, { jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 'Ada' } } }, headers)).status,
    ).toBe(202);
    const result = await stream.next((m) => m.id === 5);
    expect(result.result.content[0].text).toContain('Ada');
    expect(await exited).toBe(0);
  });
});

describe('CORS (listen.cors)', () => {
  afterAll(stopAll);

  it('answers the preflight, exposes the session headers to the allowed origin, and refuses other origins', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'proxy-ops-')), 'proxy.yaml');
    writeFileSync(
      file,
      `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\nlisten:\n  cors:\n    origins: ["https://inspector.example"]\n`,
    );
    const proxy = await startProxy(['--config', file]);
    const preflight = await fetch(proxy.url, {
      method: 'OPTIONS',
      headers: {
        origin: 'https://inspector.example',
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, mcp-session-id, mcp-protocol-version',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('https://inspector.example');
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/mcp-session-id/);
    const init = await rawPost(proxy.url, INIT, { origin: 'https://inspector.example' });
    expect(init.status).toBe(200);
    expect(init.headers.get('access-control-allow-origin')).toBe('https://inspector.example');
    expect(init.headers.get('access-control-expose-headers')).toMatch(/mcp-session-id.*mcp-protocol-version/);
    expect((await rawPost(proxy.url, INIT, { origin: 'https://evil.example' })).status).toBe(403);
  });

  it('is off unless configured: no preflight answer', async () => {
    const proxy = await startProxy(['--upstream', commandLine(fixtureArgv('faulty-server'))]);
    const preflight = await fetch(proxy.url, {
      method: 'OPTIONS',
      headers: { origin: 'http://localhost:6274', 'access-control-request-method': 'POST' },
    });
    expect(preflight.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('config reload', () => {
  afterAll(stopAll);

  it('applies a saved config to new sessions, keeps open ones as negotiated, refuses a broken file, and names what needs a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'proxy-reload-'));
    const file = join(dir, 'proxy.yaml');
    const upstream = `upstream:\n  command: ${JSON.stringify(commandLine(fixtureArgv('faulty-server')))}\n`;
    const variants = (ids: string[]) =>
      `serverVariants:\n  variants:\n${ids.map((id) => `    - { id: ${id}, description: ${id} }`).join('\n')}\n`;
    writeFileSync(file, upstream + variants(['all']));
    const proxy = await startProxy(['--config', file]);
    const EXT = 'io.modelcontextprotocol/server-variants';
    const offered = async () => {
      const init = await rawPost(proxy.url, {
        ...INIT,
        params: { ...INIT.params, capabilities: { extensions: { [EXT]: { variantHints: { hints: {} } } } } },
      });
      const ids = init.messages[0].result.capabilities.extensions[EXT].availableVariants.map((v: { id: string }) => v.id);
      return { ids, headers: { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' } };
    };
    const before = await offered();
    expect(before.ids).toEqual(['all']);

    writeFileSync(file, upstream + variants(['all', 'lean']));
    await eventually(() => proxy.stderr().includes('config reloaded'), 10_000, 'the reload after the file changed');
    expect((await offered()).ids).toEqual(['all', 'lean']);
    // The session opened before keeps the variants it was offered.
    const inLean = await rawPost(
      proxy.url,
      { jsonrpc: '2.0', id: 3, method: 'tools/list', params: { _meta: { 'io.modelcontextprotocol/server-variant': 'lean' } } },
      before.headers,
    );
    expect(inLean.messages[0].error.code).toBe(-32602);

    writeFileSync(file, upstream + 'serverVariants: [unclosed\n');
    await eventually(() => proxy.stderr().includes('config reload refused'), 10_000, 'the refused reload');
    expect((await offered()).ids).toEqual(['all', 'lean']);

    writeFileSync(file, upstream + variants(['all', 'lean']) + 'listen:\n  maxBodyBytes: 1000\n');
    await logged(
      proxy,
      (e) => /only after a restart/.test(e.msg) && JSON.stringify(e.sections) === '["listen"]',
      10_000,
      'the restart notice',
    );
    proxy.proc.kill('SIGHUP'); // reloads again, and does not stop the proxy
    await logged(proxy, (e) => e.why === 'SIGHUP', 10_000, 'the SIGHUP reload');
    expect((await rawPost(proxy.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, before.headers)).status).toBe(200);
  });
});

describe('trace context', () => {
  afterAll(stopAll);

  it("carries a client's traceparent header into _meta for a stdio upstream, and into _meta and headers for an HTTP one, in both eras", async () => {
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const header = { traceparent, tracestate: 'vendor=1' };
    const stdio = await startProxy(['--upstream', commandLine(fixtureArgv('faulty-server'))]);
    const upstream = await startHttpFixture('faulty-server');
    const http = await startProxy(['--upstream', upstream.url]);
    const seen = async (url: string, extra: Record<string, string>) => {
      const init = await rawPost(url, INIT);
      const headers = { 'mcp-session-id': init.headers.get('mcp-session-id')!, 'mcp-protocol-version': '2025-11-25' };
      await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
      const legacy = JSON.parse((await rawPost(url, callTool(2, 'trace'), { ...headers, ...extra })).messages[0].result.content[0].text);
      const m = modern(3, 'tools/call', { name: 'trace', arguments: {} });
      const modernSeen = JSON.parse((await rawPost(url, m.body, { ...m.headers, ...extra })).messages[0].result.content[0].text);
      return { legacy, modern: modernSeen };
    };
    expect(await seen(stdio.url, header)).toEqual({
      legacy: { meta: traceparent, header: null, state: null },
      modern: { meta: traceparent, header: null, state: null },
    });
    expect(await seen(http.url, header)).toEqual({
      legacy: { meta: traceparent, header: traceparent, state: 'vendor=1' },
      modern: { meta: traceparent, header: traceparent, state: 'vendor=1' },
    });
    // Without trace context nothing is added; a malformed one is dropped.
    expect((await seen(http.url, {})).legacy).toEqual({ meta: null, header: null, state: null });
    expect((await seen(http.url, { traceparent: 'not-a-trace' })).legacy).toEqual({ meta: null, header: null, state: null });
  });
});

describe('OpenTelemetry spans (tracing.otlpEndpoint)', () => {
  let collector: Server | undefined;
  afterAll(async () => {
    await stopAll();
    collector?.close();
  });

  it("exports the request span (child of the client's), the upstream call and each transformer, and makes the request span the upstream's parent", async () => {
    const bodies: any[] = [];
    collector = createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        bodies.push({ type: req.headers['content-type'], body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((resolve) => collector!.listen(0, '127.0.0.1', resolve));
    const endpoint = `http://127.0.0.1:${(collector.address() as { port: number }).port}/v1/traces`;
    const upstream = await startHttpFixture('faulty-server');
    const proxy = await startProxy(['--upstream', upstream.url], { MCP_PROXY_OTLP_ENDPOINT: endpoint });

    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const clientSpan = '00f067aa0ba902b7';
    const headers = await rawSession(proxy.url, {
      extensions: { 'io.modelcontextprotocol/content-negotiation': { version: 1, features: ['format=json'] } },
    });
    const seen = await rawPost(proxy.url, callTool(2, 'trace'), { ...headers, traceparent: `00-${traceId}-${clientSpan}-01` });
    const upstreamSaw = JSON.parse(seen.messages[0].result.content[0].text);
    expect(await proxy.stop()).toBe(0); // shutting down sends what is buffered

    const spans = bodies.flatMap((b) => JSON.parse(b.body).resourceSpans.flatMap((r: any) => r.scopeSpans.flatMap((s: any) => s.spans)));
    const request = spans.find((s) => s.name === 'mcp tools/call');
    expect(request).toMatchObject({ traceId, parentSpanId: clientSpan });
    const children = spans.filter((s) => s.parentSpanId === request.spanId).map((s) => s.name);
    expect(children).toEqual(expect.arrayContaining(['upstream tools/call', 'transform json-extract']));
    // The upstream's parent is the proxy's request span, in _meta and in the header.
    expect(upstreamSaw).toMatchObject({ meta: `00-${traceId}-${request.spanId}-01`, header: `00-${traceId}-${request.spanId}-01` });
  });
});
