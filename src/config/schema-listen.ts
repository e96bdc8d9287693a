/**
 * The `listen` section of the configuration: where and how clients reach the proxy, and every
 * limit the HTTP front enforces per connection, per client and per message.
 */
import proxyAddr from 'proxy-addr';
import { z } from 'zod';

/**
 * Per-client limits when not configured and clients can be told apart (authentication, a
 * non-loopback bind, a trusted balancer); src/fronts/http/limit-defaults.ts decides.
 */
export const CLIENT_LIMITS = { requestsPerSecond: 100, inFlight: 64 };
/** Per-client sessions when not configured (a stdio upstream with isolated sessions: see clientSessions). */
export const DEFAULT_CLIENT_SESSIONS = 32;
const OFF_ON_LOOPBACK = 'off on loopback without authentication (see listen.perClient)';

export const clientLimitsSchema = z
  .object({
    sessions: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        'Concurrent legacy sessions one client may hold; initialize beyond it gets 429. ' +
          'Default: 32, and for a stdio upstream with isolated sessions half of upstream.maxProcesses, ' +
          `so that one client cannot take every process; ${OFF_ON_LOOPBACK}.`,
      ),
    requestsPerSecond: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        'Requests to the MCP endpoint one client may send per second; beyond it 429 with ' +
          `Retry-After. Default: ${CLIENT_LIMITS.requestsPerSecond}; ${OFF_ON_LOOPBACK}.`,
      ),
    inFlight: z
      .number()
      .int()
      .positive()
      .optional()
      .describe(
        `POSTs one client may have waiting for an answer at once; beyond it 429. Default: ${CLIENT_LIMITS.inFlight}; ${OFF_ON_LOOPBACK}.`,
      ),
  })
  .strict()
  .describe(
    'Limits per client: the authenticated principal, or the client address without authentication. ' +
      'Bound to loopback without authentication (and without listen.trustProxy), ' +
      'every local program is the same client, so a limit left unset is off there (it ' +
      'would only throttle the one local user); the global caps (listen.maxSessions, ' +
      'upstream.maxProcesses, listen.connections) still apply. A value set here always applies.',
  );

/** Whether proxy-addr takes an entry of listen.trustProxy. */
function compilesAsTrust(entry: string): boolean {
  try {
    proxyAddr.compile(entry);
    return true;
  } catch {
    return false;
  }
}

const CONNECTIONS = { headersTimeoutMs: 10_000, bodyTimeoutMs: 30_000, keepAliveTimeoutMs: 5_000, max: 4096, perAddress: 256 };

const SLOW_READERS = { maxUnreadBytes: 8 * 1024 * 1024, stallMs: 30_000 };
const RESUMABLE = { windowMs: 30_000, retryMs: 1000, maxBytes: 8 * 1024 * 1024 };
const HELD_BYTES = { perClient: 32 * 1024 * 1024, total: 512 * 1024 * 1024 };

