/**
 * The configuration, as one zod schema: the YAML file, the CLI flags and the MCP_PROXY_*
 * environment all end up here. Defaults live in the schema, so `parseConfig({})` is the
 * zero-config product. The JSON Schema in config/config.schema.json is generated from this.
 */
import { z } from 'zod';
import { serverVariantsSchema } from '../extensions/server-variants/variants.js';
import { ruleSchema } from '../rules/compile.js';
import { DEFAULT_CLIENT_SESSIONS, listenSchema } from './schema-listen.js';
import { profileProblems, profilesSchema } from './schema-profiles.js';

/**
 * Well above what real results nest (JSON Schemas, documents: a few dozen), well below what overflows the stack
 * when written again (thousands).
 */
export const UPSTREAM_MAX_JSON_DEPTH = 256;

const headerMap = z.record(z.string(), z.string()).describe('HTTP headers sent to an HTTP upstream; values may use ${ENV_VAR}.');

export const upstreamSchema = z
  .object({
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
    headers: headerMap.default({}),
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
  })
  .strict()
  .refine((u) => !(u.url && u.command), { message: 'set either `url` or `command`, not both' })
  .describe('The server behind the proxy. With neither `url` nor `command`, the built-in demo server runs.');

export const timeoutsSchema = z
  .object({
    requestMs: z.number().int().positive().default(60_000).describe('Per-request upstream timeout; progress notifications restart it.'),
    initializeMs: z
      .number()
      .int()
      .positive()
      .default(120_000)
      .describe('Timeout of initialize, which includes starting a stdio upstream (npx may download first).'),
    sessionIdleMs: z
      .number()
      .int()
      .positive()
      .default(10 * 60_000)
      .describe(
        'An HTTP session with no traffic, no pending request and no open GET stream is ended ' +
          'after this (one whose client never opened a GET stream: sessionIdleNoStreamMs).',
      ),
    sessionIdleNoStreamMs: z
      .number()
      .int()
      .positive()
      .default(60_000)
      .describe(
        'An HTTP session whose client never opened a GET stream, with no traffic and no pending request, ' +
          'is ended after this (never later than sessionIdleMs). Such a client listens for nothing between ' +
          'requests; scripts that exit without DELETE leave these behind. A minute covers a client thinking ' +
          'between calls, and frees a left-behind upstream process in about a minute instead of ten.',
      ),
    sessionMaxAgeMs: z
      .number()
      .int()
      .positive()
      .default(24 * 60 * 60_000)
      .describe(
        'A session older than this is ended (404; the client starts a new one): bounds how long a session id, ' +
          'a credential, stays usable, and how long an upstream session lives when clients never DELETE.',
      ),
    shutdownGraceMs: z
      .number()
      .int()
      .positive()
      .default(2_000)
      .describe('Grace period when stopping a stdio upstream: stdin closed, then SIGTERM, then SIGKILL.'),
  })
  .strict();

const SHAPING_LIMITS = { maxResultBytes: 1024 * 1024, timeBudgetMs: 50 };

export const shapingLimitsSchema = z
  .object({
    maxResultBytes: z
      .number()
      .int()
      .positive()
      .default(SHAPING_LIMITS.maxResultBytes)
      .describe('Results holding more text than this (characters) are relayed unchanged, never reshaped.'),
    timeBudgetMs: z
      .number()
      .int()
      .positive()
      .default(SHAPING_LIMITS.timeBudgetMs)
      .describe(
        'CPU time one result may spend in the transformers; past it the upstream ' +
          'result is relayed unchanged (counted in /metrics, logged once per tool).',
      ),
  })
  .strict()
  .describe('Limits that keep untrusted upstream output from stalling the proxy.');

const TOKEN_COUNTING = { count: false, maxChars: 256 * 1024 };

export const tokenCountingSchema = z
  .object({
    count: z
      .boolean()
      .default(TOKEN_COUNTING.count)
      .describe(
        'Count the tokens of negotiated results, in (from the upstream) and out (to the client), per method ' +
          'and tool in /metrics (o200k_base; loads ~70 MB and costs ~0.1 ms per KB, after the answer is sent).',
      ),
    maxChars: z
      .number()
      .int()
      .positive()
      .default(TOKEN_COUNTING.maxChars)
      .describe('Results with more text than this are not counted (counted as skipped).'),
  })
  .strict()
  .describe('Token counts of negotiated results, to see what negotiation saves.');

