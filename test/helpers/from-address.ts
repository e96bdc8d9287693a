/**
 * Requests to the proxy from a chosen loopback source address (127.0.0.2, 127.0.0.3, …): each
 * address is another client to per-client limits without authentication.
 */
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { INIT, modern, read, type RawReply } from './raw.js';

/** A POST from `from`, read to its end (JSON, or the messages of an SSE stream). */
export function postFrom(
  from: string,
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<RawReply> {
  return new Promise((resolve, reject) => {
    const req = send(from, url, body, headers, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => {
        const h = new Headers();
        for (const [k, v] of Object.entries(res.headers)) if (typeof v === 'string') h.set(k, v);
        resolve(read(new Response(Buffer.concat(chunks), { status: res.statusCode, headers: h })));
      });
    });
    req.on('error', reject);
    signal?.addEventListener('abort', () => req.destroy(new Error('aborted')), { once: true });
  });
}

/** A modern request from `from`; its HTTP status and first message. */
export async function modernFrom(
  from: string,
  url: string,
  id: number,
  method: string,
  params: Record<string, unknown>,
  caps: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<{ status: number; bytes: number; msg: any }> {
  const m = modern(id, method, params, caps);
  const reply = await postFrom(from, url, m.body, m.headers, signal);
  return { status: reply.status, bytes: Buffer.byteLength(reply.text), msg: reply.messages[0] };
}

/**
 * `n` tasks of the client at `from` (which declares the tasks extension), each answering `bytes`
 * of text after 100 ms, never fetched; `calls`: the tools/call requests it took (a call answered
 * at once, because the client had as many tasks running as it may, is made again).
 */
export async function tasksFrom(from: string, url: string, n: number, bytes: number): Promise<{ ids: string[]; calls: number }> {
  const ids: string[] = [];
  let calls = 0;
  while (ids.length < n && calls < n * 20) {
    calls++;
    const r = await modernFrom(
      from,
      url,
      nextId++,
      'tools/call',
      { name: 'slow_progress', arguments: { steps: 1, delayMs: 100, resultBytes: bytes } },
      TASKS,
    );
    if (r.status !== 200 || !r.msg.result) throw new Error(`tools/call failed: ${r.status} ${JSON.stringify(r.msg).slice(0, 300)}`);
    if (r.msg.result.resultType === 'task') ids.push(r.msg.result.taskId);
  }
  return { ids, calls };
}

/** Capabilities that declare the tasks extension. */
export const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } };
let nextId = 1_000_000;

/** A legacy (2025-11-25) session of the client at `from`; the headers for its later requests. */
export async function sessionFrom(from: string, url: string): Promise<Record<string, string>> {
  const init = await postFrom(from, url, INIT);
  const id = init.headers.get('mcp-session-id');
  if (init.status !== 200 || !id) throw new Error(`initialize failed: ${init.status} ${init.text}`);
  const headers = { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' };
  await postFrom(from, url, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers);
  return headers;
}

/**
 * A POST from `from` whose SSE stream is read until its first event that carries a message (a
 * progress notification), then dropped: the client went away with its request unanswered.
 */
export function postAndDrop(from: string, url: string, body: unknown, headers: Record<string, string>): Promise<{ lastEventId: string }> {
  return new Promise((resolve, reject) => {
    const req = send(from, url, body, headers, (res) => {
      let text = '';
      let lastEventId = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
        for (let end = text.indexOf('\n\n'); end !== -1; end = text.indexOf('\n\n')) {
          const event = text.slice(0, end);
          text = text.slice(end + 2);
          const id = /^id: (.+)$/m.exec(event)?.[1];
          if (id) lastEventId = id;
          if (/^data: \S/m.test(event)) {
            req.destroy();
            return resolve({ lastEventId });
          }
        }
      });
      res.on('end', () => reject(new Error(`the stream ended before a message: ${res.statusCode} ${text.slice(0, 300)}`)));
      res.on('error', () => undefined); // dropped on purpose
    });
    req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
  });
}

function send(
  from: string,
  url: string,
  body: unknown,
  headers: Record<string, string>,
  onResponse: (res: IncomingMessage) => void,
): ClientRequest {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  const req = request(
    url,
    {
      method: 'POST',
      localAddress: from,
      agent: false,
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'content-length': Buffer.byteLength(text),
        ...headers,
      },
    },
    onResponse,
  );
  req.end(text);
  return req;
}
