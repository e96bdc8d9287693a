/**
 * The `upstream` section of the configuration: the server behind the proxy, how it is started or reached, and how
 * deep its messages may nest.
 */
import { z } from 'zod';

/**
 * Well above what real results nest (JSON Schemas, documents: a few dozen), well below what overflows the stack
 * when written again (thousands).
 */
export const UPSTREAM_MAX_JSON_DEPTH = 256;

/** The cache of the upstream's list answers (src/upstream/list-cache.ts). */
export const LIST_CACHE_DEFAULTS = { maxAgeMs: 60_000, maxEntries: 1000, maxBytes: 16 * 1024 * 1024 };

const listCacheSchema = z
  .object({
    maxAgeMs: z
      .number()
      .int()
      .min(0)
      .default(LIST_CACHE_DEFAULTS.maxAgeMs)
      .describe(
        'How long an answer to tools/list, prompts/list, resources/list or resources/templates/list is served ' +
          "from the proxy's cache at most (a list change the proxy hears from the upstream drops it sooner). " +
          '0 turns the cache off. Sessions of their own (upstream.sessions: isolated) never use it.',
      ),
    maxEntries: z
      .number()
      .int()
      .positive()
      .default(LIST_CACHE_DEFAULTS.maxEntries)
      .describe('Most list answers kept (one per method, cursor, principal and request shape); the least recently used goes first.'),
    maxBytes: z
      .number()
      .int()
      .positive()
      .default(LIST_CACHE_DEFAULTS.maxBytes)
      .describe('Most bytes of list answers kept; an answer larger than this is never cached.'),
  })
  .strict()
  .default(LIST_CACHE_DEFAULTS)
  .describe(
    "The upstream's list answers, shared by the clients of pooled or shared sessions and of a 2026-07-28 server " +
      '(per principal unless `stateless`). See docs/performance.md, "Cached lists".',
  );

const headerMap = z.record(z.string(), z.string()).describe('HTTP headers sent to an HTTP upstream; values may use ${ENV_VAR}.');

/** How one server is started or reached, and which era it speaks: the same for `upstream` and each of `upstreams`. */
export const serverFields = {
  url: z
    .url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL' })
    .optional()
    .describe('Streamable HTTP endpoint of the upstream server, e.g. http://127.0.0.1:3000/mcp.'),
  command: z
    .union([z.string().min(1), z.array(z.string().min(1)).min(1)])
    .optional()
    .describe('Command that starts a stdio upstream: a string split like a shell would ("node server.js --flag"), or an argv array.'),
  args: z.array(z.string()).default([]).describe('Extra arguments appended to `command`.'),
  env: z
    .record(z.string(), z.string())
    .default({})
    .describe(
      'Environment variables for a stdio upstream, beside the minimal set it always ' +
        'gets (PATH, HOME, USER, SHELL, TERM, LOGNAME); values may use ${ENV_VAR}.',
    ),
  inheritEnv: z
    .boolean()
    .default(false)
    .describe("Give a stdio upstream the proxy's whole environment (its secrets included). Off: only the minimal set plus `env`."),
  cwd: z.string().optional().describe('Working directory of a stdio upstream.'),
  headers: headerMap.default({}),
  era: z
    .enum(['auto', 'legacy', 'modern', 'dual'])
    .default('auto')
    .describe(
      'Protocol era of the upstream. auto: an HTTP upstream is asked server/discover first ' +
        '(2026-07-28 servers answer it; others are initialized as before), and one that answers it ' +
        'is asked to initialize once: a server that takes it is dual-era; a stdio upstream is legacy ' +
        'until it refuses initialize as a 2026-07-28 server does. legacy (legacy sessions relayed, ' +
        'modern clients served through pooled sessions), modern (modern clients passed through, ' +
        'legacy sessions bridged) or dual (each client in its own era): taken as said. See docs/eras.md.',
    ),
};

export const upstreamSchema = z
  .object({
    ...serverFields,
    sessions: z
      .enum(['isolated', 'shared'])
      .default('isolated')
      .describe(
        'Stdio upstream: isolated = one process per client session (the server keeps ' +
          'per-client state apart); shared = client sessions borrow processes from the ' +
          'pool (modern.pool), request by request. See README, "Shared upstream processes".',
      ),
    stateless: z
      .boolean()
      .default(false)
      .describe(
        'Declares that the server keeps nothing between requests that one client could ' +
          'see of another: pooled upstream sessions (modern requests, shared sessions) ' +
          'then serve every principal. Off: each principal gets sessions of its own.',
      ),
    maxProcesses: z
      .number()
      .int()
      .positive()
      .default(16)
      .describe(
        'Most stdio upstream processes for legacy sessions (one each). An initialize beyond ' +
          'it ends the least recently used idle session (nothing in flight, no open stream; ' +
          'its client gets 404 and starts again) to make room, and gets 503 with Retry-After ' +
          'only when every session is busy. Modern requests use modern.pool.maxSessions more.',
      ),
    listCache: listCacheSchema,
    nameSeparator: z
      .string()
      .regex(/^[_.-]{1,2}$/, 'must be one or two of "_", "." and "-"')
      .default('_')
      .describe("With `upstreams`: what stands between a server's prefix and a tool or prompt name (github_create_issue)."),
    maxJsonDepth: z
      .number()
      .int()
      .min(16)
      .max(1000)
      .default(UPSTREAM_MAX_JSON_DEPTH)
      .describe(
        'Deepest nesting of arrays and objects in a message from the server. ' +
          'A deeper one is not taken as a message: an answer becomes an error for the request ' +
          "it answers (the server's output cannot crash the proxy when it is written again); " +
          'anything else is dropped and logged. Real results nest a few dozen levels at most.',
      ),
    toolPins: z
      .string()
      .min(1)
      .optional()
      .describe(
        'JSON file where the digest of each tool definition the upstream lists is pinned, loaded at start ' +
          '(missing: start empty; unreadable or corrupt: the proxy does not start) and written as pins change. ' +
          "Relative to the config file's folder. Absent: pins are kept in memory only. See docs/security.md, " +
          '"Pinned tool definitions".',
      ),
    toolChanges: z
      .enum(['allow', 'announce', 'refuse'])
      .default('allow')
      .describe(
        "What a pinned tool's changed definition does (always logged and counted): allow = the new one is " +
          'pinned in its place; announce = the same, and clients are told with notifications/tools/list_changed; ' +
          'refuse = the tool is no longer listed and its calls are refused until an operator accepts the new ' +
          'definition (mcp-negotiate-proxy pins accept, then a reload); needs toolPins.',
      ),
  })
  .strict()
  .refine((u) => !(u.url && u.command), { message: 'set either `url` or `command`, not both' })
  .refine((u) => u.toolChanges !== 'refuse' || u.toolPins !== undefined, {
    message: 'toolChanges: refuse needs toolPins, the file where an operator accepts a changed tool definition',
    path: ['toolChanges'],
  })
  .describe('The server behind the proxy. With neither `url` nor `command`, the built-in demo server runs.');
