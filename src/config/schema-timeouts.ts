/** The `timeouts` section of the configuration: upstream requests, initialize, HTTP session lifetimes and stopping a stdio upstream. */
import { z } from 'zod';

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
