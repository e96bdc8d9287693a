/**
 * One access-log line per request to the MCP endpoint, at info, when the response is over:
 * HTTP method, JSON-RPC method and its target (tool, resource or prompt), era, session (its log name,
 * never the id), principal, status, duration, bytes in and out, client address, and the feature
 * tags in effect with the profile that gave some and why, each bounded. Handlers add what they
 * learn about the exchange with `noteExchange`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import type { Frame } from '../jsonrpc/message.js';
import type { Era } from '../mcp/era.js';
import { clip } from './log-text.js';
import type { RequestSpan } from './tracing.js';

/**
 * Bounds on the fields a client controls (its method, the tool, resource or prompt it names, its
 * principal, the reason it was refused, the address a balancer wrote): a line is at most a few
 * kilobytes, whatever the request. The other fields are numbers or the proxy's own words.
 */
const MAX_NAME_CHARS = 200;
const MAX_REASON_CHARS = 500;
const MAX_ADDRESS_CHARS = 100;
const MAX_TAGS_CHARS = 1000;

/** The feature tags in effect for an exchange: its client's own and those assigned to it (a profile, the MCP-Features header). */
export interface TagsNote {
  /** The profile chosen, and why. */
  profile?: { name: string; why: string };
  tags: string[];
  /** Assigned tags the client's own declaration overrode. */
  overridden: string[];
}

export interface ExchangeNote {
  era?: Era;
  session?: string;
  /** Why the request was refused before it was served (authentication, a limit). */
  refused?: string;
  /** The tags in effect, worked out only when the line is written (undefined: nothing negotiated). */
  tags?: () => TagsNote | undefined;
}

declare module 'fastify' {
  interface FastifyRequest {
    /** What the access log says about the exchange beyond HTTP. */
    exchange: Exchange | null;
    /** The request's span, when tracing is on (ended with the access-log line). */
    span: RequestSpan | null;
  }
}

/** What the access log learns about one exchange (one shape for every request). */
class Exchange implements ExchangeNote {
  rpc: string | undefined = undefined;
  target: string | undefined = undefined;
  era: Era | undefined = undefined;
  session: string | undefined = undefined;
  refused: string | undefined = undefined;
  tags: (() => TagsNote | undefined) | undefined = undefined;
}

/** Also told of every finished request: its JSON-RPC method, era, HTTP status and duration (for /metrics). */
export type RequestObserver = (method: string | undefined, era: string | undefined, status: number, seconds: number) => void;

export interface AccessLogOptions {
  /** Which requests get a line (those to the MCP endpoint). */
  logged(req: FastifyRequest): boolean;
  /** The client's address, as the limits count it. */
  address(req: FastifyRequest): string;
  log: Logger;
  observe?: RequestObserver;
  /** With several servers behind the endpoint: the one a request's target belongs to. */
  serverOf?(rpc: string, target: string): string | undefined;
}

export function registerAccessLog(app: FastifyInstance, { logged, address, log, observe, serverOf }: AccessLogOptions): void {
  app.decorateRequest('exchange', null);
  app.decorateRequest('span', null);
  // The line's fields are plain values, never headers: the redaction the logger may carry (its
  // wildcard path is run on every field of every line) has nothing to find in it.
  const lines = log.child({}, { redact: [] });
  app.addHook('onRequest', (req, reply, done) => {
    if (!logged(req)) return done();
    const exchange = (req.exchange = new Exchange());
    const started = performance.now();
    const socket = req.raw.socket;
    const writtenBefore = socket.bytesWritten;
    reply.raw.once('close', () => {
      const { rpc, target, era } = exchange;
      const res = reply.raw;
      const seconds = (performance.now() - started) / 1000;
      observe?.(
        rpc ?? (req.method === 'GET' ? 'GET stream' : req.method === 'DELETE' ? 'DELETE' : undefined),
        era,
        res.statusCode,
        seconds,
      );
      req.span?.end(
        `mcp ${rpc ?? req.method}`,
        {
          'mcp.method': rpc ?? '',
          'mcp.era': era ?? '',
          ...(target ? { 'mcp.name': target } : {}),
          'http.response.status_code': res.statusCode,
        },
        res.statusCode >= 500,
      );
      if (!lines.isLevelEnabled('info')) return;
      const tags = exchange.tags?.();
      // Fields left undefined are not written: every line has this one shape, and only what is known shows.
      lines.info(
        {
          http: req.method,
          rpc: rpc || undefined,
          target: target || undefined,
          server: rpc && target && serverOf ? serverOf(rpc, target) : undefined,
          era: era || undefined,
          session: exchange.session || undefined,
          principal: req.principal ? clip(req.principal, MAX_NAME_CHARS) : undefined,
          refused: exchange.refused ? clip(exchange.refused, MAX_REASON_CHARS) : undefined,
          profile: tags?.profile ? clip(`${tags.profile.name} (${tags.profile.why})`, MAX_REASON_CHARS) : undefined,
          tags: tags?.tags.length ? clip(tags.tags.join(' '), MAX_TAGS_CHARS) : undefined,
          overridden: tags?.overridden.length ? clip(tags.overridden.join(' '), MAX_TAGS_CHARS) : undefined,
          status: res.statusCode,
          ms: Math.round(seconds * 10_000) / 10,
          bytesIn: Number(req.headers['content-length'] ?? 0),
          bytesOut: socket.bytesWritten - writtenBefore,
          address: clip(address(req), MAX_ADDRESS_CHARS),
          aborted: res.writableFinished ? undefined : true,
        },
        'request',
      );
    });
    done();
  });
}

/** Records the JSON-RPC side of a POST (its first message, or the batch) and what the handler knows. */
export function noteExchange(req: FastifyRequest, frames: Frame[] | undefined, note?: ExchangeNote): void {
  const exchange = req.exchange;
  if (!exchange) return;
  if (note) {
    if (note.era !== undefined) exchange.era = note.era;
    if (note.session !== undefined) exchange.session = note.session;
    if (note.refused !== undefined) exchange.refused = note.refused;
    if (note.tags !== undefined) exchange.tags = note.tags;
  }
  if (!frames?.length) return;
  const first = frames[0].msg as { method?: unknown; params?: { name?: unknown; uri?: unknown } };
  exchange.rpc =
    frames.length > 1 ? `batch of ${frames.length}` : typeof first.method === 'string' ? clip(first.method, MAX_NAME_CHARS) : 'response';
  const target = first.params?.name ?? first.params?.uri;
  if (frames.length === 1 && typeof target === 'string') exchange.target = clip(target, MAX_NAME_CHARS);
}
