/**
 * One upstream HTTP connection against a scripted in-process server on 127.0.0.1: what the
 * initialize exchange teaches, the GET stream, resuming a broken SSE response with Last-Event-ID,
 * error statuses and bodies, session expiry, cancellation, DELETE on close and nothing on detach.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { Agent } from 'undici';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ProxyError } from '../jsonrpc/errors.js';
import type { Frame, JsonRpcId } from '../jsonrpc/message.js';
import { HttpUpstream, type HttpUpstreamOptions } from './http.js';
import type { UpstreamConnection } from './types.js';

interface Seen {
  method: string;
  headers: IncomingMessage['headers'];
  msg?: any;
  /** Resolves when the client closes this request's connection or stream. */
  gone: Promise<void>;
}
type Handler = (seen: Seen, res: ServerResponse) => void;

/** A server whose answers to POST and GET each test scripts (DELETE is always 200); it records every request. */
class ScriptedServer {
  readonly seen: Seen[] = [];
  handle: Handler = (_seen, res) => void res.writeHead(500).end();
  handleGet: Handler = (_seen, res) => void res.writeHead(405).end();
  private readonly server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const seen: Seen = {
        method: req.method!,
        headers: req.headers,
        msg: body ? JSON.parse(body) : undefined,
        gone: new Promise((r) => res.once('close', () => r())),
      };
      this.seen.push(seen);
      if (req.method === 'DELETE') res.writeHead(200).end();
      else (req.method === 'GET' ? this.handleGet : this.handle)(seen, res);
    });
  });
  url = '';
  async start(): Promise<void> {
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/mcp`;
  }
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
  posts(): any[] {
    return this.seen.filter((s) => s.method === 'POST').map((s) => s.msg);
  }
}

const INIT_RESULT = { protocolVersion: '2025-06-18', capabilities: {}, serverInfo: { name: 'scripted', version: '1' } };
const sse = (res: ServerResponse, headers: Record<string, string> = {}) =>
  res.writeHead(200, { 'content-type': 'text/event-stream', ...headers });
const event = (msg: unknown, id?: string) => `${id ? `id: ${id}\n` : ''}data: ${JSON.stringify(msg)}\n\n`;
const answer = (id: JsonRpcId, result: Record<string, unknown>) => ({ jsonrpc: '2.0', id, result });
const request = (id: JsonRpcId, method = 'tools/call', params: Record<string, unknown> = { name: 'x' }): Frame => ({
  msg: { jsonrpc: '2.0', id, method, params },
});
const notification = (method: string, params?: Record<string, unknown>): Frame => ({
  msg: { jsonrpc: '2.0', method, ...(params ? { params } : {}) },
});

describe('HttpUpstream', () => {
  let server: ScriptedServer;
  let dispatcher: Agent;
  let received: Array<{ msg: any; relatedId?: JsonRpcId }>;
  let closes: ProxyError[];
  let failures: Map<JsonRpcId, ProxyError>;
  let connection: UpstreamConnection | undefined;

  const connect = (opts: Partial<HttpUpstreamOptions> = {}, url = server.url) => {
    connection = new HttpUpstream(
      { kind: 'http', url, headers: { authorization: 'Bearer upstream-token' }, maxJsonDepth: 256 },
      {
        onMessage: (frame, relatedId) => void received.push({ msg: frame.msg, relatedId }),
        onFailure: (id, err) => void failures.set(id, err),
        onClose: (err) => void closes.push(err),
      },
      pino({ level: 'silent' }),
      { dispatcher, defaultRetryMs: 10, maxResumes: 3, ...opts },
    );
    return connection;
  };
  const until = (check: () => boolean) => vi.waitFor(() => expect(check()).toBe(true), { timeout: 5000, interval: 5 });
  const answerTo = (id: JsonRpcId) => received.find((r) => r.msg.id === id && !r.msg.method);

  beforeEach(async () => {
    server = new ScriptedServer();
    await server.start();
    dispatcher = new Agent();
    received = [];
    closes = [];
    failures = new Map();
  });
  afterEach(async () => {
    connection?.detach?.();
    connection = undefined;
    await server.stop();
    await dispatcher.close();
  });

  /** Initializes a session 's-1' on protocol 2025-06-18. */
  async function initialized(opts: Partial<HttpUpstreamOptions> = {}, onGet?: Handler) {
    if (onGet) server.handleGet = onGet;
    server.handle = (seen, res) => {
      if (seen.msg.method === 'initialize')
        return void res
          .writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 's-1' })
          .end(JSON.stringify(answer(seen.msg.id, INIT_RESULT)));
      res.writeHead(202).end();
    };
    const up = connect(opts);
    up.send(request(0, 'initialize', { protocolVersion: '2025-06-18' }));
    await until(() => !!answerTo(0));
    up.send(notification('notifications/initialized'));
    return up;
  }

  it('learns the session id and protocol version from initialize, sends them after it, and opens the GET stream once initialized', async () => {
    let pushed = false;
    const up = await initialized({}, (_seen, res) => {
      sse(res);
      if (!pushed) res.write(event(notification('notifications/tools/list_changed').msg));
      pushed = true;
    });
    await until(() => received.some((r) => r.msg.method === 'notifications/tools/list_changed'));
    expect(received.find((r) => r.msg.method)!.relatedId).toBeUndefined();
    expect(up.session!()).toEqual({ id: 's-1', protocolVersion: '2025-06-18' });
    const [init, initializedPost] = server.seen;
    expect(init.headers['mcp-session-id']).toBeUndefined();
    expect(init.headers.authorization).toBe('Bearer upstream-token');
    expect([initializedPost.headers['mcp-session-id'], initializedPost.headers['mcp-protocol-version']]).toEqual(['s-1', '2025-06-18']);
    const get = server.seen.find((s) => s.method === 'GET')!;
    expect([get.headers.accept, get.headers['mcp-session-id']]).toEqual(['text/event-stream', 's-1']);
  });

  it("resumes a broken SSE response with Last-Event-ID after the server's retry delay, and delivers the answer once", async () => {
    const up = await initialized();
    server.handle = (_seen, res) => {
      sse(res);
      res.write('retry: 20\n\n');
      res.write(event(notification('notifications/progress', { progressToken: 't', progress: 1 }).msg, 'e-1'), () => res.destroy()); // breaks off before the answer
    };
    server.handleGet = (seen, res) => {
      if (!seen.headers['last-event-id']) return void res.writeHead(405).end(); // the session's own stream: none here
      sse(res);
      res.end(event(answer(5, { resumedAfter: seen.headers['last-event-id'] }), 'e-2'));
    };
    up.send(request(5));
    await until(() => !!answerTo(5));
    expect(answerTo(5)).toEqual({ msg: answer(5, { resumedAfter: 'e-1' }), relatedId: 5 });
    expect(received.filter((r) => r.relatedId === 5).map((r) => r.msg.method ?? 'answer')).toEqual(['notifications/progress', 'answer']);
    expect(closes).toEqual([]);
  });

  it('reports a failure when a response stream ends, or breaks off, with no answer and nothing to resume from', async () => {
    const up = await initialized();
    server.handle = (seen, res) => {
      sse(res);
      if (seen.msg.id === 1) return void res.end();
      res.write(event(notification('notifications/message', { level: 'info', data: 'x' }).msg), () => res.destroy());
    };
    up.send(request(1));
    up.send(request(2));
    await until(() => failures.has(1) && failures.has(2));
    expect(failures.get(1)).toMatchObject({ message: 'The upstream ended the response without answering', code: 'UPSTREAM_PROTOCOL' });
    expect(failures.get(2)!.message).toMatch(/^The upstream's response broke off before the answer/);
    expect(failures.get(2)!.code).toBe('UPSTREAM_UNREACHABLE');
  });

  it("relays a JSON-RPC error body as the request's answer (even with id null), and describes a bare error status", async () => {
    const up = await initialized();
    server.handle = (seen, res) => {
      if (seen.msg.id === 1)
        return void res
          .writeHead(400, { 'content-type': 'application/json' })
          .end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'nope' } }));
      res.writeHead(503, { 'content-type': 'text/plain' }).end('overloaded');
    };
    up.send(request(1));
    up.send(request(2));
    await until(() => !!answerTo(1) && failures.has(2));
    expect(answerTo(1)).toEqual({ msg: { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'nope' } }, relatedId: 1 });
    expect(failures.get(2)).toMatchObject({
      message: 'The upstream answered HTTP 503',
      code: 'UPSTREAM_PROTOCOL',
      details: { body: 'overloaded', status: 503 },
    });
  });

  it('closes once with UPSTREAM_SESSION_EXPIRED when the upstream no longer knows the session', async () => {
    const up = await initialized();
    server.handle = (_seen, res) => void res.writeHead(404).end();
    up.send(request(1));
    up.send(request(2));
    await until(() => server.posts().filter((m) => m.id === 1 || m.id === 2).length === 2 && closes.length > 0);
    await Promise.all(server.seen.map((s) => s.gone)); // both 404s have been sent
    expect(closes.map((e) => e.code)).toEqual(['UPSTREAM_SESSION_EXPIRED']);
  });

  it("drops a cancelled request's response stream after telling the server", async () => {
    const up = await initialized();
    server.handle = (seen, res) => (seen.msg.id === 7 ? sse(res) : void res.writeHead(202).end());
    up.send(request(7));
    await until(() => server.posts().some((m) => m.id === 7));
    const call = server.seen.find((s) => s.msg?.id === 7)!;
    up.send(notification('notifications/cancelled', { requestId: 7, reason: 'user' }));
    await call.gone;
    await until(() => server.posts().some((m) => m.method === 'notifications/cancelled'));
    expect(server.posts().at(-1)).toMatchObject({ method: 'notifications/cancelled', params: { requestId: 7 } });
    expect(answerTo(7)).toBeUndefined(); // the relay answers the client itself
  });

  it('reports UPSTREAM_UNREACHABLE at once when nothing listens', async () => {
    const stopped = new ScriptedServer();
    await stopped.start();
    await stopped.stop();
    const up = connect({}, stopped.url);
    up.send(request(1, 'initialize', {}));
    await until(() => failures.has(1));
    expect(failures.get(1)!.message).toMatch(/^The upstream could not be reached/);
  });

  it('DELETEs the session once on close, and lets go of a resumed session on detach without ending it', async () => {
    const up = await initialized();
    await Promise.all([up.close(), up.close()]);
    expect(server.seen.filter((s) => s.method === 'DELETE').map((s) => s.headers['mcp-session-id'])).toEqual(['s-1']);

    const other = new HttpUpstream(
      { kind: 'http', url: server.url, headers: {}, maxJsonDepth: 256 },
      { onMessage: () => {}, onFailure: () => {}, onClose: () => {} },
      pino({ level: 'silent' }),
      {
        dispatcher,
        defaultRetryMs: 10,
        maxResumes: 3,
        resume: { id: 's-2', protocolVersion: '2025-06-18' },
      },
    );
    server.handle = (_seen, res) => sse(res); // holds the call open
    other.send(request(1));
    await until(() => server.seen.some((s) => s.headers['mcp-session-id'] === 's-2'));
    other.detach();
    await server.seen.find((s) => s.headers['mcp-session-id'] === 's-2')!.gone;
    expect(server.seen.filter((s) => s.method === 'DELETE')).toHaveLength(1);
  });

  it('holds the GET stream only while told to listen, when replicas take turns', async () => {
    const gets: Seen[] = [];
    const up = await initialized({ getFollowsClient: true }, (seen, res) => {
      gets.push(seen);
      sse(res);
    });
    // Requests wait for notifications/initialized to be answered, so a GET opened on that answer is sent before this request.
    server.handle = (seen, res) =>
      void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer(seen.msg.id, {})));
    up.send(request(1));
    await until(() => !!answerTo(1));
    expect(gets).toEqual([]);
    up.listen!(true);
    up.listen!(true);
    await until(() => gets.length === 1);
    up.listen!(false);
    await gets[0].gone;
    expect(gets).toHaveLength(1);
  });
});
