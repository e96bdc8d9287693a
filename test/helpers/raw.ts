import { request as httpRequest } from 'node:http';
import { SSE_TYPE, mediaTypeOf } from '../../src/mcp/media-type.js';
/**
 * A deliberately low-level Streamable HTTP client (fetch), for tests that need exact statuses,
 * headers and bodies, or that misbehave on purpose.
 */
export interface RawReply {
  status: number;
  headers: Headers;
  text: string;
  /** JSON-RPC messages in the body (JSON or SSE `data:` lines). */
  messages: any[];
}

export const INIT = {
  jsonrpc: '2.0',
  id: 0,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-test', version: '1' } },
};

export async function rawPost(url: string, body: unknown, headers: Record<string, string> = {}, signal?: AbortSignal): Promise<RawReply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal,
  });
  return read(res);
}

/** A POST with an arbitrary Host header (fetch forbids setting it). */
export function postWithHost(url: string, host: string, body: unknown): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      { method: 'POST', headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

export async function read(res: Response): Promise<RawReply> {
  const text = await res.text();
  let messages: any[] = [];
  if (mediaTypeOf(res.headers.get('content-type')) === SSE_TYPE) {
    // A priming event (an id, no data) carries no message.
    messages = text
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l.length > 6)
      .map((l) => JSON.parse(l.slice(6)));
  } else if (text) {
    const v = JSON.parse(text);
    messages = Array.isArray(v) ? v : [v];
  }
  return { status: res.status, headers: res.headers, text, messages };
}

/** Initializes a session (declaring `capabilities`, if given); returns headers to send on every later request. */
export async function rawSession(url: string, capabilities?: Record<string, unknown>): Promise<Record<string, string>> {
  const init = await rawPost(url, capabilities ? { ...INIT, params: { ...INIT.params, capabilities } } : INIT);
  const id = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !id) throw new Error(`initialize failed: ${init.status} ${init.text}`);
  const headers = { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
  await rawPost(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

export function callTool(id: number, name: string, args: Record<string, unknown> = {}): unknown {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } };
}

const MODERN_VERSION = '2026-07-28';

/** The `_meta` of a modern (2026-07-28) request. */
export function meta(capabilities: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    'io.modelcontextprotocol/protocolVersion': MODERN_VERSION,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    ...extra,
  };
}

/** A modern request with matching headers; `over` replaces headers (undefined removes one). */
export function modern(id: number, method: string, params: Record<string, unknown> = {}, capabilities: Record<string, unknown> = {}) {
  const body = {
    jsonrpc: '2.0',
    id,
    method,
    params: { ...params, _meta: meta(capabilities, (params._meta as Record<string, unknown>) ?? {}) },
  };
  const headers: Record<string, string> = { 'mcp-protocol-version': MODERN_VERSION, 'mcp-method': method };
  const name = (params.name ?? params.uri ?? params.taskId) as string | undefined;
  if (name !== undefined && ['tools/call', 'prompts/get', 'resources/read', 'tasks/get', 'tasks/update', 'tasks/cancel'].includes(method))
    headers['mcp-name'] = name;
  return { body, headers };
}

/** An SSE response read as it comes: the messages so far, and `next` for the first (seen or coming) one that matches. */
export function sseMessages(res: Response): { messages: any[]; next(match: (m: any) => boolean): Promise<any> } {
  const messages: any[] = [];
  const waiters: Array<{ match: (m: any) => boolean; resolve: (m: any) => void; reject: (err: Error) => void }> = [];
  /** Set once the stream has ended (or broke, or held a line that is not JSON): waiting further is in vain. */
  let over: Error | undefined;
  void (async () => {
    let buffered = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffered += Buffer.from(chunk).toString('utf8');
      const lines = buffered.split('\n');
      buffered = lines.pop()!; // a partial line waits for the rest
      for (const line of lines) {
        if (!line.startsWith('data: ') || line.length === 6) continue; // a priming event carries no message
        const msg = JSON.parse(line.slice(6));
        messages.push(msg);
        for (const w of waiters.filter((w) => w.match(msg))) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(msg);
        }
      }
    }
  })()
    .then(() => new Error('the SSE stream ended without the message waited for'))
    .catch((err: Error) => new Error(`the SSE stream broke: ${err.message}`))
    .then((err) => {
      over = err;
      for (const w of waiters.splice(0)) w.reject(err);
    });
  return {
    messages,
    next: (match) =>
      new Promise((resolve, reject) => {
        const found = messages.find(match);
        if (found) resolve(found);
        else if (over) reject(over);
        else waiters.push({ match, resolve, reject });
      }),
  };
}

/** The value of one series (`name` or `name{labels}`, exactly as exposed) in a Prometheus text scrape; NaN when absent. */
export function metricIn(text: string, series: string): number {
  const line = `\n${series} `;
  const at = `\n${text}`.indexOf(line);
  return at === -1 ? NaN : Number(text.slice(at - 1 + line.length).split('\n', 1)[0]);
}

/** Scrapes the proxy's /metrics (next to its MCP endpoint `url`) for one series. */
export async function metricValue(url: string, series: string): Promise<number> {
  return metricIn(await (await fetch(new URL('/metrics', url))).text(), series);
}

/** Opens a session's GET stream (resolves once its headers are in; the body is left unread); `close` is the client going away. */
export async function openGetStream(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; response: Response; close(): void }> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { ...headers, accept: 'text/event-stream' }, signal: abort.signal });
  // The response is kept: fetch cancels the body of a Response that is garbage-collected unread, which would close the stream.
  return { status: res.status, response: res, close: () => abort.abort() };
}
