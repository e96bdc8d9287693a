/**
 * The client-facing halves of a Streamable HTTP exchange: an SSE stream (a POST's response
 * stream or the session's GET stream) and a JSON response that waits for all its answers.
 */
import type { ServerResponse } from 'node:http';

/** A server-sent events stream over a raw Node response. */
export class SseStream {
  private open = true;

  constructor(private readonly res: ServerResponse, headers: Record<string, string>) {
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache, no-transform',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...headers,
    });
    res.flushHeaders();
    res.once('close', () => {
      this.open = false;
    });
  }

  get isOpen(): boolean {
    return this.open && !this.res.writableEnded;
  }

  /** Writes one JSON-RPC message as a `message` event. */
  send(json: string): void {
    if (!this.isOpen) return;
    // Multi-line JSON (pretty-printed by an upstream) needs one `data:` field per line.
    const data = json.includes('\n') ? json.split(/\r?\n/).join('\ndata: ') : json;
    this.res.write(`event: message\ndata: ${data}\n\n`);
  }

  end(): void {
    if (!this.res.writableEnded) this.res.end();
    this.open = false;
  }

  onClose(fn: () => void): void {
    this.res.once('close', fn);
  }
}

/** A JSON reply: collects the responses of a POST and sends them once all have arrived. */
export class JsonReply {
  private readonly bodies: string[] = [];
  private done = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly headers: Record<string, string>,
    private readonly batch: boolean,
  ) {}

  get isOpen(): boolean {
    return !this.done && !this.res.destroyed;
  }

  send(json: string): void {
    this.bodies.push(json);
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    const body = this.batch ? `[${this.bodies.join(',')}]` : this.bodies[0] ?? '';
    this.res.writeHead(200, { 'content-type': 'application/json', ...this.headers });
    this.res.end(body);
  }

  onClose(fn: () => void): void {
    this.res.once('close', fn);
  }
}

export type ResponseChannel = SseStream | JsonReply;
