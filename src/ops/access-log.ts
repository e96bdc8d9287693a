/**
 * One access-log line per request to the MCP endpoint, at info, when the response is over:
 * HTTP method, JSON-RPC method and its target (tool, resource or prompt), era, session (its log name,
 * never the id), principal, status, duration, bytes in and out, client address. Handlers add
 * what they learn about the exchange with `noteExchange`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Frame } from '../jsonrpc/message.js';
import type { RequestSpan } from './tracing.js';

export interface ExchangeNote {
  era?: 'legacy' | 'modern';
  session?: string;
  /** Why the request was refused before it was served (authentication, a limit). */
  refused?: string;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What the access log says about the exchange beyond HTTP. */
    exchange: (ExchangeNote & { rpc?: string; target?: string }) | null;
    /** The request's span, when tracing is on (ended with the access-log line). */
    span: RequestSpan | null;
  }
}

/** Also told of every finished request: its JSON-RPC method, era, HTTP status and duration (for /metrics). */
export type RequestObserver = (method: string | undefined, era: string | undefined, status: number, seconds: number) => void;

export function registerAccessLog(app: FastifyInstance, path: string, log: Logger, observe?: RequestObserver): void {
  app.decorateRequest('exchange', null);
  app.decorateRequest('span', null);
  app.addHook('onRequest', (req, reply, done) => {
    if (req.routeOptions.url !== path) return done();
    req.exchange = {};
    const started = performance.now();
    const socket = req.raw.socket;
    const writtenBefore = socket.bytesWritten;
    reply.raw.once('close', () => {
      const { rpc, target, era, session, refused } = req.exchange ?? {};
      const seconds = (performance.now() - started) / 1000;
      observe?.(rpc ?? (req.method === 'GET' ? 'GET stream' : req.method === 'DELETE' ? 'DELETE' : undefined), era, reply.raw.statusCode, seconds);
      req.span?.end(`mcp ${rpc ?? req.method}`, { 'mcp.method': rpc ?? '', 'mcp.era': era ?? '', ...(target ? { 'mcp.name': target } : {}), 'http.response.status_code': reply.raw.statusCode }, reply.raw.statusCode >= 500);
      if (!log.isLevelEnabled('info')) return;
      log.info(
        {
          http: req.method,
          ...(rpc ? { rpc } : {}),
          ...(target ? { target } : {}),
          ...(era ? { era } : {}),
          ...(session ? { session } : {}),
          ...(req.principal ? { principal: req.principal } : {}),
          ...(refused ? { refused } : {}),
          status: reply.raw.statusCode,
          ms: Math.round(seconds * 10_000) / 10,
          bytesIn: Number(req.headers['content-length'] ?? 0),
          bytesOut: socket.bytesWritten - writtenBefore,
          address: req.ip,
          ...(reply.raw.writableFinished ? {} : { aborted: true }),
        },
        'request',
      );
    });
    done();
  });
}

/** Records the JSON-RPC side of a POST (its first message, or the batch) and what the handler knows. */
export function noteExchange(req: FastifyRequest, frames: Frame[] | undefined, note: ExchangeNote = {}): void {
  if (!req.exchange) return;
  Object.assign(req.exchange, note);
  if (!frames?.length) return;
  const first = frames[0].msg as { method?: unknown; params?: { name?: unknown; uri?: unknown } };
  req.exchange.rpc = frames.length > 1 ? `batch of ${frames.length}` : typeof first.method === 'string' ? first.method : 'response';
  const target = first.params?.name ?? first.params?.uri;
  if (frames.length === 1 && typeof target === 'string') req.exchange.target = target.slice(0, 200);
}
