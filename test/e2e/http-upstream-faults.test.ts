/**
 * A Streamable HTTP upstream that misbehaves at the HTTP level: error statuses, JSON-RPC error
 * bodies, streams that end without an answer, events that are not JSON-RPC. The server here is
 * a real HTTP server on 127.0.0.1 that answers initialize properly and then does as told.
 */
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { callTool, INIT, metricValue, modern, rawPost, rawSession } from '../helpers/raw.js';
import { eventually, startProxy, stopAll, type Running } from '../helpers/processes.js';

function brokenServer(): Server {
  return createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method !== 'POST') return res.writeHead(405).end();
      const msg = JSON.parse(body);
      const sse = (events: string[]) => {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'mcp-session-id': 'broken-1' });
        res.end(events.map((e) => `data: ${e}\n\n`).join(''));
      };
      if (msg.method === 'initialize' && msg.params.clientInfo.name === 'slow-start') return; // never answers
      if (msg.method === 'initialize' && req.url === '/refuses')
        return res.writeHead(500, { 'content-type': 'text/plain' }).end('cannot connect to postgres://admin:hunter2@db/app');
      if (msg.method === 'initialize') {
        return sse([
          JSON.stringify({
            jsonrpc: '2.0',
            id: msg.id,
            result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'broken', version: '1' } },
          }),
        ]);
      }
      if (!('id' in msg)) return res.writeHead(202).end();
      switch (msg.params?.name) {
        case 'status500':
          return res.writeHead(500, { 'content-type': 'text/plain' }).end('database on fire');
        case 'rpcError':
          return res
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: 'bad arguments', data: { field: 'x' } } }));
        case 'rpcErrorNullId':
          return res
            .writeHead(400, { 'content-type': 'application/json' })
            .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Bad Request: no session' } }));
        case 'silent':
          return sse([]);
        case 'garbage':
          return sse([
            'not json',
            JSON.stringify({ jsonrpc: '2.0', id: msg.id, result: { content: [{ type: 'text', text: 'after garbage' }] } }),
          ]);
      }
    });
  });
}

describe('an HTTP upstream that misbehaves', () => {
  let server: Server;
  let port: number;
  let proxy: Running;
  let headers: Record<string, string>;

  beforeAll(async () => {
    server = brokenServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as { port: number }).port;
    proxy = await startProxy(['--upstream', `http://127.0.0.1:${port}/mcp`]);
    headers = await rawSession(proxy.url);
  });
  afterAll(async () => {
    await stopAll();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const answer = async (id: number, name: string) => (await rawPost(proxy.url, callTool(id, name), headers)).messages.at(-1);

  it('turns an error status into a JSON-RPC error that shows the body, counted as an upstream error (the session lives on)', async () => {
    expect(await answer(1, 'status500')).toMatchObject({
      id: 1,
      error: { code: -32603, message: 'The upstream answered HTTP 500', data: { code: 'UPSTREAM_PROTOCOL', body: 'database on fire' } },
    });
    expect(
      await metricValue(proxy.url, 'mcp_proxy_upstream_request_duration_seconds_count{method="tools/call",outcome="error"}'),
    ).toBeGreaterThanOrEqual(1);
    expect(
      await metricValue(proxy.url, 'mcp_proxy_upstream_request_duration_seconds_count{method="tools/call",outcome="closed"}'),
    ).toBeNaN();
  });

  it("relays the upstream's own JSON-RPC error body as it is", async () => {
    expect(await answer(2, 'rpcError')).toEqual({
      jsonrpc: '2.0',
      id: 2,
      error: { code: -32602, message: 'bad arguments', data: { field: 'x' } },
    });
  });

  it('gives an error body sent with id null to the request it answers', async () => {
    expect(await answer(5, 'rpcErrorNullId')).toEqual({
      jsonrpc: '2.0',
      id: 5,
      error: { code: -32000, message: 'Bad Request: no session' },
    });
  });

  it('answers a request whose stream ended without a response', async () => {
    expect(await answer(3, 'silent')).toMatchObject({ id: 3, error: { data: { code: 'UPSTREAM_PROTOCOL' } } });
  });

  it('skips events that are not JSON-RPC and logs them', async () => {
    expect(await answer(4, 'garbage')).toMatchObject({ id: 4, result: { content: [{ text: 'after garbage' }] } });
    await eventually(() => proxy.stderr().includes('not JSON-RPC'), 5000, 'a warning in the log');
  });

  // That no cancellation follows (initialize is not cancellable) is checked on the relay's own clock in src/core/relay.test.ts.
  it('times out an initialize that never comes back', async () => {
    const config = join(mkdtempSync(join(tmpdir(), 'slow-start-')), 'proxy.yaml');
    writeFileSync(config, `upstream:\n  url: http://127.0.0.1:${port}/mcp\ntimeouts:\n  initializeMs: 500\n`);
    const slow = await startProxy(['--config', config]);
    const init = { ...INIT, params: { ...INIT.params, clientInfo: { name: 'slow-start', version: '1' } } };
    const reply = await rawPost(slow.url, init);
    expect(reply.messages[0]).toMatchObject({ id: 0, error: { code: -32001, data: { code: 'REQUEST_TIMEOUT', timeoutMs: 500 } } });
  });

  it("refuses modern requests with UPSTREAM_START_FAILED when the upstream refuses the proxy's initialize, its reason masked and its body kept back", async () => {
    const refusing = await startProxy(['--upstream', `http://127.0.0.1:${port}/refuses`]);
    const request = modern(1, 'tools/list');
    const reply = await rawPost(refusing.url, request.body, request.headers);
    const error = reply.messages[0].error;
    expect(error).toMatchObject({ code: -32603, data: { code: 'UPSTREAM_START_FAILED' } });
    expect(error.message).toMatch(/^The upstream refused initialize: The upstream answered HTTP 500/);
    expect(JSON.stringify(error)).not.toContain('hunter2');
  });
});
