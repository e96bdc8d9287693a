/** The `modern` section of the configuration: the 2026-07-28 era, its pooled upstream sessions, input rounds, cache hints and tasks. */
import { z } from 'zod';

const cacheHint = z
  .object({
    ttlMs: z.number().int().min(0).describe('How long a client may reuse the result (0: always stale).'),
    cacheScope: z
      .enum(['private', 'public'])
      .describe('public: shareable across authorization contexts (shared gateways may cache it); private: only within one.'),
  })
  .strict();

export const MODERN_DEFAULTS = {
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
              'is answered with a task (0: every one); one that finishes or asks for input sooner is answered as usual. A tool ' +
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