export const negotiationSchema = z
  .object({
    enabled: z
      .boolean()
      .default(true)
      .describe(
        'Speak io.modelcontextprotocol/content-negotiation for the upstream and reshape results for clients that declare feature tags.',
      ),
    useDefaultRules: z
      .boolean()
      .default(true)
      .describe(
        "Append the built-in rules (the SEP's tag registry: format=json, format=markdown, " +
          'format=text, verbosity=compact, agent/human audience) after your own.',
      ),
    rules: z.array(ruleSchema).default([]).describe('Your rules, in execution order.'),
    plugins: z.array(z.string()).default([]).describe('ES modules (paths relative to the config file) exporting transformers.'),
    limits: shapingLimitsSchema.default(SHAPING_LIMITS),
    tokens: tokenCountingSchema.default(TOKEN_COUNTING),
  })
  .strict();

const cacheHint = z
  .object({
    ttlMs: z.number().int().min(0).describe('How long a client may reuse the result (0: always stale).'),
    cacheScope: z
      .enum(['private', 'public'])
      .describe('public: shareable across authorization contexts (shared gateways may cache it); private: only within one.'),
  })
  .strict();

const MODERN_DEFAULTS = {
  enabled: true,
  inputTimeoutMs: 5 * 60_000,
  parkedPerClient: 4,
  maxInputRequestBytes: 1024 * 1024,
  pool: { maxSessions: 16, idleMs: 5 * 60_000, warmSpare: true },
  cache: { default: { ttlMs: 0, cacheScope: 'private' as const } },
  tasks: { enabled: true, answerWithinMs: 500, ttlMs: 60 * 60_000, maxRunMs: 15 * 60_000, pollIntervalMs: 1000, perClient: 8 },
};

export const modernSchema = z
  .object({
    enabled: z.boolean().default(true).describe('Serve 2026-07-28 (modern, stateless) clients beside legacy ones on the same endpoint.'),
    stateSecret: z
      .string()
      .min(32, 'at least 32 characters, as replicas.secret (e.g. openssl rand -base64 32)')
      .optional()
      .describe('Older name of `replicas.secret`, used when that is unset (e.g. ${MCP_PROXY_STATE_SECRET}).'),
    inputTimeoutMs: z
      .number()
      .int()
      .positive()
      .default(MODERN_DEFAULTS.inputTimeoutMs)
      .describe('How long a call waits for the client to supply requested input (the retry) before it is cancelled upstream.'),
    parkedPerClient: z
      .number()
      .int()
      .positive()
      .default(MODERN_DEFAULTS.parkedPerClient)
      .describe(
        'Most calls of one client (principal, or address without authentication) ' +
          'waiting for its input at once; when a new call may ask for input beyond it, ' +
          'the oldest waiting call is given up (cancelled upstream; its requestState resumes nothing).',
      ),
    maxInputRequestBytes: z
      .number()
      .int()
      .positive()
      .default(MODERN_DEFAULTS.maxInputRequestBytes)
      .describe(
        "Most bytes of input requests (the upstream's elicitation, sampling and roots " +
          'requests during a call) put to a modern client in one round; a task repeats them ' +
          'on every tasks/get until answered. A larger round is not put to the client: ' +
          "the upstream's requests are answered with an error saying so, and the call goes on.",
      ),
    pool: z
      .object({
        maxSessions: z
          .number()
          .int()
          .positive()
          .default(MODERN_DEFAULTS.pool.maxSessions)
          .describe('Most upstream sessions (stdio: processes) serving modern requests; a call that may ask for input holds one alone.'),
        idleMs: z
          .number()
          .int()
          .positive()
          .default(MODERN_DEFAULTS.pool.idleMs)
          .describe('An upstream session unused for this long is closed.'),
        perClient: z
          .number()
          .int()
          .positive()
          .optional()
          .describe(
            'Most pooled upstream sessions one client (principal, ' +
              'or address without authentication) holds at once. Default: a quarter of maxSessions.',
          ),
        warmSpare: z
          .boolean()
          .default(MODERN_DEFAULTS.pool.warmSpare)
          .describe(
            'Stdio upstream: keep one extra process started (from the first modern request on), ' +
              'so a new session waits for an initialize, not a process start.',
          ),
      })
      .strict()
      .default(MODERN_DEFAULTS.pool),
    cache: z
      .object({ default: cacheHint.default(MODERN_DEFAULTS.cache.default) })
      .catchall(cacheHint)
      .default(MODERN_DEFAULTS.cache)
      .describe(
        'ttlMs and cacheScope put on server/discover, list and resources/read results, per method (e.g. "tools/list"), with a default.',
      ),
    tasks: z
      .object({
        enabled: z
          .boolean()
          .default(MODERN_DEFAULTS.tasks.enabled)
          .describe('Offer the tasks extension (io.modelcontextprotocol/tasks) to modern clients, for every tool of the upstream.'),
        answerWithinMs: z
          .number()
          .int()
          .min(0)
          .default(MODERN_DEFAULTS.tasks.answerWithinMs)
          .describe(
            'A tools/call from a client that declares tasks, still running after this long, ' +
              'is answered with a task; one that finishes or asks for input sooner is answered as usual. A tool ' +
              'whose execution.taskSupport is "required" is refused to a client that does not declare tasks.',
          ),
        ttlMs: z
          .number()
          .int()
          .positive()
          .default(MODERN_DEFAULTS.tasks.ttlMs)
          .describe('How long a task is kept from its creation, its result included; a task still running then is cancelled upstream.'),
        maxRunMs: z
          .number()
          .int()
          .positive()
          .default(MODERN_DEFAULTS.tasks.maxRunMs)
          .describe(
            'Longest a task may run (progress does not extend it); past it the call is ' +
              'cancelled upstream and the task fails with TASK_TIMEOUT, its place and upstream ' +
              'session freed. Shorter than ttlMs, so that a task that ran its full time still ' +
              'has its result kept for a while; a task is never kept past ttlMs either way.',
          ),
        pollIntervalMs: z
          .number()
          .int()
          .positive()
          .default(MODERN_DEFAULTS.tasks.pollIntervalMs)
          .describe('How often clients are asked to poll a task (pollIntervalMs).'),
        perClient: z
          .number()
          .int()
          .positive()
          .default(MODERN_DEFAULTS.tasks.perClient)
          .describe(
            'Most tasks one client (principal, or address without authentication) has running at once; ' +
              'beyond it calls are answered without a task (a task-only tool is refused with Retry-After).',
          ),
      })
      .strict()
      .default(MODERN_DEFAULTS.tasks),
  })
  .strict()
  .describe('The modern protocol era (2026-07-28): stateless requests, server/discover, input_required rounds.');