export const listenSchema = z
  .object({
    transport: z
      .enum(['http', 'stdio'])
      .default('http')
      .describe('How clients reach the proxy: Streamable HTTP, or stdio (the proxy is a child process of the client).'),
    host: z
      .string()
      .min(1)
      .default('127.0.0.1')
      .describe('Interface to bind. Loopback by default; binding elsewhere exposes the upstream to the network.'),
    port: z.number().int().min(0).max(65535).default(8080).describe('TCP port; 0 picks a free one.'),
    path: z.string().startsWith('/').default('/mcp').describe('Path of the MCP endpoint.'),
    allowedOrigins: z
      .array(z.string())
      .optional()
      .describe(
        'Origin header values accepted (DNS-rebinding protection). Default: http(s) ' +
          'origins on localhost, 127.0.0.1 and [::1], any port. "*" allows all.',
      ),
    allowedHosts: z
      .array(z.string())
      .optional()
      .describe(
        'Host header values accepted (name or name:port; DNS-rebinding protection). Default: ' +
          'localhost, 127.x.y.z and [::1], wherever the proxy is bound. "*" allows all.',
      ),
    maxBodyBytes: z
      .number()
      .int()
      .positive()
      .default(4 * 1024 * 1024)
      .describe('Largest accepted request body; larger ones get 413.'),
    maxBatchSize: z
      .number()
      .int()
      .positive()
      .default(100)
      .describe(
        'Most messages in one JSON-RPC batch (2025-03-26 clients); a larger batch is refused whole with -32600, before any of it runs.',
      ),
    maxJsonDepth: z
      .number()
      .int()
      .min(8)
      .max(1000)
      .default(64)
      .describe(
        'Deepest nesting of arrays and objects in a client message (HTTP body or stdio line, ' +
          'either era); deeper ones are refused with -32600 before they are parsed.',
      ),
    responseMode: z
      .enum(['auto', 'sse', 'json'])
      .default('auto')
      .describe(
        'How POSTs are answered: auto = plain JSON when the answer is immediate and alone, SSE when there ' +
          'is more to stream; sse = always SSE; json = always JSON (progress then goes to the GET stream).',
      ),
    maxSessions: z
      .number()
      .int()
      .positive()
      .default(1000)
      .describe(
        'Most concurrent HTTP sessions. An initialize beyond it ends the least recently used idle session ' +
          '(nothing in flight, no open stream) to make room, and gets 503 only when every session is busy.',
      ),
    slowReaders: z
      .object({
        maxUnreadBytes: z
          .number()
          .int()
          .positive()
          .default(SLOW_READERS.maxUnreadBytes)
          .describe(
            'Bytes of earlier messages a client may leave unread on one response stream (the latest message, ' +
              'of any size, does not count); past it the next message is not sent and the stream is closed.',
          ),
        stallMs: z
          .number()
          .int()
          .positive()
          .default(SLOW_READERS.stallMs)
          .describe('A response stream whose client reads nothing of what waits for it for this long is closed.'),
      })
      .strict()
      .default(SLOW_READERS)
      .describe(
        'Clients that stop reading: their streams are closed (and their calls cancelled upstream) instead of buffering without bound.',
      ),
    resumableStreams: z
      .object({
        windowMs: z
          .number()
          .int()
          .min(0)
          .default(RESUMABLE.windowMs)
          .describe(
            'How long the requests of a POST stream whose client went away wait ' +
              'for it to resume the stream (GET with Last-Event-ID) before they are ' +
              'cancelled upstream; 0: not resumable, a closed stream cancels at once.',
          ),
        retryMs: z
          .number()
          .int()
          .positive()
          .default(RESUMABLE.retryMs)
          .describe('The reconnection delay (SSE retry) clients are told in the priming event.'),
        maxBytes: z
          .number()
          .int()
          .positive()
          .default(RESUMABLE.maxBytes)
          .describe(
            'Most bytes of events kept for one stream (a single larger event is not kept); ' +
              'a resume from before the oldest kept event is refused (400).',
          ),
      })
      .strict()
      .default(RESUMABLE)
      .describe('POST streams of 2025-11-25 clients carry event ids (after a priming event) and can be resumed when the connection drops.'),
    heldBytes: z
      .object({
        perClient: z
          .number()
          .int()
          .positive()
          .default(HELD_BYTES.perClient)
          .describe(
            'Most bytes held for one client (principal, or address without authentication) ' +
              'while it is away: finished task results not fetched yet, resumable streams waiting for ' +
              'their client, modern calls waiting for its input. Past it, its oldest held item is ' +
              'let go (a task result is dropped, a stream or call is given up and cancelled upstream).',
          ),
        total: z
          .number()
          .int()
          .positive()
          .default(HELD_BYTES.total)
          .describe('Most bytes held for all clients together; past it, the oldest held item of any client is let go.'),
      })
      .strict()
      .default(HELD_BYTES)
      .describe(
        'The memory budget for what the proxy keeps for clients that are ' +
          'not there to take it; applies whatever the bind and authentication.',
      ),
    perClient: clientLimitsSchema.default({}),
    connections: z
      .object({
        headersTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(CONNECTIONS.headersTimeoutMs)
          .describe('The request line and headers must arrive within this; otherwise 408 and the connection is closed.'),
        bodyTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(CONNECTIONS.bodyTimeoutMs)
          .describe(
            'The whole request body must arrive within this after the headers; ' +
              'otherwise 408 and the connection is closed. Answers may take as long as they take.',
          ),
        keepAliveTimeoutMs: z
          .number()
          .int()
          .positive()
          .default(CONNECTIONS.keepAliveTimeoutMs)
          .describe('An idle keep-alive connection is closed after this.'),
        max: z
          .number()
          .int()
          .positive()
          .default(CONNECTIONS.max)
          .describe('Most open client connections in all; a connection beyond it gets 503 with Connection: close.'),
        perAddress: z
          .number()
          .int()
          .positive()
          .default(CONNECTIONS.perAddress)
          .describe(
            'Most open connections from one client address (a trusted balancer is not counted); beyond it 429 with Connection: close.',
          ),
      })
      .strict()
      .default(CONNECTIONS)
      .describe('Connection discipline: slow or numerous connections cannot exhaust the file descriptors.'),
    cors: z
      .object({
        origins: z
          .array(z.string().min(1))
          .min(1)
          .describe(
            'Browser origins allowed to call the endpoint, e.g. ' +
              '"http://localhost:6274" (the MCP Inspector). They are accepted by the Origin check too.',
          ),
        maxAgeSeconds: z.number().int().min(0).default(600).describe('How long browsers may cache a preflight answer.'),
      })
      .strict()
      .optional()
      .describe(
        'Cross-origin access for browser clients (off unless set): preflight answered, Mcp-Session-Id and MCP-Protocol-Version exposed.',
      ),
    trustProxy: z
      .union(
        [
          z.literal(false),
          z
            .array(z.string().min(1).refine(compilesAsTrust, 'an IP address, a CIDR (10.0.0.0/8), or loopback / linklocal / uniquelocal'))
            .min(1),
        ],
        {
          error: (issue) =>
            issue.input === true
              ? 'true would let any client name its own address in X-Forwarded-For: ' +
                'list the balancer addresses or CIDRs instead, e.g. ["10.0.0.0/8"]'
              : 'false, or a list of balancer addresses or CIDRs',
        },
      )
      .default(false)
      .describe(
        'Behind a balancer: the addresses or CIDRs of the balancers (e.g. ["10.0.0.5"], ' +
          '"loopback", "uniquelocal"). A request from one of them is counted by the rightmost ' +
          'address in X-Forwarded-For that is not a listed balancer, so a client cannot ' +
          'name its own address; per-client limits, refusals and the access log use it.',
      ),
  })
  .strict();
