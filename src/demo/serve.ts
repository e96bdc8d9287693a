/**
 * serveMcp: run an MCP server factory over stdio or Streamable HTTP.
 *
 * Contract:
 * - `serveMcp(createServer, argv)` with no flags: one server instance over stdio
 *   (StdioServerTransport). Nothing but protocol messages is written to stdout. The process
 *   exits (code 0) when stdin ends/closes.
 * - `--http [--port N] [--host H]` (defaults: port 0 = ephemeral, host 127.0.0.1): Streamable
 *   HTTP on path `/mcp` (node:http + StreamableHTTPServerTransport), stateful. Each
 *   `initialize` POST without `Mcp-Session-Id` gets a fresh server instance + transport with
 *   a randomUUID session id; the session is dropped when its transport closes (DELETE, or
 *   shutdown). Unknown session id -> 404 (JSON-RPC -32001); GET/DELETE without a session
 *   id -> 400; other paths -> 404; other methods -> 405.
 *   Once listening, prints exactly one line `LISTENING http://<host>:<port>/mcp` to stdout.
 * - SIGTERM/SIGINT (both modes): close every server/transport (and the HTTP listener), exit 0.
 * - `createServer` is called once per session (once in stdio mode); it may return a low-level
 *   `Server` or an `McpServer` (both expose `connect()` / `close()`).
 * - `listenMcpHttp(createServer, { host, port })` serves `--http` in the calling process (the test
 *   kit's upstream): it resolves with the URL and a `close()`, and touches neither signals nor stdout.
 */
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

type AnyServer = Server | McpServer;

function flag(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i >= 0 && i + 1 < argv.length) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith(`${name}=`));
  return eq?.slice(name.length + 1);
}

function jsonError(res: ServerResponse, status: number, code: number, message: string): void {
  if (res.headersSent) return;
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
}

export async function serveMcp(createServer: () => AnyServer, argv: string[]): Promise<void> {
  let shuttingDown = false;
  // Exits once the server has closed, whether or not closing failed.
  const onSignal = (close: () => Promise<void>) => () => {
    if (shuttingDown) return;
    shuttingDown = true;
    close().then(
      () => process.exit(0),
      () => process.exit(0),
    );
  };

  if (!argv.includes('--http')) {
    const server = createServer();
    const close = () => server.close();
    const stop = onSignal(close);
    process.once('SIGTERM', stop).once('SIGINT', stop);
    process.stdin.once('end', stop).once('close', stop);
    await server.connect(new StdioServerTransport());
    return;
  }

  const host = flag(argv, '--host') ?? '127.0.0.1';
  const port = Number(flag(argv, '--port') ?? 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid --port: ${flag(argv, '--port')}`);
  const served = await listenMcpHttp(createServer, { host, port });
  const stop = onSignal(served.close);
  process.once('SIGTERM', stop).once('SIGINT', stop);
  process.stdout.write(`LISTENING ${served.url}\n`);
}

export interface ServedMcp {
  /** The endpoint, `http://<host>:<port>/mcp`. */
  url: string;
  /** Closes every session and the listener. */
  close(): Promise<void>;
}

/** Streamable HTTP on `/mcp` as `--http` serves it, in this process: no signal handlers, nothing written to stdout. */
export async function listenMcpHttp(createServer: () => AnyServer, at: { host: string; port: number }): Promise<ServedMcp> {
  const { host, port } = at;
  const sessions = new Map<string, { transport: StreamableHTTPServerTransport; server: AnyServer }>();

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path !== '/mcp') return jsonError(res, 404, -32000, 'Not found');
    if (!['GET', 'POST', 'DELETE'].includes(req.method ?? '')) return jsonError(res, 405, -32000, 'Method not allowed');
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string') {
      const session = sessions.get(sid);
      if (!session) return jsonError(res, 404, -32001, 'Session not found');
      return session.transport.handleRequest(req, res);
    }
    if (req.method !== 'POST') return jsonError(res, 400, -32000, 'Bad Request: Mcp-Session-Id header is required');
    // No session id: must be an initialize request. The transport itself rejects anything
    // else with 400 ("Server not initialized"); the unused instance is closed below.
    const server = createServer();
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => void sessions.set(id, { transport, server }),
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res);
    if (!transport.sessionId) await server.close();
  };

  const http = createHttpServer((req, res) => {
    handle(req, res).catch((err: unknown) => jsonError(res, 500, -32603, `Internal error: ${String(err)}`));
  });
  const close = async () => {
    await Promise.allSettled([...sessions.values()].map((s) => s.server.close()));
    sessions.clear();
    http.closeAllConnections();
    await new Promise<void>((resolve) => http.close(() => resolve()));
  };
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(port, host, () => resolve());
  });
  const addr = http.address();
  const actualPort = typeof addr === 'object' && addr ? addr.port : port;
  const shownHost = host.includes(':') ? `[${host}]` : host;
  return { url: `http://${shownHost}:${actualPort}/mcp`, close };
}