const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519'] as const;

export const authSchema = z
  .object({
    tokens: z
      .array(
        z
          .object({
            name: z
              .string()
              .regex(/^[A-Za-z0-9_.@:-]{1,64}$/, 'letters, digits, "_", ".", "@", ":" and "-", at most 64')
              .describe('Who holds the token (the principal, in logs and limits).'),
            sha256: z
              .string()
              .regex(/^[0-9a-fA-F]{64}$/, 'the SHA-256 of the token in hex (mcp-negotiate-proxy hash-token prints it)')
              .describe('SHA-256 of the token, hex; the token itself is never stored.'),
          })
          .strict(),
      )
      .default([])
      .describe('Static bearer tokens / API keys, stored hashed. Clients send Authorization: Bearer <token> or the apiKeyHeader.'),
    apiKeyHeader: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/)
      .default('x-api-key')
      .describe('Header that may carry a static token instead of Authorization.'),
    jwt: z
      .object({
        jwksUrl: z.url({ protocol: /^https?$/ }).describe('Where the signing keys are published (JWKS).'),
        issuer: z.string().min(1).describe('Required `iss`.'),
        audience: z.string().min(1).describe("Required `aud` (usually this endpoint's URL)."),
        requiredScopes: z
          .array(z.string().min(1))
          .default([])
          .describe('Scopes every token must grant (`scope` or `scp`); missing ones get 403 insufficient_scope.'),
        principalClaim: z.string().min(1).default('sub').describe('The claim that names the principal.'),
        algorithms: z
          .array(z.enum(JWT_ALGORITHMS))
          .min(1)
          .default([...JWT_ALGORITHMS])
          .describe('Signature algorithms accepted (asymmetric only: a shared-secret HMAC key would let anyone who holds it mint tokens).'),
        requireExpiry: z
          .boolean()
          .default(true)
          .describe('Refuse tokens without an `exp` claim (a token that never expires stays usable forever once leaked).'),
      })
      .strict()
      .optional()
      .describe('JWT bearer tokens from an OAuth authorization server.'),
    authorizationServers: z
      .array(z.url())
      .default([])
      .describe('Issuer URLs listed in the protected resource metadata (RFC 9728), for clients that obtain tokens themselves.'),
    resource: z
      .url()
      .optional()
      .describe("The resource identifier in the metadata document (default: this endpoint's URL as the client reached it)."),
    allowUnauthenticated: z
      .boolean()
      .default(false)
      .describe('Serve a non-loopback address without authentication (something in front authenticates).'),
    failuresPerAddress: z
      .number()
      .int()
      .positive()
      .default(20)
      .describe(
        'Failed authentication attempts one client address may make per minute; ' +
          'beyond it 429 with Retry-After, before any token is checked.',
      ),
  })
  .strict()
  .describe('Who may connect. Off unless tokens or jwt are set; required when listening on a non-loopback address.');

