#!/usr/bin/env node
/**
 * lean-server: the cheapest MCP server we can write, so a benchmark measures the proxy and the
 * client rather than the upstream. No SDK, no validation beyond what is needed to answer.
 *
 *   stdio: node bench/lean-server.mjs
 *          newline-delimited JSON-RPC on stdin/stdout; exits when stdin ends.
 *   HTTP:  node bench/lean-server.mjs --http [--port N] [--sse]
 *          Streamable HTTP on 127.0.0.1:N/mcp (N=0: any free port); prints `LISTENING <url>`.
 *          Stateful: initialize issues an Mcp-Session-Id; POST answers application/json (or a
 *          one-event SSE stream with --sse); notifications get 202; GET gets 405 (no standalone
 *          stream); DELETE ends the session; an unknown session id gets 404.
 *
 * Methods: initialize, ping, tools/list (one tool), tools/call echo {text} -> text. Every other
 * request gets -32601; every notification is ignored.
 */
import { createServer } from 'node:http';
import { randomUUID } from 'node:crypto';

const SUPPORTED = ['2025-11-25', '2025-06-18', '2025-03-26', '2024-11-05'];
const ECHO_TOOL = {
  name: 'echo',
  description: 'Echo text back.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' }, bytes: { type: 'integer' } } },
};

/** Returns the response object for one message, or undefined for notifications. */
function handle(msg) {
  if (msg === null || typeof msg !== 'object' || typeof msg.method !== 'string') return undefined;
  if (msg.id === undefined || msg.id === null) return undefined; // notification
  const ok = (result) => ({ jsonrpc: '2.0', id: msg.id, result });
  switch (msg.method) {
    case 'initialize': {
      const asked = msg.params?.protocolVersion;
      return ok({
        protocolVersion: SUPPORTED.includes(asked) ? asked : SUPPORTED[0],
        capabilities: { tools: {} },
        serverInfo: { name: 'lean-server', version: '1.0.0' },
      });
    }
    case 'ping':
      return ok({});
    case 'tools/list':
      return ok({ tools: [ECHO_TOOL] });
    case 'tools/call': {
      const p = msg.params ?? {};
      if (p.name !== 'echo') return { jsonrpc: '2.0', id: msg.id, error: { code: -32602, message: `Unknown tool: ${p.name}` } };
      // `bytes`: an answer of that many characters instead (the bench's large answers).
      const bytes = p.arguments?.bytes;
      const text = Number.isSafeInteger(bytes) && bytes > 0 ? 'x'.repeat(Math.min(bytes, 64 << 20)) : String(p.arguments?.text ?? '');
      return ok({ content: [{ type: 'text', text }] });
    }
    default:
      return { jsonrpc: '2.0', id: msg.id, error: { code: -32601, message: `Method not found: ${msg.method}` } };
  }
}

function parse(text) {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

function serveStdio() {
  let pending = '';
  process.stdin.on('data', (chunk) => {
    const text = pending + chunk.toString();
    let start = 0;
    let out = '';
    for (let nl = text.indexOf('\n'); nl !== -1; nl = text.indexOf('\n', start)) {
      const line = text.slice(start, nl).trim();
      start = nl + 1;
      if (!line) continue;
      const msg = parse(line);
      const reply = Array.isArray(msg) ? msg.map(handle).filter(Boolean) : handle(msg);
      if (reply && (!Array.isArray(reply) || reply.length)) out += JSON.stringify(reply) + '\n';
    }
    pending = text.slice(start);
    if (out) process.stdout.write(out);
  });
  process.stdin.on('end', () => process.exit(0));
  process.on('SIGTERM', () => process.exit(0));
}

function serveHttp(argv) {
  const portArg = argv.indexOf('--port');
  const port = portArg >= 0 ? Number(argv[portArg + 1]) : 0;
  const sse = argv.includes('--sse');
  const sessions = new Set();
  const json = (res, status, body, headers = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(body === undefined ? undefined : JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    if (!req.url || !req.url.startsWith('/mcp'))
      return json(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Not found' } });
    const sid = req.headers['mcp-session-id'];
    if (typeof sid === 'string' && !sessions.has(sid)) {
      return json(res, 404, { jsonrpc: '2.0', id: null, error: { code: -32001, message: 'Session not found' } });
    }
    if (req.method === 'DELETE') {
      if (typeof sid === 'string') sessions.delete(sid);
      res.writeHead(200);
      return res.end();
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST, DELETE' });
      return res.end();
    }
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const msg = parse(body);
      if (msg === undefined) return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
      const headers = {};
      if (!Array.isArray(msg) && msg.method === 'initialize') {
        const id = randomUUID();
        sessions.add(id);
        headers['mcp-session-id'] = id;
      } else if (typeof sid !== 'string') {
        return json(res, 400, { jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Mcp-Session-Id header is required' } });
      }
      const reply = Array.isArray(msg) ? msg.map(handle).filter(Boolean) : handle(msg);
      if (!reply || (Array.isArray(reply) && reply.length === 0)) {
        res.writeHead(202, headers);
        return res.end();
      }
      if (sse) {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', ...headers });
        return res.end(`event: message\ndata: ${JSON.stringify(reply)}\n\n`);
      }
      json(res, 200, reply, headers);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(port, '127.0.0.1', () => {
    process.stdout.write(`LISTENING http://127.0.0.1:${server.address().port}/mcp\n`);
  });
  const stop = () => {
    server.closeAllConnections();
    server.close(() => process.exit(0));
    setTimeout(() => process.exit(0), 1000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (process.argv.includes('--http')) serveHttp(process.argv.slice(2));
else serveStdio();
