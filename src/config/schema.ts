/**
 * The configuration, as one zod schema: the YAML file, the CLI flags and the MCP_PROXY_*
 * environment all end up here. Defaults live in the schema, so `parseConfig({})` is the
 * zero-config product. The JSON Schema in config/config.schema.json is generated from this.
 * Each section has its own file (schema-<section>.ts); this one composes them.
 */
import { z } from 'zod';
import { serverVariantsSchema } from '../extensions/server-variants/variants.js';
import { authSchema } from './schema-auth.js';
import { listenSchema } from './schema-listen.js';
import { MODERN_DEFAULTS, modernSchema } from './schema-modern.js';
import { negotiationSchema } from './schema-negotiation.js';
import { profileProblems, profilesSchema } from './schema-profiles.js';
import { replicasSchema } from './schema-replicas.js';
import { timeoutsSchema } from './schema-timeouts.js';
import { tracingSchema } from './schema-tracing.js';
import { upstreamSchema } from './schema-upstream.js';
import { upstreamsSchema } from './schema-upstreams.js';

/** A section that may be left out: then every one of its fields takes its own default. */
function withDefaults<T extends z.ZodObject>(schema: T) {
  const defaults: z.output<T> = schema.parse({});
  return schema.default(defaults as never); // zod cannot check a generic default; parse({}) is one by construction
}

export const configSchema = z
  .object({
    upstream: withDefaults(upstreamSchema),
    upstreams: upstreamsSchema,
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
    if (config.upstreams && (config.upstream.url || config.upstream.command))
      ctx.addIssue({
        code: 'custom',
        path: ['upstreams'],
        message: 'set either `upstreams` (several servers) or `upstream.url`/`upstream.command` (one), not both',
      });
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