export const replicasSchema = z
  .object({
    id: z
      .string()
      .regex(/^[A-Za-z0-9_.:-]{1,64}$/, 'letters, digits, "_", ".", ":" and "-", at most 64')
      .optional()
      .describe("This replica's name in session tokens and messages (e.g. ${HOSTNAME}). Default: the host name and process id."),
    secret: z
      .string()
      .min(32, 'at least 32 characters (e.g. openssl rand -base64 32)')
      .optional()
      .describe(
        'Secret shared by every replica (e.g. ${MCP_PROXY_SECRET}): seals session ids and requestState, ' +
          'so any replica serves any client, and the client address of a request one replica ' +
          'forwards to another. Unset: a random key per process; tokens then die with it.',
      ),
    previousSecrets: z
      .array(z.string().min(32))
      .default([])
      .describe(
        'Secrets that still open tokens sealed before a rotation (never used to seal). Drop them once the longest session has ended.',
      ),
    url: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe(
        "This replica's own MCP URL as other replicas reach it (e.g. http://10.0.0.5:8080/mcp): " +
          'a modern retry or task request, or a request of a legacy session whose upstream runs here, ' +
          'that lands elsewhere is forwarded here. Unset: such a request gets a clear error.',
      ),
  })
  .strict()
  .describe('Running several replicas behind a load balancer; they share only `secret`.');

export const tracingSchema = z
  .object({
    otlpEndpoint: z
      .url({ protocol: /^https?$/ })
      .optional()
      .describe(
        'OTLP/HTTP traces endpoint (e.g. http://collector:4318/v1/traces, or ${MCP_PROXY_OTLP_ENDPOINT}); unset: no spans, no cost.',
      ),
    serviceName: z.string().min(1).default('mcp-negotiate-proxy').describe('service.name of the exported spans.'),
  })
  .strict()
  .describe('OpenTelemetry spans for each request, its upstream call and each transformer step.');

/** A section that may be left out: then every one of its fields takes its own default. */
function withDefaults<T extends z.ZodObject>(schema: T) {
  const defaults: z.output<T> = schema.parse({});
  return schema.default(defaults as never); // zod cannot check a generic default; parse({}) is one by construction
}

export const configSchema = z
  .object({
    upstream: withDefaults(upstreamSchema),
    listen: withDefaults(listenSchema),
    timeouts: withDefaults(timeoutsSchema),
    contentNegotiation: withDefaults(negotiationSchema),
    modern: modernSchema.default(MODERN_DEFAULTS),
    replicas: withDefaults(replicasSchema),
    tracing: withDefaults(tracingSchema),
    auth: withDefaults(authSchema),
    serverVariants: withDefaults(serverVariantsSchema).describe('Server variants (SEP-2053): ranked views of the upstream.'),
    profiles: profilesSchema,
    logLevel: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info')
      .describe('Log level (logs always go to stderr).'),
    logFormat: z
      .enum(['json', 'pretty'])
      .default('json')
      .describe('json: one JSON object per line (for log collectors); pretty: coloured lines for humans.'),
  })
  .strict()
  .superRefine((config, ctx) => {
    const problems = profileProblems(config.profiles, {
      listenPath: config.listen.path,
      variantIds: config.serverVariants.variants.map((v) => v.id),
    });
    for (const [path, message] of problems) ctx.addIssue({ code: 'custom', path, message });
  });

export type Config = z.infer<typeof configSchema>;
export type UpstreamConfig = z.infer<typeof upstreamSchema>;

/** The JSON Schema editors use to complete and check config files. */
export function configJsonSchema(): Record<string, unknown> {
  return {
    title: 'mcp-negotiate-proxy configuration',
    ...z.toJSONSchema(configSchema, { io: 'input' }),
  };
}

/**
 * Concurrent legacy sessions per client: configured, or what suits the upstream where clients are told apart
 * (loopback without authentication: src/fronts/http/limit-defaults.ts).
 */
export function clientSessions(config: Config): number {
  const { upstream } = config;
  const configured = config.listen.perClient.sessions;
  if (configured !== undefined) return configured;
  const isolatedProcesses = !upstream.url && upstream.sessions === 'isolated';
  return isolatedProcesses ? Math.max(1, Math.floor(upstream.maxProcesses / 2)) : DEFAULT_CLIENT_SESSIONS;
}
